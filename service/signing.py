"""Signed receipts: the server's Ed25519 key, the keyring of every key it has signed with, and signing.

A receipt names a table's head (table id, version, digest, the head event's timestamp) and is signed
over its canonical JSON, so a client that kept one can later prove what the service told it, whoever
holds the database since.

The key is the PEM file named by ZAMETANO_SIGNING_KEY_FILE, or else ``signing-key.pem`` in the data
directory, made on first start. ``keyring.json`` in the data directory records every key the service
ever signed with and when (the body of GET /keys): starting with a key it has not seen closes the
interval of the key before, which stays listed so that receipts signed with it keep verifying.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
import json
from collections.abc import Callable
from datetime import datetime, timezone
from pathlib import Path
from typing import Any

from cryptography.exceptions import UnsupportedAlgorithm
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from domain.chain import canonical_json, format_timestamp
from service.config import ConfigError, Settings
from service.files import locked, read_secret, write_private

ALGORITHM = "Ed25519"
KEY_FILE = "signing-key.pem"
KEYRING_FILE = "keyring.json"
ENTRY_FIELDS = ("key_id", "algorithm", "public_key", "not_before", "not_after")

Clock = Callable[[], datetime]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def b64url(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def key_id_of(public_raw: bytes) -> str:
    return hashlib.sha256(public_raw).hexdigest()[:16]


def public_raw(key: Ed25519PrivateKey) -> bytes:
    return key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def key_entry(key: Ed25519PrivateKey, not_before: str | None, not_after: str | None = None) -> dict[str, Any]:
    raw = public_raw(key)
    return {
        "key_id": key_id_of(raw),
        "algorithm": ALGORITHM,
        "public_key": b64url(raw),
        "not_before": not_before,
        "not_after": not_after,
    }


class Signer:
    """Signs receipts with the current key; lists it first, then every key retired before it."""

    def __init__(self, key: Ed25519PrivateKey, keyring: list[dict[str, Any]], *, key_file: Path | None = None,
                 made: bool = False, retired: tuple[str, ...] = ()) -> None:
        self._key = key
        self.key_id = key_id_of(public_raw(key))
        if not keyring or keyring[0]["key_id"] != self.key_id:
            raise ValueError("the keyring must list the signing key first")
        self._keyring = [dict(entry) for entry in keyring]
        self.key_file = key_file  # None: a key that lives in memory only
        self.made = made  # the key file was made by this start
        self.retired = retired  # keys this start retired

    @classmethod
    def in_memory(cls, now: Clock = utc_now) -> "Signer":
        """A key for an in-memory event store, gone with the process like the events it signs for."""
        key = Ed25519PrivateKey.generate()
        return cls(key, [key_entry(key, format_timestamp(now()))])

    def sign_receipt(self, table_id: str, version: int, digest: str, timestamp: str) -> dict[str, Any]:
        receipt: dict[str, Any] = {
            "table_id": table_id,
            "version": version,
            "digest": digest,
            "timestamp": timestamp,
            "key_id": self.key_id,
        }
        # Ed25519 is deterministic: the same head signed with the same key gives the same bytes.
        receipt["signature"] = b64url(self._key.sign(canonical_json(receipt).encode("utf-8")))
        return receipt

    def keys(self) -> list[dict[str, Any]]:
        return [dict(entry) for entry in self._keyring]

    def describe(self) -> str:
        """One line for the start-up log."""
        where = f"{self.key_file}" if self.key_file else "in memory, new at every start"
        line = f"receipts signed with key {self.key_id} ({where}"
        line += ", made now)" if self.made else ")"
        if self.retired:
            keys = "key " if len(self.retired) == 1 else "keys "
            line += f"; retired {keys}{', '.join(self.retired)} {'stays' if len(self.retired) == 1 else 'stay'} listed at GET /keys"
        return line


def load_signer(settings: Settings, now: Clock = utc_now) -> Signer:
    """The signer the settings name; every problem with the key or keyring is one ConfigError line."""
    data_dir = Path(settings.data_dir)
    if settings.signing_key_file:
        key_file = Path(settings.signing_key_file)
        key, made = read_key(key_file, f"ZAMETANO_SIGNING_KEY_FILE {key_file}", follow=True), False
    elif settings.module == "eventsourcing.popo":
        return Signer.in_memory(now)
    else:
        key_file = data_dir / KEY_FILE
        key, made = read_or_make_key(key_file)
    keyring, retired = _record_in_keyring(data_dir / KEYRING_FILE, key, key_file, now)
    return Signer(key, keyring, key_file=key_file, made=made, retired=retired)


def read_key(path: Path, what: str, *, follow: bool = False) -> Ed25519PrivateKey:
    """The key in ``path``, which must be this user's own file, mode 0600 (service/files.py)."""
    data = read_secret(path, what, follow=follow)
    try:
        key = serialization.load_pem_private_key(data, password=None)
    except TypeError:
        raise ConfigError(f"{what} is protected by a password; the service needs the key unencrypted (mode 0600)") from None
    except (ValueError, UnsupportedAlgorithm):
        raise ConfigError(
            f"{what} is not a PEM private key; make one with: openssl genpkey -algorithm ed25519 -out FILE"
        ) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise ConfigError(f"{what} is not an Ed25519 key; the service signs with Ed25519 (openssl genpkey -algorithm ed25519)")
    return key


def read_or_make_key(path: Path, what: str | None = None) -> tuple[Ed25519PrivateKey, bool]:
    """The Ed25519 key in ``path``, made there (mode 0600) if there is none yet; whether this call made it."""
    what = what or f"the signing key {path}"
    if path.exists():
        return read_key(path, what), False
    with locked(path.parent, what):
        # Another process may have made it while this one waited for the lock: then it is that key.
        if path.exists():
            return read_key(path, what), False
        key = Ed25519PrivateKey.generate()
        pem = key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption()
        )
        write_private(path, pem, what)
        return key, True


def _record_in_keyring(
    path: Path, key: Ed25519PrivateKey, key_file: Path, now: Clock
) -> tuple[list[dict[str, Any]], tuple[str, ...]]:
    """The keyring with ``key`` current, recorded first if it is new: the usual start reads only."""
    kid = key_id_of(public_raw(key))
    entries = _read_keyring(path)
    if _is_current(entries, kid, key_file, path):
        return _ordered(entries, kid), ()
    with locked(path.parent, f"the keyring {path}"):
        entries = _read_keyring(path)
        if _is_current(entries, kid, key_file, path):
            return _ordered(entries, kid), ()
        stamp = format_timestamp(now())
        retired = []
        for entry in entries:
            if entry["not_after"] is None:
                entry["not_after"] = stamp
                retired.append(entry["key_id"])
        entries.append(key_entry(key, stamp))
        entries = _ordered(entries, kid)
        text = json.dumps({"keys": entries}, indent=2) + "\n"
        write_private(path, text.encode("utf-8"), f"the keyring {path}")
        return entries, tuple(retired)


def _is_current(entries: list[dict[str, Any]], kid: str, key_file: Path, keyring: Path) -> bool:
    for entry in entries:
        if entry["key_id"] == kid:
            if entry["not_after"] is not None:
                raise ConfigError(
                    f"the signing key {key_file} (key id {kid}) was retired at {entry['not_after']} "
                    f"(keyring {keyring}); configure the current key, or a new one"
                )
            return True
    return False


def _ordered(entries: list[dict[str, Any]], kid: str) -> list[dict[str, Any]]:
    """The current key first, then the others, the most recently retired first."""
    current = [e for e in entries if e["key_id"] == kid]
    others = sorted((e for e in entries if e["key_id"] != kid), key=lambda e: e["not_after"] or "", reverse=True)
    return current + others


def _read_keyring(path: Path) -> list[dict[str, Any]]:
    try:
        text = path.read_text(encoding="utf-8")
    except FileNotFoundError:
        return []
    except OSError as exc:
        raise ConfigError(f"the keyring {path} cannot be read: {exc.strerror or exc}") from None
    try:
        body = json.loads(text)
        keys = body["keys"]
        if not isinstance(keys, list):
            raise ValueError("'keys' is not a list")
        return [_checked_entry(entry) for entry in keys]
    except (ValueError, KeyError, TypeError) as exc:
        raise ConfigError(f"the keyring {path} is damaged ({exc}); restore it from a backup") from None


def _checked_entry(entry: Any) -> dict[str, Any]:
    if not isinstance(entry, dict) or entry.get("algorithm") != ALGORITHM:
        raise ValueError(f"an entry is not an {ALGORITHM} key")
    text = entry.get("public_key")
    try:
        raw = base64.urlsafe_b64decode(str(text) + "=" * (-len(str(text)) % 4))
    except (binascii.Error, ValueError):
        raw = b""
    if len(raw) != 32:
        raise ValueError(f"the public key {text!r} is not 32 bytes of base64url")
    if entry.get("key_id") != key_id_of(raw):
        raise ValueError(f"key id {entry.get('key_id')!r} does not match its public key")
    for name in ("not_before", "not_after"):
        if entry.get(name) is not None and not isinstance(entry[name], str):
            raise ValueError(f"{name} of key {entry['key_id']} is not a timestamp")
    return {name: entry.get(name) for name in ENTRY_FIELDS}
