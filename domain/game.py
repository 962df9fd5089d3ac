"""The game contract: what a game gives, and what everything else reads from it.

A game is one package under ``domain/`` and one line in ``domain/games.py``; nothing else names it. The
API's schemas and OpenAPI document, the audit's money and opening checks, the reserved player names, the
demo and the tests' random player all read the ``Game`` object or the table's ``expects``.

How a game plugs in (``domain/<game>/``):

- ``rules.py``: the rules as small pure functions, and the options as an ``OptionSpec`` tuple (the base
  resolves them with ``resolve_options``; a game whose options depend on one another overrides the
  table's ``_resolve_rules``).
- ``events.py``: its events (subclasses of ``domain.events.TableEvent``; their topics, module path and
  class name, are stored: never rename one, and one that moves keeps its first topic with
  ``domain.events.keep_topics``).
- ``table.py``: the aggregate, a subclass of ``domain.table.Table``. It registers

  - each command with ``@command("place_stake", amount=FieldSpec("amount"))`` on a method
    ``(self, rec, player, **fields)``, or ``(self, rec, player, new_seed, **fields)`` with
    ``seeded=True``: it checks the rules, then records events through ``rec`` (a ``Recorder``);
  - each event's handler with ``@applies(StakePlaced)`` on a method ``(self, event)`` that only assigns
    state (never raises, never reads a clock or a random source). The base keeps the chain head, the
    command number and the timestamps for every event before any handler runs; a handler of a shared
    event (``ShoeShuffled``...) runs after the base's own;
  - ``expects()``: every command legal now, each built with ``self.expect(command, player, **bounds)``
    so that a client with no knowledge of the game can choose legal fields (see ``FieldSpec.expected``);
  - ``phase``, and ``phase_description()`` for refusals;
  - ``FIRST_EVENTS`` (event type -> the command a group of events starting with it was recorded by, its
    fields read from that event under the same names) and ``_command_from`` for the rest: the audit
    runs every recorded command again from them;
  - where the game has opening roles (each one of the players, checked by the base) or further checks,
    ``_check_opening`` and ``_record_opening`` (events recorded with TableOpened, listed in
    ``Game.opening_events``).
  Whatever ``expects`` lists must show nothing the state hides (an undealt card, a face-down card).
- ``view.py``: ``view(table, seen) -> dict``, the game's part of the state (what a state shows, what stays
  face down); the base adds game, rules, players, phase, balances, the accounts and expects.
- ``rating.py``: a ``Rating``: the stakes each event settles with the game's edge on them (how a player's
  expected loss is counted, GET /tables/{id}/decisions and his history) and, where the rules leave decisions
  free, how they are read and weighed; a game without an edge says so (``rated=False``).
- ``concealed.py``: a ``domain.sight.Concealment``: which of its events hide a part of their data from some
  reader when recorded (each part by its place in the data and whose it is: a stood total, a pile set aside),
  and which events show hidden cards to all or end their round. Cards dealt face down and a deck's seed
  revealed are the shared events' (``domain.sight.SHARED``). Every output hides what it says (domain/sight.py)
  and, under chain rule 3, the chain commits to each such part with a salt instead of hashing it in clear.
- ``void.py``: ``VOID``, a ``Void``: the stakes a voided round returns and when a round may not be voided; the
  table's handler of ``domain.corrections.RoundVoided`` puts it back between rounds; ``MARKS.closes`` closes
  a round at RoundVoided.
- ``rounds.py``: ``MARKS``, a ``domain.rounds.RoundMarks`` saying where a round starts and ends, and in
  ``doc`` what a round of the game is (for the OpenAPI document).
- ``roads.py`` (baccarat games only): a ``Roads``, saying which event decides a coup and what it decided, from
  which the roads are drawn (domain/roads.py, GET /tables/{id}/roads); a game without one keeps no roads.
- ``__init__.py``: ``GAME = Game(...)``, binding all of it together.

Then ``domain/games.py`` gets one line, and tests and docs/rules/<game>.md the rest.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from fractions import Fraction
from typing import TYPE_CHECKING, Any

from domain.cards import RANKS, SUITS, is_card
from domain.errors import InvalidRules
from domain.roads import Coup
from domain.rounds import RoundMarks
from domain.sight import SHARED, Concealment
from domain.words import as_sent

if TYPE_CHECKING:
    from domain.table import Table

FIELD_KINDS = ("int", "amount", "card", "cards", "amounts", "choice", "text")
TEXT_LONGEST = 500  # a free text field (a correction's note): plain words, never a document
_WORDS = {
    "int": "a whole number",
    "amount": "a whole number above 0",
    "card": "a card such as 'Ts' or '2c' (rank 2-9 T J Q K A, then suit s h d c)",
    "cards": "a non-empty list of cards such as ['Ts', '2c']",
    "amounts": "a list of whole numbers",
    "text": f"a text of up to {TEXT_LONGEST} characters",
}
CARD_PATTERN = f"^[{RANKS}][{SUITS}]$"


def is_whole(value: Any) -> bool:
    """A JSON whole number: never a bool (true is not 1 here), never a float."""
    return isinstance(value, int) and not isinstance(value, bool)


@dataclass(frozen=True)
class FieldSpec:
    """One field of a command: its kind, whether it may be left out, and, for a choice, its words.

    Kinds: ``int`` (a whole number), ``amount`` (a whole number above 0: money is never fractional),
    ``card`` (a card in notation), ``cards`` (a non-empty list of them), ``amounts`` (a list of whole
    numbers), ``choice`` (one of ``choices``) and ``text`` (free words, up to TEXT_LONGEST characters). The shape is checked before any rule is consulted;
    what is legal now (a range, the cards in hand) is the rules' to say, and ``expects`` shows it.
    """

    kind: str
    optional: bool = False
    choices: tuple[str, ...] = ()
    doc: str = ""

    def __post_init__(self) -> None:
        if self.kind not in FIELD_KINDS:
            raise ValueError(f"unknown field kind {self.kind!r}; the kinds are {', '.join(FIELD_KINDS)}")
        if (self.kind == "choice") != bool(self.choices):
            raise ValueError("a choice field, and only a choice field, lists its choices")

    def fits(self, value: Any) -> bool:
        kind = self.kind
        if kind == "int":
            return is_whole(value)
        if kind == "amount":
            return is_whole(value) and value > 0
        if kind == "card":
            return is_card(value)
        if kind == "cards":
            return isinstance(value, list) and bool(value) and all(is_card(c) for c in value)
        if kind == "amounts":
            return isinstance(value, list) and all(is_whole(a) for a in value)
        if kind == "text":
            return isinstance(value, str) and len(value) <= TEXT_LONGEST
        return isinstance(value, str) and value in self.choices

    def describe(self) -> str:
        """The words a refusal uses for what the field must be."""
        if self.kind == "choice":
            return "one of " + ", ".join(repr(w) for w in self.choices)
        return _WORDS[self.kind]

    def json_schema(self) -> dict[str, Any]:
        """The field as an OpenAPI (JSON Schema) fragment."""
        card = {"type": "string", "pattern": CARD_PATTERN}
        schema: dict[str, Any] = {
            "int": {"type": "integer"},
            "amount": {"type": "integer", "minimum": 1},
            "card": card,
            "cards": {"type": "array", "items": card, "minItems": 1},
            "amounts": {"type": "array", "items": {"type": "integer"}},
            "text": {"type": "string", "maxLength": TEXT_LONGEST},
            "choice": {"type": "string", "enum": list(self.choices)},
        }[self.kind]
        return {**schema, "description": self.doc} if self.doc else schema

    def expected(self, **bounds: Any) -> dict[str, Any]:
        """The field as an entry of ``expects`` shows it: kind, optional, and the bounds legal now.

        Bounds by kind: ``min``/``max`` (inclusive) for ``int`` and ``amount``, with ``multiple_of``
        where only multiples of a step are legal (a stake whose commission must be whole); ``choices`` for a
        ``choice`` (all of them unless narrowed); ``cards`` (every card that may be given) for ``card``
        and ``cards``; for lists, ``count`` or ``min_count``/``max_count``, ``min``/``max`` per amount,
        ``sum`` where the amounts must add up, and ``sets`` where only some combinations are legal (every
        legal list, in full). A client that keeps within them is never refused for the field's value.
        """
        out: dict[str, Any] = {"kind": self.kind, "optional": self.optional}
        if self.kind == "choice":
            out["choices"] = list(self.choices)
        out.update(bounds)
        return out


@dataclass(frozen=True)
class CommandSpec:
    """A command: its name (as the API takes it), its fields, whether it takes fresh randomness from the
    service (a shuffle: ``seeded``), and one line for the docs and the OpenAPI document."""

    name: str
    fields: Mapping[str, FieldSpec] = field(default_factory=dict)
    seeded: bool = False
    doc: str = ""


@dataclass(frozen=True)
class OptionSpec:
    """A table option (``rules`` when a table is opened). ``kind``: ``int`` (from ``low`` to ``high``),
    ``bool`` or ``choice`` (one of ``choices``). ``default``: a value, or a callable of the number of
    players (e.g. as many decks as players)."""

    name: str
    kind: str
    default: Any
    low: int | None = None
    high: int | None = None
    choices: tuple[str, ...] = ()
    doc: str = ""

    def default_for(self, players: int) -> Any:
        return self.default(players) if callable(self.default) else self.default

    def problem(self, value: Any) -> str | None:
        """Why ``value`` is refused for this option, or None."""
        if self.kind == "int":
            if not is_whole(value) or not self.low <= value <= self.high:  # type: ignore[operator]
                return f"Option '{self.name}' must be a whole number from {self.low} to {self.high}; got {as_sent(value)}."
        elif self.kind == "bool":
            if not isinstance(value, bool):
                return f"Option '{self.name}' must be true or false."
        elif value not in self.choices:
            words = [f"'{c}'" for c in self.choices]
            listed = words[0] if len(words) == 1 else ", ".join(words[:-1]) + " or " + words[-1]
            return f"Option '{self.name}' must be {listed}."
        return None

    def json_schema(self) -> dict[str, Any]:
        schema: dict[str, Any] = {
            "int": {"type": "integer", "minimum": self.low, "maximum": self.high},
            "bool": {"type": "boolean"},
            "choice": {"type": "string", "enum": list(self.choices)},
        }[self.kind]
        if not callable(self.default):
            schema["default"] = self.default
        return {**schema, "description": self.doc} if self.doc else schema


def resolve_options(
    game: str, specs: tuple[OptionSpec, ...], options: Mapping[str, Any], players: int
) -> dict[str, Any]:
    """The table's options with defaults filled in; an unknown option, or a value out of its range, is
    refused (``InvalidRules``) naming what is allowed. Recorded in TableOpened and never changed."""
    names = [s.name for s in specs]
    unknown = sorted(set(options) - set(names))
    if unknown:
        raise InvalidRules(
            unknown[0], f"Unknown rules option '{unknown[0]}' for {game}; the options are: {', '.join(names)}."
        )
    rules = {s.name: options[s.name] if s.name in options else s.default_for(players) for s in specs}
    for spec in specs:
        problem = spec.problem(rules[spec.name])
        if problem:
            raise InvalidRules(spec.name, problem)
    return rules


# A stake an event settles: who staked, on what, how much, and the game's edge on it (the expected loss per unit).
Rated = tuple[str, str, int, Fraction]


@dataclass(frozen=True)
class Rating:
    """How a game's stakes are rated and its free decisions weighed, read from its events as the events API
    shows them, in version order (service/decisions.py, service/readmodel/seats.py).

    - ``settled(event, rules, carried)``: the stakes the event settles, each ``Rated``; ``carried`` is a JSON
      object the reading keeps from one event to the next, in which the game keeps what it needs (its own keys).
    - ``rated``: whether the game has an edge to rate stakes by (False: a theoretical loss is null).
    - ``decisions(rules)``: a reader of the game's free decisions from the table's first event, whose
      ``feed(event)`` lists those the event records (None: its rules leave nothing free); ``resumed(table,
      round)``: one going on from a table's state within a round; ``figures(rules, decision)``: the decision
      weighed, as service/present.py shows it (its ``gains``, ``best`` option and ``cost`` per unit).
    """

    settled: Callable[[dict[str, Any], dict[str, Any], dict[str, Any]], list[Rated]]
    rated: bool = True
    decisions: Callable[[dict[str, Any]], Any] | None = None
    resumed: Callable[[Any, int], Any] | None = None
    figures: Callable[[dict[str, Any], Any], dict[str, Any]] | None = None


@dataclass(frozen=True)
class Roads:
    """How a baccarat game's coups are read for its roads (domain/roads.py), from its events as the events API
    shows them, in version order.

    - ``decided(event)``: the coup the event decides (its outcome, natural and pairs), or None for any other
      event; the event must show nothing hidden (a coup is read once its cards are shown).
    - ``events``: the types of the events ``decided`` reads (only those are read from the log).
    - ``deck``: the label of the deck its coups are dealt from (``ShoeShuffled.deck``): each shuffle of it
      starts a new shoe, and new roads.
    """

    decided: Callable[[dict[str, Any]], Coup | None]
    events: tuple[str, ...]
    deck: str = "shoe"


@dataclass(frozen=True)
class Void:
    """What voiding a round does in a game (domain/corrections.py): every game says it, so that a new game
    cannot be added without deciding it (docs/rules/<game>.md, "A void").

    - ``stakes(table)``: the stakes out on the table in its open round that no payment has taken yet, each
      ``(player, spot, amount)``: a void returns each (``StakeReturned``); money the round already moved is
      reversed by the base (``PaymentReversed``), whatever the game.
    - ``refused(table)``: why the latest round may not be voided now, in the game's words, or None.
    - ``corrected(table, stake)``: a stake of the open round corrected (``stake``: the ``player`` it was recorded
      for, its ``spot``, the right ``amount``, and the player it should have been recorded ``to``): the stakes
      that change, each ``(player, spot, was, now)`` (``StakeCorrected``), or a refusal (a DomainError) in the
      game's words; the table's handler of ``StakeCorrected`` sets them.
    - ``doc``: one line for the docs and the OpenAPI document: what a void returns and what the shoe does.
    The game's table also handles ``RoundVoided`` (assignments only): the table back between rounds.
    """

    stakes: Callable[[Any], list[tuple[str, str, int]]]
    refused: Callable[[Any], str | None]
    corrected: Callable[[Any, dict[str, Any]], list[tuple[str, str, int, int]]]
    doc: str


@dataclass(frozen=True)
class Game:
    """Everything the rest of the service knows of a game.

    - ``name``: as the API takes it ("chemin-de-fer"); ``title``: as people read it.
    - ``table``: the aggregate class; its registered commands are ``commands``.
    - ``players``: how many players it seats (low, high).
    - ``options``: the table options (``rules``), for the docs, the OpenAPI document and clients.
    - ``roles``: opening fields besides players and rules, each with one line of doc (a tuple of names is
      accepted too); each names one of the players.
    - ``accounts``: parties that are not players and hold money (shown in the state under their name,
      summed by the audit); ``actors``: non-player actors of its events ("dealer-rule");
      ``reserved``: further names a player may not take. All three are reserved names.
    - ``opening_events``: event types recorded by the opening rather than by a command.
    - ``joining_events``: event types by which a player not named at the opening joins the table (its data's
      ``player``): from then on he is one of its players, with a balance and a history.
    - ``rounds``: where a round starts and ends; ``view``: the game's part of the state.
    - ``rating``: how its stakes are rated and its free decisions weighed.
    - ``roads``: how its coups are read for baccarat's roads, or None: it keeps none.
    - ``void``: what voiding a round does (``Void``), required of every game.
    - ``held``: what the table holds of each player's money now, by name (domain/money.py): stakes on the felt,
      a bank put up; None: the stakes a void would return (``void.stakes``).
    - ``concealment``: what its own events hide and show (domain/sight.py); ``secrets``: that and what the
      shared events hide, all a table of the game hides.
    """

    name: str
    title: str
    table: type[Table]
    players: tuple[int, int]
    rounds: RoundMarks
    view: Callable[[Any, Any], dict[str, Any]]
    rating: Rating
    void: Void
    options: tuple[OptionSpec, ...] = ()
    roles: Mapping[str, str] = field(default_factory=dict)
    accounts: tuple[str, ...] = ()
    actors: tuple[str, ...] = ()
    reserved: tuple[str, ...] = ()
    opening_events: tuple[str, ...] = ("TableOpened",)
    joining_events: tuple[str, ...] = ()
    concealment: Concealment = field(default_factory=Concealment)
    roads: Roads | None = None
    held: Callable[[Any], Mapping[str, int]] | None = None

    def __post_init__(self) -> None:
        object.__setattr__(self, "secrets", SHARED + self.concealment)
        if not isinstance(self.roles, Mapping):
            object.__setattr__(self, "roles", {r: f"The {r}, one of the players." for r in self.roles})
        self.table.GAME = self  # the aggregate reads its game (name, roles, accounts, view) from here

    secrets: Concealment = field(init=False, repr=False, compare=False)

    @property
    def commands(self) -> Mapping[str, CommandSpec]:
        return self.table.COMMANDS

    @property
    def reserved_names(self) -> frozenset[str]:
        return frozenset(self.accounts) | frozenset(self.actors) | frozenset(self.reserved)

    def open(self, players: Any, rules: Any, now: datetime, **roles: Any) -> Table:
        """A new table of this game (its opening events pending), or a refusal naming what is allowed."""
        return self.table.open(players, rules, now, **roles)


# --- registration, read by domain.table.Table ----------------------------------------------------------

def command(name: str, *, seeded: bool = False, doc: str = "", **fields: FieldSpec) -> Callable[[Any], Any]:
    """Registers a table method as the command ``name`` with its fields (checked before the method runs).
    ``doc`` defaults to the first line of the method's docstring."""

    def mark(method: Any) -> Any:
        text = doc or (method.__doc__ or "").strip().split("\n")[0]
        method.__command__ = CommandSpec(name, dict(fields), seeded, text)
        return method

    return mark


def applies(*event_classes: type) -> Callable[[Any], Any]:
    """Registers a table method as the handler of these events: it only assigns state."""

    def mark(method: Any) -> Any:
        method.__applies__ = getattr(method, "__applies__", ()) + event_classes
        return method

    return mark
