"""The eventsourcing Application for tables: its wiring and life cycle, and the uses it is made of.

One method per use, each its own transaction. The uses live in modules of their own, mixed in here:
commands (service/commands.py), queries (service/queries.py), what the audits read (service/history.py)
and health (service/health.py); what a caller sees is made by service/present.py. This module builds the
parts (service/bootstrap.py) and ties the library's hooks to them: the repository reads through
service/replay.py, and every save tells the live streams' hub at once.
"""

from __future__ import annotations

import logging
import threading
from typing import Any
from uuid import UUID

from eventsourcing.application import Application

from domain.games import GAMES
from domain.purse import Purse
from domain.table import TableEvent
from service import atrest, bootstrap, replay, store, streams
from service.combining import Combiner, Turns
from service.commands import Commands
from service.config import Settings
from service.health import Health
from service.history import History
from service.queries import Queries
from service.seeds import SealingMapper, SeedKeys
from service.signing import Signer

# Kept importable here: callers name the application's clock and seed source by this module.
utc_now = bootstrap.utc_now
fresh_seed = bootstrap.fresh_seed
log = logging.getLogger("zametano.store")


class TablesService(Commands, Queries, History, Health, Application):
    name = "Zametano"
    snapshotting_intervals: dict[type, int] = {**{game.table: 50 for game in GAMES.values()}, Purse: 50}

    def __init__(
        self,
        settings: Settings | None = None,
        *,
        clock: bootstrap.Clock = utc_now,
        new_seed: bootstrap.SeedSource = fresh_seed,
        new_salt: bootstrap.SaltSource = bootstrap.fresh_salt,
        env: dict[str, str] | None = None,
        signer: Signer | None = None,
        seed_keys: SeedKeys | None = None,
        follow: bool = False,
        group_commit: bool | None = None,
    ) -> None:
        """``follow``: keep the read model up to date in a background thread (a server does; tests and tools
        without it have each query index what it needs first). close() stops the thread. ``group_commit``
        (default: the settings' ZAMETANO_GROUP_COMMIT): commands of different tables decided at once by
        several threads are saved in one transaction (service/groupcommit.py)."""
        # The key first: a key that cannot be used stops start-up before the store is touched.
        self.signer = signer if signer is not None else bootstrap.signer_for(settings)
        self.seed_keys = seed_keys if seed_keys is not None else bootstrap.seed_keys_for(settings)
        self.statement_timeout = settings.statement_timeout if settings else 0.0
        try:
            super().__init__(env=bootstrap.library_env(settings, env))
            # Before the read model's indexer, whose sealer takes the events' cipher.
            self.at_rest = atrest.settle(self, settings)
            self.clock = clock
            self.new_seed = new_seed
            self.new_salt = new_salt
            self.head_locks: dict[UUID, threading.Lock] = {}  # one a table; setdefault is atomic
            self.shown_expects: dict[tuple[UUID, int, str], list[dict[str, Any]]] = {}
            self.acting_of: dict[str, tuple[str, frozenset[str]]] = {}  # Commands.acting
            self.combiner = Combiner()  # commands of one table decided and saved together (service/combining.py)
            # A table's leaders take turns between the processes of a node (a store in memory has one process).
            shared = settings is not None and settings.persistence.get("PERSISTENCE_MODULE") != "eventsourcing.popo"
            self.turns = Turns(settings.data_dir) if shared else None
            bootstrap.wire(self, settings, follow=follow, group_commit=group_commit)
        except BaseException:
            # built halfway (the database went away): close the connection pool it may have opened
            if getattr(self, "factory", None) is not None:
                self.factory.close()
            raise

    def construct_factory(self, env: Any) -> Any:
        factory = super().construct_factory(env)
        store.harden(factory, self.statement_timeout)
        return factory

    def construct_mapper(self) -> Any:
        """The library's mapper (its transcoder, cipher and compressor), sealing seeds (service/seeds.py)."""
        return SealingMapper(super().construct_mapper(), self.seed_keys)

    def construct_repository(self) -> Any:
        repository = super().construct_repository()
        repository.event_store = replay.FromItsHead(self.events)  # type: ignore[assignment]
        return repository

    def close(self) -> None:
        if getattr(self, "money", None) is not None:
            self.money.close()
        if getattr(self, "hub", None) is not None:
            self.hub.close()  # its streams end, and give their connections back
        # The follower first: it reads and writes through the connections the factory is about to close.
        if getattr(self, "index", None) is not None:
            self.index.close()
        if getattr(self, "turns", None) is not None:
            self.turns.close()
        super().close()

    def _take_snapshots(self, processing_event: Any) -> None:
        """A table whose save crossed a multiple of its snapshot interval is snapshotted as it stands after the
        save, from the table in hand. The library reads the table back from the store at the crossing version
        instead: up to an interval of events read, decrypted and replayed again, about a twentieth of a
        command's CPU. The table in hand is the log's at its version: its save appended exactly its events
        after that version, or was refused (the unique key on table and version; service/onetrip.py's check of
        the row before them)."""
        if self.snapshots is None or not self.snapshotting_intervals:
            return
        crossed = {e.originator_id for e in processing_event.events if self._due(e, processing_event.aggregates)}
        for aggregate_id in crossed:
            aggregate = processing_event.aggregates[aggregate_id]
            snapshot_class = getattr(type(aggregate), "Snapshot", type(self).snapshot_class)
            try:
                self.snapshots.put([snapshot_class.take(aggregate)])
            except Exception as exc:
                # The command is committed: a snapshot that cannot be written (the store's disk full, its
                # file read-only) only costs the next reads some replay, never the command its answer.
                if store.as_outage(exc) is None:
                    raise
                log.warning("snapshot of table %s at version %d not written: %s", aggregate_id, aggregate.version,
                            store.one_line(exc))

    def _due(self, event: Any, aggregates: dict[Any, Any]) -> bool:
        aggregate = aggregates.get(event.originator_id)
        interval = self.snapshotting_intervals.get(type(aggregate)) if aggregate is not None else None
        return interval is not None and event.originator_version % interval == 0

    def _notify(self, recordings: list[Any]) -> None:
        """After every save of this process: its streams hear of the tables' new events at once, before the
        follower reads them from the log, and send them as they are in hand (the library's hook, called once
        the events are committed)."""
        hub = getattr(self, "hub", None)
        if hub is not None:
            hub.recorded([r.domain_event for r in recordings if isinstance(r.domain_event, TableEvent)])
