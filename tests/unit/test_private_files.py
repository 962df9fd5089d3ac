"""Private files (service/files.py): the data folder 0700 and every file in it 0600 under any umask, keys
written through a temporary file no one else can have placed, and key files others may read refused."""

from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service import files
from service.application import TablesService
from service.config import ConfigError, load
from service.signing import KEY_FILE, load_signer
from tests.helpers import Seeds, StepClock, refused_start


def mode(path: Path) -> int:
    return stat.S_IMODE(path.stat().st_mode)


@pytest.fixture
def umask_022():
    previous = os.umask(0o022)
    yield
    os.umask(previous)


def played(data_dir: Path) -> TablesService:
    """A service on SQLite in ``data_dir`` that has written a table (still open: its -wal and -shm exist)."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(data_dir)}
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
    service.execute(table_id, "draw_seats", "anna", {})
    return service


def test_under_umask_022_the_data_folder_is_0700_and_every_file_in_it_0600(tmp_path, umask_022):
    data_dir = tmp_path / "var"
    service = played(data_dir)
    assert mode(data_dir) == 0o700
    names = sorted(p.name for p in data_dir.iterdir())
    assert {"zametano.sqlite", "zametano.sqlite-wal", "zametano.sqlite-shm", KEY_FILE, "keyring.json"} <= set(names)
    assert {name: mode(data_dir / name) for name in names} == {name: 0o600 for name in names}
    service.close()


def test_a_data_folder_and_store_left_open_by_an_earlier_version_are_narrowed_at_start(tmp_path, umask_022):
    data_dir = tmp_path / "var"
    data_dir.mkdir(mode=0o755)
    data_dir.chmod(0o755)
    for suffix in ("", "-wal", "-shm"):
        (data_dir / f"zametano.sqlite{suffix}").touch(mode=0o644)
    service = played(data_dir)
    assert mode(data_dir) == 0o700
    assert {p.name: mode(p) for p in data_dir.iterdir() if p.name.startswith("zametano")} == {
        f"zametano.sqlite{s}": 0o600 for s in ("", "-wal", "-shm")}
    service.close()


def pem(path: Path, file_mode: int) -> Path:
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
                                       serialization.NoEncryption()))
    path.chmod(file_mode)
    return path


@pytest.mark.parametrize("file_mode", [0o644, 0o640, 0o604, 0o602, 0o620])
def test_a_key_others_may_read_or_write_is_refused_naming_the_file_and_its_mode(tmp_path, file_mode):
    key_file = pem(tmp_path / "k.pem", file_mode)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path / "var"),
           "ZAMETANO_SIGNING_KEY_FILE": str(key_file)}
    with pytest.raises(ConfigError) as caught:
        load_signer(load(env))
    assert str(caught.value) == (f"ZAMETANO_SIGNING_KEY_FILE {key_file} has mode {file_mode:04o}: others may read or "
                                 "write it; make it 0600 (chmod 600 FILE)")


def test_the_default_key_made_readable_by_others_afterwards_is_refused(tmp_path):
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path)})
    load_signer(settings)
    (tmp_path / KEY_FILE).chmod(0o644)
    with pytest.raises(ConfigError, match=f"the signing key {tmp_path / KEY_FILE} has mode 0644"):
        load_signer(settings)


def test_a_key_of_another_user_is_refused(tmp_path, monkeypatch):
    key_file = pem(tmp_path / "k.pem", 0o600)
    monkeypatch.setattr(os, "geteuid", lambda: os.stat(key_file).st_uid + 1)
    with pytest.raises(ConfigError, match=r"k\.pem \(mode 0600\) belongs to user \d+, not to this user"):
        files.read_secret(key_file, str(key_file))


def test_a_default_key_that_is_a_symbolic_link_is_not_read_through(tmp_path):
    elsewhere = pem(tmp_path / "elsewhere.pem", 0o600)
    (tmp_path / "var").mkdir()
    (tmp_path / "var" / KEY_FILE).symlink_to(elsewhere)
    with pytest.raises(ConfigError, match="cannot be read"):
        load_signer(load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(tmp_path / "var")}))


def test_a_key_is_written_through_a_temporary_name_no_one_can_guess_or_have_placed(tmp_path, monkeypatch):
    opened: list[tuple[str, int]] = []
    real_open = os.open

    def spying(path, flags, *args):  # type: ignore[no-untyped-def]
        opened.append((str(path), flags))
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", spying)
    for n in range(2):
        files.write_private(tmp_path / "key", b"secret %d" % n, "the key")
    temporaries = [(p, f) for p, f in opened if p.endswith(".tmp")]
    assert len(temporaries) == 2 and temporaries[0][0] != temporaries[1][0]
    needed = os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    assert all(f & needed == needed for _, f in temporaries)
    assert all(len(Path(p).name) >= len(".key..tmp") + 32 for p, _ in temporaries)  # 128 random bits
    assert (tmp_path / "key").read_bytes() == b"secret 1" and mode(tmp_path / "key") == 0o600


def test_a_link_placed_at_the_temporary_name_is_never_written_through(tmp_path, monkeypatch):
    victim = tmp_path / "victim"
    victim.write_text("untouched")
    monkeypatch.setattr(files.secrets, "token_hex", lambda n: "guessed")
    (tmp_path / ".key.guessed.tmp").symlink_to(victim)
    with pytest.raises(ConfigError, match="cannot write the key"):
        files.write_private(tmp_path / "key", b"secret", "the key")
    assert victim.read_text() == "untouched" and not (tmp_path / "key").exists()
    assert (tmp_path / ".key.guessed.tmp").is_symlink()  # not ours: left where it was


def test_a_server_given_a_key_others_may_read_exits_2_with_one_line_naming_it_and_its_mode(tmp_path):
    key_file = pem(tmp_path / "open.pem", 0o644)
    done = refused_start(tmp_path, key_file)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: ZAMETANO_SIGNING_KEY_FILE {key_file} has mode 0644: others may "
                                        "read or write it; make it 0600 (chmod 600 FILE)"]
