"""Backups (docs/operations.md, "Backups"): a copy of the database restored together with the key files verifies with
scripts/audit --heads; a copy of the database alone cannot give a table with a shoe in play."""

from __future__ import annotations

import shutil
import sqlite3
from contextlib import closing
from pathlib import Path
from typing import Any

import pytest

from service.application import TablesService
from service.atrest import KEY_FILE as CIPHER_KEY_FILE
from service.config import ConfigError, load
from service.seeds import KEY_FILE as SEED_KEY_FILE
from service.signing import KEY_FILE, KEYRING_FILE
from tests.served import Played, copy_store, row_of, run, serving, sqlite_env

BACKED_UP = (CIPHER_KEY_FILE, SEED_KEY_FILE, KEY_FILE, KEYRING_FILE)


def backed_up(db: Path, folder: Path) -> Path:
    """What docs/operations.md, "Backups" says to keep: the database (SQLite's online backup) and the data folder's keys."""
    folder.mkdir()
    copy_store(db, folder)
    return folder


def test_a_database_restored_with_its_key_files_verifies_against_the_heads_saved_before(
    played: Played, store: Path, tmp_path: Path, capsys: Any
) -> None:
    heads = tmp_path / "heads.jsonl"
    with serving(store) as base:
        saved = run(capsys, base, "--all", "--save-heads", str(heads))
    assert saved[0] == 0, saved[1] + saved[2]
    backup = backed_up(store, tmp_path / "backup")
    restored = tmp_path / "restored"
    shutil.copytree(backup, restored)  # the restore: database and keys back in a data folder

    with serving(restored / store.name) as base:
        code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert code == 0, out + err
    for table_id in (played.chemin_de_fer, played.lottery):
        assert (row_of(out, table_id)["heads"], row_of(out, table_id)["result"]) == ("ok", "ok")


def test_a_copy_of_the_database_alone_cannot_give_a_table_whose_shoe_is_in_play(
    played: Played, store: Path, tmp_path: Path
) -> None:
    alone = tmp_path / "alone"
    alone.mkdir()
    with closing(sqlite3.connect(store)) as source, closing(sqlite3.connect(alone / store.name)) as target:
        source.backup(target)
    assert not any((alone / name).exists() for name in BACKED_UP)
    # Its events are encrypted: without the cipher key file nothing is read at all.
    with pytest.raises(ConfigError, match=r"encrypted and the cipher key file .*cipher-key does not exist"):
        TablesService(load(sqlite_env(alone / store.name)))
    # With the cipher key but not the seed keys, a shoe in play still does not open.
    shutil.copy(store.parent / CIPHER_KEY_FILE, alone / CIPHER_KEY_FILE)
    service = TablesService(load(sqlite_env(alone / store.name)))
    try:
        with pytest.raises(Exception, match=r"cannot be read \(SeedKeyError\)"):
            service.current_state(played.chemin_de_fer)  # its second shoe is still being dealt
    finally:
        service.close()
