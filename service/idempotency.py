"""Command identities: which versions a command appended, saved with them, and its first answer again.

Every command saves an ``IdempotencyRecord`` in the same transaction as its events, under its identity: the
client's Idempotency-Key, else a key made for the request. The record's row is unique, so a command can
never be recorded twice, even from two server processes at once; a repeated key is answered from the log.
When a save fails in a way that may have committed (the connection lost around COMMIT, the database's
primary gone), the service looks the command up by its identity (``settle``) before deciding anything
again: recorded, it answers with the record's response; not recorded, it decides again under the same
identity, so a commit that was still under way can only make that second save fail, never double it.
"""

from __future__ import annotations

import hashlib
import logging
import time
from typing import TYPE_CHECKING, Any, NamedTuple
from uuid import NAMESPACE_URL, UUID, uuid4, uuid5

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from domain.chain import canonical_json
from domain.sight import Viewer
from service import metrics, store
from service.errors import IdempotencyKeyReused, OutcomeUnknown
from service.replay import table_uuid

if TYPE_CHECKING:
    from service.application import TablesService

log = logging.getLogger("zametano.commands")

# How long a command whose save may have committed waits for the store to say whether it did: longer than
# a primary's failover to its standby takes when it is automatic and quick (about 2 s measured, see
# docs/scaling.md), well below gunicorn's 60 s worker timeout.
SETTLE_WITHIN = 4.0
SETTLE_EVERY = 0.25  # seconds between two attempts to look the command up while the store is away


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
    def id_for(table_id: str, key: str, by: str | None = None) -> UUID:
        """The record's id: a key belongs to the credential that sent it (``by``; None without credentials, as
        every key was before credentials owned their keys), so another credential's same key is another record."""
        if by is None:
            return uuid5(NAMESPACE_URL, f"zametano:idempotency:{table_id}:{key}")
        return uuid5(NAMESPACE_URL, "zametano:idempotency:" + canonical_json([table_id, by, key]))


class Key(NamedTuple):
    """A command's identity: the client's Idempotency-Key (or one made for the request) and the credential that
    sent it, whose own keys alone it finds."""

    text: str
    by: str | None


# Records stored before this module existed name the class where it was defined then.
register_topic("service.application:IdempotencyRecord", IdempotencyRecord)


def body_digest(command: str, player: str, args: dict[str, Any]) -> str:
    """What a repeated key must repeat: the command's whole body, canonically."""
    return hashlib.sha256(canonical_json({"command": command, "player": player, **args}).encode()).hexdigest()


def made_key() -> str:
    """The identity of a command sent without an Idempotency-Key: this request's own, never repeated."""
    return uuid4().hex


def records(table_id: str, key: Key, body_sha: str, first: int, last: int) -> list[IdempotencyRecord]:
    """What a command saves with its events: which versions it appended, under its identity."""
    record = IdempotencyRecord._create(
        IdempotencyRecord.Created, id=IdempotencyRecord.id_for(table_id, *key), table_id=table_id,
        body_sha256=body_sha, first_version=first, last_version=last,
    )
    return [record]


def settle(app: TablesService, table_id: str, command: str, key: Key, body_sha: str, viewer: Viewer,
           failure: BaseException) -> dict[str, Any] | None:
    """After a save that failed in a way that may have committed: the command's response if it was recorded,
    None if it was not; OutcomeUnknown if the store does not answer within SETTLE_WITHIN seconds."""
    deadline = time.monotonic() + SETTLE_WITHIN
    label = metrics.command_label(command)
    while True:
        try:
            earlier = app.earlier_response(table_id, key, body_sha, viewer)
        except Exception as exc:
            outage = store.as_outage(exc)
            if outage is None:
                raise
            if time.monotonic() >= deadline:
                log.warning("%s on table %s: whether it was recorded is unknown, the store did not answer in "
                            "%g s: %s", label, table_id, SETTLE_WITHIN, store.one_line(failure),
                            extra={"table_id": table_id, "command": label})
                raise OutcomeUnknown(outage.reason, key.text) from failure
            time.sleep(SETTLE_EVERY)
            continue
        log.info("%s on table %s: its save failed (%s), and it was %s", label, table_id, store.one_line(failure),
                 "recorded: answered from its record" if earlier else "not recorded: decided again",
                 extra={"table_id": table_id, "command": label})
        return earlier


def repeated(app: TablesService, table_id: str, command: str, key: Key | None, body_sha: str, viewer: Viewer, *,
             made: bool = False) -> dict[str, Any] | None:
    """The first response of a repeated Idempotency-Key (as ``viewer`` sees it), else None. ``made``: the key is the one the service
    made for this request, so a response found is this request's own save's, which committed although it failed."""
    earlier = None if key is None else app.earlier_response(table_id, key, body_sha, viewer)
    if earlier is not None and made:
        log.info("%s on table %s: recorded by a save that failed, answered from its record",
                 metrics.command_label(command), table_id, extra={"table_id": table_id, "command": command})
    elif earlier is not None:
        label = metrics.command_label(command)
        metrics.IDEMPOTENT_REPEATS.labels(label).inc()
        log.info("idempotent repeat of %s on table %s: the first response, nothing appended", label, table_id,
                 extra={"table_id": table_id, "command": label})
    return earlier


def earlier_response(app: TablesService, table_id: str, key: Key, body_sha: str,
                     viewer: Viewer) -> dict[str, Any] | None:
    """The answer the keyed command gave, rebuilt from the versions its record names; None if never recorded;
    IdempotencyKeyReused if the key was recorded for another body."""
    try:
        record = app.repository.get(IdempotencyRecord.id_for(table_id, *key))
    except AggregateNotFoundError:
        return None
    if record.body_sha256 != body_sha:
        raise IdempotencyKeyReused()
    table = app.table(table_id, version=record.last_version)
    events = app.events.get(table_uuid(table_id), gt=record.first_version - 1, lte=record.last_version)
    return app.result(table, list(events), viewer)
