"""What start-up checks before it writes anything: the library's settings and the files settings name.

The library reads its variables only when it builds the store, after the server has made its data folder,
its keys and an empty store, and a value it cannot use stops it with a traceback (an OSError for a number,
a ValueError for a switch, a binascii.Error for a key that is not base64, a TopicError for a class it cannot
import). Each is checked here first, so that a wrong value is one line naming the variable and what it
takes (README "Configuration"), before anything is written.
"""

from __future__ import annotations

import base64
import binascii
import os
import re
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from eventsourcing.persistence import ApplicationRecorder, Cipher
from eventsourcing.utils import TopicError, resolve_topic

from service.config import ConfigError

if TYPE_CHECKING:
    from service.config import Settings

# Whole numbers of the library's, each of 0 or more (POSTGRES_PORT and SQLITE_LOCK_TIMEOUT apart).
WHOLE_NUMBERS = ("POSTGRES_POOL_SIZE", "POSTGRES_MAX_OVERFLOW", "POSTGRES_MAX_WAITING",
                 "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT", "POSTGRES_LOCK_TIMEOUT", "SQLITE_LOCK_TIMEOUT",
                 "AGGREGATE_CACHE_MAXSIZE")
# The library's switches, read with its strtobool.
SWITCHES = ("CREATE_TABLE", "POSTGRES_PRE_PING")
SWITCH_WORDS = ("y", "yes", "t", "true", "on", "1", "n", "no", "f", "false", "off", "0")
# Classes named by a topic (module:Class), imported by the library when it builds the store.
TOPICS = ("CIPHER_TOPIC", "COMPRESSOR_TOPIC", "APPLICATION_RECORDER_TOPIC")
# AES-GCM's key sizes in bytes (the library's AESCipher).
CIPHER_KEY_SIZES = (16, 24, 32)
# The first bytes of every SQLite database file.
SQLITE_HEADER = b"SQLite format 3\x00"
SCHEMA_NAME = re.compile(r"[A-Za-z_][A-Za-z0-9_$]{0,62}")


def check_library_settings(persistence: Mapping[str, str]) -> None:
    """ConfigError, naming the variable and what it takes, for the first of the library's settings it could
    not use."""
    for name in WHOLE_NUMBERS:
        value = persistence.get(name, "").strip()
        if value and not value.isdigit():
            raise ConfigError(f"{name} is a whole number (0 or more), or empty for the default, not {value!r}")
    for name in SWITCHES:
        value = persistence.get(name, "").strip()
        if value and value.lower() not in SWITCH_WORDS:
            raise ConfigError(f"{name} is y or n (also yes/no, true/false, on/off, 1/0), not {value!r}")
    check_ports(persistence.get("POSTGRES_PORT", ""))
    timeout = persistence.get("POSTGRES_CONNECT_TIMEOUT", "").strip()
    if timeout and not _positive(timeout):
        raise ConfigError(f"POSTGRES_CONNECT_TIMEOUT is a number of seconds above 0, not {timeout!r}")
    schema = persistence.get("POSTGRES_SCHEMA", "").strip()
    if schema and not SCHEMA_NAME.fullmatch(schema):
        raise ConfigError(f"POSTGRES_SCHEMA is the name of an existing schema (letters, digits, _ and $, not first "
                          f"a digit), not {schema!r}")
    for name in TOPICS:
        check_topic(name, persistence.get(name, "").strip())
    check_cipher_key(persistence.get("CIPHER_KEY", ""))
    if persistence.get("CIPHER_TOPIC", "").strip() and not persistence.get("CIPHER_KEY"):
        raise ConfigError("CIPHER_TOPIC is the class CIPHER_KEY is used with: set CIPHER_KEY too, or leave "
                          "CIPHER_TOPIC unset (the cipher key file's events are read with the default class)")


def _positive(text: str) -> bool:
    try:
        return 0 < float(text) < float("inf")
    except ValueError:
        return False


def check_ports(text: str) -> None:
    """POSTGRES_PORT: one port, or one for each host, comma-separated."""
    for port in filter(None, (part.strip() for part in text.split(","))):
        if not port.isdigit() or not 1 <= int(port) <= 65535:
            raise ConfigError(f"POSTGRES_PORT is a port from 1 to 65535 (or one for each host, comma-separated), "
                              f"not {text!r}")


def check_topic(name: str, topic: str) -> None:
    """A topic that imports, and names what the library will use it as."""
    if not topic:
        return
    try:
        found = resolve_topic(topic)
    except (TopicError, ImportError, ValueError) as exc:
        raise ConfigError(f"{name} names a class (module:Class) or module that cannot be imported: {topic!r} "
                          f"({' '.join(str(exc).split())})") from None
    kind, fits = TOPIC_KINDS[name]
    if not fits(found):
        raise ConfigError(f"{name} names {kind}, and {topic!r} is not one")


def _is_subclass(base: type) -> Callable[[object], bool]:
    return lambda found: isinstance(found, type) and issubclass(found, base)


# What each topic must name, and how to tell.
TOPIC_KINDS: dict[str, tuple[str, Callable[[object], bool]]] = {
    "CIPHER_TOPIC": ("a cipher class (e.g. eventsourcing.cryptography:AESCipher)", _is_subclass(Cipher)),
    "COMPRESSOR_TOPIC": ("a compressor (e.g. zlib), with compress and decompress",
                         lambda found: hasattr(found, "compress") and hasattr(found, "decompress")),
    "APPLICATION_RECORDER_TOPIC": ("an application recorder class (e.g. service.onetrip:OneTripRecorder)",
                                   _is_subclass(ApplicationRecorder)),
}


def check_cipher_key(key: str) -> None:
    """CIPHER_KEY: base64 of 16, 24 or 32 bytes, as AESCipher.create_key makes one. Never quoted back."""
    if not key:
        return
    try:
        size = len(base64.b64decode(key.encode(), validate=True))
    except (binascii.Error, ValueError):
        raise ConfigError("CIPHER_KEY is not base64; make a key with python -c \"from eventsourcing.cipher import "
                          "AESCipher; print(AESCipher.create_key(32))\"") from None
    if size not in CIPHER_KEY_SIZES:
        raise ConfigError(f"CIPHER_KEY is {size} bytes once decoded; an AES key is 16, 24 or 32 bytes (make one with "
                          "python -c \"from eventsourcing.cipher import AESCipher; print(AESCipher.create_key(32))\")")


def check_named_files(settings: Settings) -> None:
    """Reads each key file a setting names, as the service will, before any key, keyring or store is made:
    a file that is missing or unusable stops the start with nothing written. (A cipher key file named but
    not there yet is made for a new store, so only one that exists is read.)"""
    from service import atrest, credentials, seeds, signing

    check_sqlite_folder(settings.persistence, Path(settings.data_dir))
    if settings.signing_key_file:
        path = Path(settings.signing_key_file)
        signing.read_key(path, f"ZAMETANO_SIGNING_KEY_FILE {path}", follow=True)
    if settings.seed_key_file:
        path = Path(settings.seed_key_file)
        seeds.read_keys(path, f"ZAMETANO_SEED_KEY_FILE {path}", follow=True)
    if settings.player_key_file:
        path = Path(settings.player_key_file)
        signing.read_key(path, f"ZAMETANO_PLAYER_KEY_FILE {path}")
    if settings.player_jwks_file:
        credentials.read_jwks(Path(settings.player_jwks_file))
    if settings.cipher_key_file and Path(settings.cipher_key_file).exists():
        path = Path(settings.cipher_key_file)
        atrest.read_key(path, f"ZAMETANO_CIPHER_KEY_FILE {path}", True)


def check_sqlite_folder(persistence: Mapping[str, str], data_dir: Path) -> None:
    """SQLITE_DBNAME, when set, names a file in a folder that exists: SQLite makes the file, never its folder
    (the data folder, the default file's, is made by the service)."""
    name = persistence.get("SQLITE_DBNAME", "")
    if persistence.get("PERSISTENCE_MODULE") != "eventsourcing.sqlite" or not name or name.startswith("file:") \
            or ":memory:" in name:
        return
    folder = Path(name).parent
    if folder != data_dir and not folder.is_dir():
        raise ConfigError(f"SQLITE_DBNAME {name}: the folder {folder} does not exist; make it, or name a file in "
                          "a folder that does")
    if not os.path.isfile(name):
        return  # a new store, made at start (its folder, when it is the data folder, too)
    try:
        with open(name, "rb") as file:
            head = file.read(len(SQLITE_HEADER))
    except OSError as exc:
        raise ConfigError(f"SQLITE_DBNAME {name} cannot be read: {exc.strerror or exc}") from None
    if head and head != SQLITE_HEADER:
        raise ConfigError(f"SQLITE_DBNAME {name} is not an SQLite database; name the store's file, or a new one")
