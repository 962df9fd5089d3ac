"""Errors of the service layer (the domain's refusals live in domain/errors.py)."""

from __future__ import annotations


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
    """If-Match named a version that is not the table's head."""

    def __init__(self, expected: str, actual: int) -> None:
        super().__init__(
            f"If-Match names version {expected}, but the table is at version {actual}; "
            "read the table again and resend."
        )
        self.actual = actual


class ConcurrentWrite(ServiceError):
    def __init__(self) -> None:
        super().__init__("Another command was recorded on this table at the same moment; read the table again and resend.")


class IdempotencyKeyReused(ServiceError):
    def __init__(self) -> None:
        super().__init__("This Idempotency-Key was already used with a different request body; use a new key.")


class StoreUnavailable(ServiceError):
    """The event store did not answer in time (database down, restarting, locked or overloaded): nothing
    can be read or recorded now, and the client may try again after ``retry_after`` seconds."""

    # 2 s: a little more than the interval at which lost database connections are re-established
    def __init__(self, reason: str, retry_after: int = 2) -> None:
        super().__init__(
            "The event store is not reachable right now; try again in a few seconds. A command answered "
            "this way may or may not have been recorded: read the table, or resend it with the same "
            "Idempotency-Key, before repeating it."
        )
        self.reason = reason  # for the log, never for the client
        self.retry_after = retry_after
