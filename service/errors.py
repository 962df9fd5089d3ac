"""Errors of the service layer (the domain's refusals live in domain/errors.py)."""

from __future__ import annotations

from typing import Any

from service.config import ConfigError


class ServiceError(Exception):
    def __init__(self, message: str) -> None:
        super().__init__(message)
        self.message = message


class TableNotFound(ServiceError):
    def __init__(self, table_id: str) -> None:
        super().__init__(f"No table with id '{table_id}'.")


class NotFoundInHistory(ServiceError):
    """A version past the end, or a moment before the table existed."""


class VersionMismatch(ServiceError):
    """The command expected the table at a version that is no longer its head."""

    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(
            f"The command expected version {expected} of the table, but the table is at version {actual}; "
            "read the table again and decide anew."
        )
        self.expected = expected
        self.actual = actual


class ConcurrentWrite(ServiceError):
    def __init__(self) -> None:
        super().__init__("Another command was recorded on this table at the same moment; read the table again and resend.")


class IdempotencyKeyReused(ServiceError):
    def __init__(self) -> None:
        super().__init__("This idempotency key was already used with a different command; use a new key.")


class DamagedLog(ServiceError):
    """The table's stored history is not whole (a version missing, a row that cannot be read, a snapshot
    ahead of the last stored event): its state cannot be shown nor a command recorded on it. ``detail``
    says what is wrong and ``version`` where, so that an operator can compare with /verify."""

    def __init__(self, table_id: str, detail: str, version: int | None = None) -> None:
        super().__init__(
            f"The stored history of table '{table_id}' is damaged: {detail}. Nothing can be read or recorded "
            "past the damage; the table's verification lists every problem with its version."
        )
        self.table_id = table_id
        self.detail = detail
        self.version = version


class IndexIncomplete(ServiceError):
    """The read model could not index this table from ``version`` on, so what is asked is not in it."""

    def __init__(self, table_id: str, index_error: dict[str, Any], asked: str) -> None:
        super().__init__(
            f"{asked} is not in the read model, which could not index table '{table_id}' at version "
            f"{index_error['version']}: {index_error['message']}. The table's events can still be read and "
            "verified."
        )
        self.table_id = table_id
        self.index_error = index_error


class IndexUnreadable(ServiceError):
    """Rows of the read model that cannot be opened: altered in the database, or sealed under another key."""

    def __init__(self, table_id: str, reason: str) -> None:
        super().__init__(
            f"The read model's rows of table '{table_id}' cannot be read ({reason}); the table's events can "
            "still be read and verified."
        )
        self.table_id = table_id


class StoreUnreadable(ConfigError):
    """The configured CIPHER_KEY (or its absence, or the compressor) cannot read the stored events."""


class StoreUnavailable(ServiceError):
    """The event store did not answer in time (database down, restarting, locked or overloaded): nothing
    can be read or recorded now, and the client may try again after ``retry_after`` seconds."""

    # 2 s: a little more than the interval at which lost database connections are re-established
    def __init__(self, reason: str, retry_after: int = 2) -> None:
        super().__init__(
            "The event store is not reachable right now; try again in a few seconds. A command answered "
            "this way may or may not have been recorded: read the table, or resend it with the same "
            "idempotency key, before repeating it."
        )
        self.reason = reason  # for the log, never for the client
        self.retry_after = retry_after


class OutcomeUnknown(StoreUnavailable):
    """The event store went away while a command was being saved, perhaps after committing it, and did not
    come back in time to say whether it did: the client learns the outcome by resending the command with
    the identity it was saved under (its own Idempotency-Key, or the one the service made for it)."""

    def __init__(self, reason: str, key: str) -> None:
        super().__init__(reason)
        self.message = (
            "The event store went away while this command was being saved and did not come back in time to "
            f"say whether it was recorded. Resend the same body with the idempotency key {key}: it answers "
            "with the command's response if it was recorded, and records it once if it was not."
        )
        self.args = (self.message,)


class StreamRefused(ServiceError):
    """No live stream can be opened in this process now: it holds as many as it may (``retry_after`` set: one
    may end soon), it is stopping (set: another process will take it), or it cannot hold one at all (None)."""

    def __init__(self, message: str, retry_after: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after


class BadCredential(ServiceError):
    """A player's token that does not verify: expired, altered, signed by an unknown key, for another audience
    or issuer. The message says which, in one line, and never repeats the token."""
