"""Private files: the data folder and everything the service writes in it readable by its owner alone.

The data folder is made (or narrowed to) mode 0700, and every file the service writes there 0600,
whatever the umask: the SQLite store (SQLite gives its ``-wal`` and ``-shm`` files the mode of the
database file), the keys, the keyring and the lock file. A key is written to a temporary file of an
unpredictable name, opened ``O_CREAT|O_EXCL|O_NOFOLLOW`` (so no file or link another user placed there
is ever written through), then renamed over its name. A key file that others may read or write, or that
belongs to another user, stops start-up with one line naming the file and its mode.
"""

from __future__ import annotations

import fcntl
import os
import secrets
import stat
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from service.config import ConfigError

FOLDER_MODE = 0o700
FILE_MODE = 0o600
LOCK_FILE = ".keys.lock"
SQLITE_COMPANIONS = ("", "-wal", "-shm", "-journal")


def private_folder(path: Path, what: str) -> None:
    """Makes ``path`` (mode 0700), or narrows it to 0700 when it is this user's and others may enter it."""
    try:
        path.mkdir(mode=FOLDER_MODE, parents=True, exist_ok=True)
        info = path.stat()
        if info.st_uid == os.geteuid() and stat.S_IMODE(info.st_mode) != FOLDER_MODE:
            path.chmod(FOLDER_MODE)
    except OSError as exc:
        raise ConfigError(f"{what} {path} cannot be created: {exc.strerror or exc}; name a folder this user may write") from None


def private_sqlite(name: str) -> None:
    """The SQLite store ``name`` (a file name, not ``:memory:`` or a ``file:`` URI) made or narrowed to 0600
    before the library opens it, with its ``-wal``, ``-shm`` and ``-journal`` files where they exist."""
    if not name or name.startswith((":", "file:")):
        return
    path = Path(name)
    if not path.parent.is_dir():
        return  # the library says so, naming the file
    try:
        os.close(os.open(path, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE))
    except OSError:
        return  # not this user's to open: the library says why when it opens it
    for suffix in SQLITE_COMPANIONS:
        narrow(Path(f"{path}{suffix}"))


def narrow(path: Path) -> None:
    """A file of this user that others may read or write made 0600; anything else left as it is."""
    try:
        info = path.lstat()
    except FileNotFoundError:
        return
    if stat.S_ISREG(info.st_mode) and info.st_uid == os.geteuid() and info.st_mode & 0o077:
        path.chmod(FILE_MODE)


def read_secret(path: Path, what: str, *, follow: bool = True) -> bytes:
    """The bytes of a key file, refused (one ConfigError line naming it and its mode) when it belongs to
    another user or its group or others may read or write it. ``follow``: a symbolic link is read through
    (a key named by a setting), else refused (a key the service made in its data folder)."""
    flags = os.O_RDONLY | (0 if follow else os.O_NOFOLLOW)
    try:
        fd = os.open(path, flags)
    except OSError as exc:
        raise ConfigError(f"{what} cannot be read: {exc.strerror or exc}") from None
    try:
        info = os.fstat(fd)
        mode = stat.S_IMODE(info.st_mode)
        if not stat.S_ISREG(info.st_mode):
            raise ConfigError(f"{what} cannot be read: {'Is a directory' if stat.S_ISDIR(info.st_mode) else 'not a file'}")
        if info.st_uid != os.geteuid():
            raise ConfigError(
                f"{what} (mode {mode:04o}) belongs to user {info.st_uid}, not to this user ({os.geteuid()}); "
                "a key must be this user's own file, mode 0600"
            )
        if mode & 0o077:
            raise ConfigError(f"{what} has mode {mode:04o}: others may read or write it; make it 0600 (chmod 600 FILE)")
        with os.fdopen(os.dup(fd), "rb") as handle:
            return handle.read()
    finally:
        os.close(fd)


@contextmanager
def locked(folder: Path, what: str) -> Iterator[None]:
    """One process at a time makes a key or changes the keyring (several workers or servers may start at once)."""
    try:
        private_folder(folder, "the folder of the keys")
        fd = os.open(folder / LOCK_FILE, os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, FILE_MODE)
    except (OSError, ConfigError) as exc:
        reason = exc.strerror if isinstance(exc, OSError) else str(exc)
        raise ConfigError(f"cannot write {what}: {reason or exc} (ZAMETANO_DATA_DIR must be a writable folder)") from None
    with os.fdopen(fd, "a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


def write_private(path: Path, data: bytes, what: str) -> None:
    """Writes ``path`` mode 0600: readers see the old file or the whole new one, never a part (written to a
    temporary file of an unpredictable name that no one else can have made, then renamed)."""
    temporary = path.with_name(f".{path.name}.{secrets.token_hex(16)}.tmp")
    made = False
    try:
        fd = os.open(temporary, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW, FILE_MODE)
        made = True
        with os.fdopen(fd, "wb") as handle:
            os.fchmod(fd, FILE_MODE)  # whatever the umask
            handle.write(data)
            handle.flush()
            os.fsync(fd)
        os.replace(temporary, path)
        made = False
        folder = os.open(path.parent, os.O_RDONLY)
        try:
            os.fsync(folder)  # the rename itself survives a crash: receipts may already be signed with the key
        finally:
            os.close(folder)
    except OSError as exc:
        if made:
            temporary.unlink(missing_ok=True)
        raise ConfigError(f"cannot write {what}: {exc.strerror or exc} (ZAMETANO_DATA_DIR must be a writable folder)") from None
