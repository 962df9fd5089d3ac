"""Sealed seeds: no stored row holds a seed, or a shoe's order, that the database alone yields.

The domain records a shuffle's seed in clear in its ShoeShuffled event and keeps each deck's seed and
dealt order in its state, as a pure domain must. At the storage boundary, the mapper seals them: a
ShoeShuffled's ``seed`` and a snapshot's ``decks`` are stored as ``sealed:v1:<key id>:<base64url>``,
AES-256-GCM under a seed key bound to the table's id, and opened again when they are read. The seed keys
live outside the database, in a file of their own (ZAMETANO_SEED_KEY_FILE, else ``seed-keys.json`` in the
data folder, made on first start): the first key seals, every key listed opens, so a rotation (a new key
put first) never stops an old log replaying. The chain digest never covered the seed (domain/chain.py), so
sealing changes no digest; a stored seed in clear (logs written before sealing) is read as it is, and
/verify says so.
"""

from __future__ import annotations

import base64
import binascii
import functools
import hashlib
import json
import secrets
from pathlib import Path
from typing import Any

from cryptography.exceptions import InvalidTag
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from eventsourcing.domain import CanSnapshotAggregate
from eventsourcing.persistence import Mapper, StoredEvent

from domain.events import ShoeShuffled
from service.config import ConfigError, Settings
from service.files import locked, read_secret, write_private

KEY_FILE = "seed-keys.json"
PREFIX = "sealed:v1:"
KEY_BYTES = 32
NONCE_BYTES = 12
# Set on a ShoeShuffled read from the store: whether its seed was stored sealed (outside dataclass fields,
# so neither the chain nor the events API ever sees it).
STORED_SEALED = "seed_stored_sealed"


class SeedKeyError(ValueError):
    """A sealed value that none of the seed keys opens."""


def key_id_of(key: bytes) -> str:
    return hashlib.sha256(b"zametano-seed-key:" + key).hexdigest()[:16]


def _b64(raw: bytes) -> str:
    return base64.urlsafe_b64encode(raw).rstrip(b"=").decode("ascii")


def _unb64(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


class SeedKeys:
    """The seed keys: the first seals, every one opens what it sealed."""

    def __init__(self, keys: list[bytes], key_file: Path | None = None, made: bool = False) -> None:
        if not keys:
            raise ValueError("at least one seed key is needed")
        self.current = key_id_of(keys[0])
        self._keys = {key_id_of(k): AESGCM(k) for k in keys}
        self.key_file = key_file  # None: keys in memory only
        self.made = made

    @classmethod
    def in_memory(cls) -> "SeedKeys":
        """A key for an in-memory event store, gone with the process like the events it seals."""
        return cls([AESGCM.generate_key(bit_length=8 * KEY_BYTES)])

    def seal(self, text: str, bound_to: str) -> str:
        nonce = secrets.token_bytes(NONCE_BYTES)
        sealed = self._keys[self.current].encrypt(nonce, text.encode("utf-8"), bound_to.encode("utf-8"))
        return f"{PREFIX}{self.current}:{_b64(nonce + sealed)}"

    def open(self, text: str, bound_to: str) -> str:
        key_id, _, body = text.removeprefix(PREFIX).partition(":")
        if key_id not in self._keys:
            raise SeedKeyError(f"sealed with seed key {key_id}, which the seed key file does not hold")
        try:
            raw = _unb64(body)
            return self._keys[key_id].decrypt(raw[:NONCE_BYTES], raw[NONCE_BYTES:], bound_to.encode("utf-8")).decode()
        except (InvalidTag, binascii.Error, ValueError):
            raise SeedKeyError(f"a value sealed with seed key {key_id} does not open: altered or moved") from None

    def describe(self) -> str:
        """One line for the start-up log."""
        where = f"{self.key_file}" if self.key_file else "in memory, new at every start"
        return f"seeds sealed with seed key {self.current} ({where}{', made now' if self.made else ''})"


def is_sealed(value: Any) -> bool:
    return isinstance(value, str) and value.startswith(PREFIX)


class SealingMapper(Mapper):  # type: ignore[type-arg]
    """eventsourcing's mapper, sealing a ShoeShuffled's seed and a snapshot's decks on the way to the store
    and opening them on the way back (under the store's cipher and compressor, when there are any)."""

    def __init__(self, mapper: Mapper, seed_keys: SeedKeys) -> None:  # type: ignore[type-arg]
        super().__init__(mapper.transcoder, compressor=mapper.compressor, cipher=mapper.cipher)
        self.seed_keys = seed_keys

    def to_stored_event(self, domain_event: Any) -> StoredEvent:
        kind = _kind(type(domain_event))
        if kind is None:
            return super().to_stored_event(domain_event)
        state = dict(vars(domain_event))
        bound = f"{state['originator_id']}"
        if kind is ShoeShuffled:
            state.pop(STORED_SEALED, None)
            if not is_sealed(state["seed"]):
                state["seed"] = self.seed_keys.seal(state["seed"], f"seed:{bound}")
        elif isinstance(state["state"].get("decks"), dict):
            decks = json.dumps(state["state"]["decks"], separators=(",", ":"))
            state["state"] = {**state["state"], "decks": self.seed_keys.seal(decks, f"decks:{bound}")}
        else:
            return super().to_stored_event(domain_event)
        sealed = object.__new__(type(domain_event))
        object.__setattr__(sealed, "__dict__", state)
        return super().to_stored_event(sealed)

    def to_domain_event(self, stored_event: StoredEvent) -> Any:
        event = super().to_domain_event(stored_event)
        kind = _kind(type(event))
        if kind is None:
            return event
        state = vars(event)
        bound = f"{state['originator_id']}"
        if kind is ShoeShuffled:
            sealed = is_sealed(state["seed"])
            state[STORED_SEALED] = sealed
            if sealed:
                state["seed"] = self._open(stored_event, state["seed"], f"seed:{bound}")
        elif is_sealed(state["state"].get("decks")):
            state["state"]["decks"] = json.loads(self._open(stored_event, state["state"]["decks"], f"decks:{bound}"))
        return event

    def _open(self, stored_event: StoredEvent, text: str, bound_to: str) -> str:
        try:
            return self.seed_keys.open(text, bound_to)
        except SeedKeyError as exc:
            raise SeedKeyError(f"version {stored_event.originator_version} of {stored_event.originator_id}: {exc}") from None


@functools.cache  # one entry per event class: the library's snapshot class checks as a protocol, 5 us a time
def _kind(cls: type) -> type | None:
    """What the mapper seals in events of ``cls``: a shuffle's seed (ShoeShuffled), a snapshot's decks
    (CanSnapshotAggregate), or nothing (None)."""
    if issubclass(cls, ShoeShuffled):
        return ShoeShuffled
    if issubclass(cls, CanSnapshotAggregate):
        return CanSnapshotAggregate
    return None


def load_seed_keys(settings: Settings) -> SeedKeys:
    """The seed keys the settings name; every problem with the file is one ConfigError line."""
    if settings.seed_key_file:
        path = Path(settings.seed_key_file)
        return SeedKeys(read_keys(path, f"ZAMETANO_SEED_KEY_FILE {path}", follow=True), path)
    if settings.module == "eventsourcing.popo":
        return SeedKeys.in_memory()
    path = Path(settings.data_dir) / KEY_FILE
    what = f"the seed key file {path}"
    if path.exists():
        return SeedKeys(read_keys(path, what), path)
    with locked(path.parent, what):
        if path.exists():  # made by another process while this one waited for the lock
            return SeedKeys(read_keys(path, what), path)
        key = AESGCM.generate_key(bit_length=8 * KEY_BYTES)
        write_private(path, keys_text([key]), what)
        return SeedKeys([key], path, made=True)


def keys_text(keys: list[bytes]) -> bytes:
    """A seed key file's text: the keys, the one that seals first."""
    body = {"keys": [{"key_id": key_id_of(k), "key": _b64(k)} for k in keys]}
    return (json.dumps(body, indent=2) + "\n").encode("ascii")


def read_keys(path: Path, what: str, *, follow: bool = False) -> list[bytes]:
    data = read_secret(path, what, follow=follow)
    try:
        entries = json.loads(data)["keys"]
        keys = [_unb64(entry["key"]) for entry in entries]
        if not keys or any(len(k) != KEY_BYTES for k in keys):
            raise ValueError(f"each key is {KEY_BYTES} bytes of base64url, and there is at least one")
        if any(entry.get("key_id") != key_id_of(k) for entry, k in zip(entries, keys)):
            raise ValueError("a key_id does not match its key")
        return keys
    except (ValueError, KeyError, TypeError, AttributeError, binascii.Error) as exc:
        raise ConfigError(f"{what} is not a seed key file ({exc}); restore it from a backup") from None


def rotate(path: Path) -> str:
    """Puts a new key first in the seed key file ``path``, keeping every other to open what it sealed;
    returns the new key's id (scripts/seed-key rotate)."""
    with locked(path.parent, f"the seed key file {path}"):
        keys = read_keys(path, f"the seed key file {path}", follow=True)
        new = AESGCM.generate_key(bit_length=8 * KEY_BYTES)
        write_private(path.resolve(), keys_text([new, *keys]), f"the seed key file {path}")
    return key_id_of(new)
