"""Idempotency keys: which versions a keyed command appended, saved with them, and its first answer again.

A keyed command saves an ``IdempotencyRecord`` in the same transaction as its events, so a repeated key can
never append twice, even from two server processes at once; a repeat is answered from the log.
"""

from __future__ import annotations

import hashlib
import logging
from typing import TYPE_CHECKING, Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from domain.chain import canonical_json
from domain.sight import Viewer
from service import metrics
from service.errors import IdempotencyKeyReused
from service.replay import table_uuid

if TYPE_CHECKING:
    from service.application import TablesService

log = logging.getLogger("zametano.commands")


class IdempotencyRecord(Aggregate):
    """Remembers which versions a keyed command appended; saved atomically with the table's events,
    so a repeated key can never append twice, even from two server processes at once."""

    class Created(Aggregate.Created):
        table_id: str
        body_sha256: str
        first_version: int
        last_version: int

    def __init__(self, table_id: str, body_sha256: str, first_version: int, last_version: int) -> None:
        self.table_id = table_id
        self.body_sha256 = body_sha256
        self.first_version = first_version
        self.last_version = last_version

    @staticmethod
    def id_for(table_id: str, key: str) -> UUID:
        return uuid5(NAMESPACE_URL, f"zametano:idempotency:{table_id}:{key}")


# Records stored before this module existed name the class where it was defined then.
register_topic("service.application:IdempotencyRecord", IdempotencyRecord)


def body_digest(command: str, player: str, args: dict[str, Any]) -> str:
    """What a repeated key must repeat: the command's whole body, canonically."""
    return hashlib.sha256(canonical_json({"command": command, "player": player, **args}).encode()).hexdigest()


def records(table_id: str, key: str | None, body_sha: str, first: int, last: int) -> list[IdempotencyRecord]:
    """What a keyed command saves with its events: which versions it appended, under its key."""
    if key is None:
        return []
    record = IdempotencyRecord._create(
        IdempotencyRecord.Created, id=IdempotencyRecord.id_for(table_id, key), table_id=table_id,
        body_sha256=body_sha, first_version=first, last_version=last,
    )
    return [record]


def repeated(app: TablesService, table_id: str, command: str, key: str | None, body_sha: str,
             viewer: Viewer) -> dict[str, Any] | None:
    """The first response of a repeated Idempotency-Key (as ``viewer`` sees it), else None."""
    earlier = None if key is None else app.earlier_response(table_id, key, body_sha, viewer)
    if earlier is not None:
        label = metrics.command_label(command)
        metrics.IDEMPOTENT_REPEATS.labels(label).inc()
        log.info("idempotent repeat of %s on table %s: the first response, nothing appended", label, table_id,
                 extra={"table_id": table_id, "command": label})
    return earlier


def earlier_response(app: TablesService, table_id: str, key: str, body_sha: str,
                     viewer: Viewer) -> dict[str, Any] | None:
    """The answer the keyed command gave, rebuilt from the versions its record names; None if never recorded;
    IdempotencyKeyReused if the key was recorded for another body."""
    try:
        record = app.repository.get(IdempotencyRecord.id_for(table_id, key))
    except AggregateNotFoundError:
        return None
    if record.body_sha256 != body_sha:
        raise IdempotencyKeyReused()
    table = app.table(table_id, version=record.last_version)
    events = app.events.get(table_uuid(table_id), gt=record.first_version - 1, lte=record.last_version)
    return app.result(table, list(events), viewer)
