"""The event envelope every table's events share, and the events every game records.

An event is a past-tense fact about a table. Its topic (module path and class name) is stored with it in
every log: ``keep_topics`` keeps the topic an event was first written under when its class moves.
"""

from __future__ import annotations

import dataclasses
import functools
from dataclasses import field
from typing import Any

from eventsourcing.domain import Aggregate
from eventsourcing.utils import register_topic

from domain import chain

SERVICE = "service"
DEALER_RULE = "dealer-rule"
_ENVELOPE = frozenset(
    {"originator_id", "originator_version", "originator_topic", "timestamp", "actor", "digest", "command", "salts"}
)
# Fields added after logs were first stored: left out of the data (and so of the digest) where an event has
# none, so that every log stored before them keeps its digests.
LATER_FIELDS = frozenset({"by", "players_act", "table_id", "chain"})
# Likewise not stored where empty, but outside the data: the salts of an event's concealed parts (rule 3).
_LATER_ENVELOPE = LATER_FIELDS | {"salts"}


class TableEvent(Aggregate.Event):
    """A past-tense fact about a table, with the envelope of docs/design.md.

    ``command`` numbers the command that produced the event: the service uses it to tell a state in
    the middle of one command (which expects nothing) from the state at the end of one.
    """

    actor: str
    digest: str
    command: int
    # The credential that issued the command: a player's own, or an operator token's name (README
    # "Authentication"); chained as part of the data. None in logs stored before credentials were recorded.
    by: str | None = field(default=None, kw_only=True)
    # Chain rule 3 (domain/chain.py): the salt of each concealed part of the data, by its JSON Pointer. Stored
    # with the event, as secret as the parts it salts (a salt and the digest tell the part), never chained and
    # shown to a reader only beside a part he is shown (domain/sight.py). None under rules 1 and 2.
    salts: dict[str, str] | None = field(default=None, kw_only=True)

    def __post_init__(self) -> None:
        super().__post_init__()
        # A later field left empty is not stored at all, so the stored form of such an event is the one every
        # event had before the field existed (reading it back gives the class's default, None).
        for name in _LATER_ENVELOPE:
            if name in self.__dict__ and self.__dict__[name] is None:
                object.__delattr__(self, name)

    @property
    def type(self) -> str:
        return type(self).__name__

    @property
    def data(self) -> dict[str, Any]:
        """Everything but the envelope: what the chain hashes (less ``seed``) and the events API shows."""
        return {
            name: value for name in _data_names(type(self))
            if (value := getattr(self, name)) is not None or name not in LATER_FIELDS
        }

    @property
    def public_data(self) -> dict[str, Any]:
        """``data`` as any caller may see it: a seed only once a ShoeRevealed publishes it."""
        data = self.data
        if self.type == "ShoeShuffled":
            data.pop("seed", None)
        return data

    def public(self) -> dict[str, Any]:
        """The event as the events API and auditors see it: the envelope and the public data, and under chain
        rule 3 the salts of its concealed parts (every one: domain/sight.py takes out those a reader may not see)."""
        shown = {
            "version": self.originator_version,
            "type": self.type,
            "timestamp": self.timestamp_text,
            "actor": self.actor,
            "data": self.public_data,
            "digest": self.digest,
            "command": self.command,
        }
        if self.salts:
            shown["salts"] = dict(self.salts)
        return shown

    @property
    def timestamp_text(self) -> str:
        return chain.format_timestamp(self.timestamp)

    def apply(self, aggregate: Any) -> None:
        """The base's bookkeeping for every event (eventsourcing sets the version and ``modified_on``),
        then the handlers registered for the event's class, the base's first."""
        aggregate.head = self.digest
        aggregate.commands = self.command
        for handler in aggregate.HANDLERS.get(type(self), ()):
            handler(aggregate, self)
        aggregate.track_hidden(self)
        aggregate.track_round(self)


@functools.cache
def _data_names(event_class: type) -> tuple[str, ...]:
    # Read for every event shown, chained or tracked, several times a command: the fields are the class's.
    return tuple(f.name for f in dataclasses.fields(event_class) if f.name not in _ENVELOPE)


def keep_topics(module: str, *events: type[TableEvent]) -> None:
    """Names each of ``events`` ``<module>:<class name>`` in the logs, whatever module defines it now.

    Every stored event carries its class's topic, and a log is read by resolving it: a class that moves
    to another module keeps the topic it was first written under, so that the logs already stored replay
    and a log written now is read by older code too. eventsourcing writes a class's ``TOPIC`` when it has
    one (and reads it through ``getattr``, so a subclass of a kept event would inherit it: subclass
    ``TableEvent`` instead), and resolves a registered topic without importing ``module``.
    """
    for event in events:
        topic = f"{module}:{event.__name__}"
        event.TOPIC = topic  # type: ignore[attr-defined]
        register_topic(topic, event)


class TableOpened(TableEvent, Aggregate.Created):
    """The first event of every table: the game, the players as listed, and the rules in force."""

    game: str
    players: list[str]
    rules: dict[str, Any]
    # Who may issue the players' commands: "self" (each player with his own credential) or, where None
    # (every table opened before this field, and "croupier" tables), the operator for them.
    players_act: str | None = field(default=None, kw_only=True)
    # The table's own id, which binds the chain to the table (chain rule 2, domain/chain.py); None in every
    # table opened before it was recorded (chain rule 1).
    table_id: str | None = field(default=None, kw_only=True)
    # 3 where the table's concealed parts are chained as salted commitments (chain rule 3, domain/chain.py);
    # None in every table opened before (rules 1 and 2).
    chain: int | None = field(default=None, kw_only=True)


class ShoeShuffled(TableEvent):
    shoe: int
    deck: str
    decks: int
    algorithm: str
    commitment: str
    seed: str


class ShoeCut(TableEvent):
    shoe: int
    position: int


class CardDealt(TableEvent):
    shoe: int
    position: int
    card: str
    to: str
    face_up: bool


class ShoeRevealed(TableEvent):
    shoe: int
    seed: str


class PaymentMade(TableEvent):
    payer: str
    payee: str
    amount: int
    reason: str


# Defined in domain/table.py when the first logs were stored.
keep_topics("domain.table", TableOpened, ShoeShuffled, ShoeCut, CardDealt, ShoeRevealed, PaymentMade)
