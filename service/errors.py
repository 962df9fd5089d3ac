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


class DamagedLog(ServiceError):
    """The table's stored history is not whole (a version missing, a row that cannot be read, a snapshot
    ahead of the last stored event): its state cannot be shown nor a command recorded on it. ``detail``
    says what is wrong and ``version`` where, so that an operator can compare with /verify."""

    def __init__(self, table_id: str, detail: str, version: int | None = None) -> None:
        super().__init__(
            f"The stored history of table '{table_id}' is damaged: {detail}. Nothing can be read or recorded "
            f"past the damage; GET /tables/{table_id}/verify lists every problem with its version."
        )
        self.table_id = table_id
        self.detail = detail
        self.version = version
