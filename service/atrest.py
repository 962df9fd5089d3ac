"""Encryption at rest: the cipher a store's events, snapshots and read model are written and read with.

A new store (SQLite or PostgreSQL) is encrypted with the eventsourcing library's cipher (AES-GCM, its
``CIPHER_TOPIC``/``CIPHER_KEY`` machinery, CIPHER_TOPIC's class over the cryptography package) under a key
kept outside the database, in a file of its own
(ZAMETANO_CIPHER_KEY_FILE, else ``cipher-key`` in the data folder, made on first start, mode 0600).
``CIPHER_KEY`` given in the environment overrides it. A store made before this was the default, whose
events lie in clear, is read and written as it is, in clear, and says so at start; scripts/encrypt-store
copies it into an encrypted one. The store's newest events tell which: none (a new store), readable
without a cipher (in clear), or neither (encrypted, and so the key file must be there). An in-memory store
is not at rest and is not encrypted.
"""

from __future__ import annotations

import base64
import binascii
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.utils import Environment, resolve_topic

from service.config import ConfigError, Settings
from service.files import locked, read_secret, write_private

KEY_FILE = "cipher-key"
KEY_BYTES = 32
# The library's AES-GCM cipher over the cryptography package: the same stored form (nonce, tag, ciphertext)
# as its default eventsourcing.cipher:AESCipher over pycryptodome, at about 5 us an event instead of about
# 200 (docs/benchmarks.md). Also the class used for CIPHER_KEY when CIPHER_TOPIC names none.
CIPHER_TOPIC = "eventsourcing.cryptography:AESCipher"


@dataclass(frozen=True)
class AtRest:
    """How this service's store is kept: ``how`` is ``key file``, ``CIPHER_KEY``, ``in clear`` (a store made
    before encryption by default) or ``in memory``."""

    how: str
    key_file: Path | None = None
    made: bool = False

    @property
    def encrypted(self) -> bool:
        return self.how in ("key file", "CIPHER_KEY")

    def describe(self) -> str:
        """One line for the start-up log."""
        if self.how == "key file":
            return f"events encrypted (AES-GCM) with the cipher key {self.key_file}{', made now' if self.made else ''}"
        if self.how == "CIPHER_KEY":
            return "events encrypted with CIPHER_KEY"
        if self.how == "in clear":
            return ("events NOT encrypted: this store was made before encryption by default and is kept in clear; "
                    "scripts/encrypt-store copies it into an encrypted one (README \"Encrypting an old store\")")
        return "events in memory, not encrypted"

    def status(self) -> dict[str, Any]:
        """What /readyz says of it."""
        return {"encrypted": self.encrypted, "key": {"key file": "cipher key file", "CIPHER_KEY": "CIPHER_KEY"}.get(self.how)}


def stored_in_clear(app: Any) -> bool | None:
    """None for a store without events; True when one of its newest events reads without a cipher (JSON,
    after the store's compressor), else False."""
    from service.health import newest_notifications  # not at import: start-up reads key files before metrics exist

    notes = newest_notifications(app.recorder)
    if not notes:
        return None
    compressor = app.mapper.compressor
    for note in notes:
        try:
            state = compressor.decompress(note.state) if compressor else note.state
            app.mapper.transcoder.decode(state)
            return True
        except Exception:  # noqa: BLE001, S112 - ciphertext fails in many ways; any of them means "not in clear"
            continue
    return False


def settle(app: Any, settings: Settings | None) -> AtRest:
    """Chooses the cipher of ``app`` (its mapper's, shared by events, snapshots and the read model): CIPHER_KEY
    when the library already made one from it; none in memory or for a store in clear; else the key file's."""
    if app.mapper.cipher is not None:
        return AtRest("CIPHER_KEY")
    if settings is None or settings.module == "eventsourcing.popo":
        return AtRest("in memory")
    clear = stored_in_clear(app)
    if clear:
        return AtRest("in clear")
    key, path, made = load_key(settings, may_make=clear is None)
    app.mapper.cipher = cipher_of(key)
    return AtRest("key file", path, made)


def cipher_of(key: str) -> Any:
    """The library's cipher (CIPHER_TOPIC's class, AES-GCM) under ``key``, as it makes one from CIPHER_KEY."""
    return resolve_topic(CIPHER_TOPIC)(Environment(env={"CIPHER_KEY": key}))


def key_path(settings: Settings) -> tuple[Path, str, bool]:
    """The key file, how errors name it, and whether a symbolic link is followed (a file a setting names)."""
    if settings.cipher_key_file:
        path = Path(settings.cipher_key_file)
        return path, f"ZAMETANO_CIPHER_KEY_FILE {path}", True
    path = Path(settings.data_dir) / KEY_FILE
    return path, f"the cipher key file {path}", False


def load_key(settings: Settings, *, may_make: bool) -> tuple[str, Path, bool]:
    """The key (base64, as CIPHER_KEY takes it), its file, and whether it was made now. Made only for a store
    without events (``may_make``); an encrypted store whose key file is missing stops start-up."""
    path, what, follow = key_path(settings)
    if path.exists() or path.is_symlink():
        return read_key(path, what, follow), path, False
    if not may_make:
        raise ConfigError(
            f"The stored events are encrypted and {what} does not exist: restore it from a backup "
            "(or set CIPHER_KEY to the key they were written with)"
        )
    with locked(path.parent, what):
        if path.exists():  # made by another process while this one waited for the lock
            return read_key(path, what, follow), path, False
        key = base64.b64encode(AESGCM.generate_key(bit_length=8 * KEY_BYTES)).decode("ascii")
        write_private(path, (key + "\n").encode("ascii"), what)
        return key, path, True


def read_key(path: Path, what: str, follow: bool) -> str:
    text = read_secret(path, what, follow=follow).decode("ascii", "replace").strip()
    try:
        if len(base64.b64decode(text, validate=True)) != KEY_BYTES:
            raise ValueError(text)
    except (ValueError, binascii.Error):
        raise ConfigError(f"{what} is not a cipher key ({KEY_BYTES} bytes in base64 on one line); restore it from a backup") from None
    return text
