"""What every table shares, whatever the game: the event envelope, the hash chain, the shoes.

Decide, then record: a command method validates, decides what happens and records events through a
``Recorder``; applying an event only assigns state (``when_<EventType>``), never raises, never reads a
clock or a random source, so replays run the apply code and never the decision code.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any, ClassVar

from eventsourcing.domain import Aggregate

from domain import chain
from domain.cards import is_card
from domain.errors import BadArgument, InvalidPlayers, NotAllowedNow, UnknownCommand
from domain.shuffle import ALGORITHM, commitment, shoe_order

MAX_NAME_LENGTH = 40
# Names no player may take: they are accounts or actors of their own.
RESERVED_NAMES = frozenset({"house", "pot", "kitty", "dealer-rule", "service", "banker", "punter"})
SERVICE = "service"
DEALER_RULE = "dealer-rule"
_ENVELOPE = frozenset(
    {"originator_id", "originator_version", "originator_topic", "timestamp", "actor", "digest", "command"}
)


class TableEvent(Aggregate.Event):
    """A past-tense fact about a table, with the envelope of DESIGN.md.

    ``command`` numbers the command that produced the event: the service uses it to tell a state in
    the middle of one command (which expects nothing) from the state at the end of one.
    """

    actor: str
    digest: str
    command: int

    @property
    def type(self) -> str:
        return type(self).__name__

    @property
    def data(self) -> dict[str, Any]:
        """Everything but the envelope: what the chain hashes (less ``seed``) and the events API shows."""
        return {f.name: getattr(self, f.name) for f in dataclasses.fields(self) if f.name not in _ENVELOPE}

    @property
    def public_data(self) -> dict[str, Any]:
        """``data`` as any caller may see it: a seed only once a ShoeRevealed publishes it."""
        data = self.data
        if self.type == "ShoeShuffled":
            data.pop("seed", None)
        return data

    def public(self) -> dict[str, Any]:
        """The event as the events API and auditors see it: the envelope and the public data."""
        return {
            "version": self.originator_version,
            "type": self.type,
            "timestamp": self.timestamp_text,
            "actor": self.actor,
            "data": self.public_data,
            "digest": self.digest,
            "command": self.command,
        }

    @property
    def timestamp_text(self) -> str:
        return chain.format_timestamp(self.timestamp)

    def apply(self, aggregate: Any) -> None:
        getattr(aggregate, "when_" + self.type)(self)


class TableOpened(TableEvent, Aggregate.Created):
    """The first event of every table: the game, the players as listed, and the rules in force."""

    game: str
    players: list[str]
    rules: dict[str, Any]


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


class Recorder:
    """Records the events of one command: one clock reading, one command number, a strictly rising time."""

    def __init__(self, table: "Table", now: datetime, number: int | None = None) -> None:
        self.table = table
        self.now = now
        self.number = table.commands + 1 if number is None else number

    def __call__(self, event_class: type[TableEvent], actor: str, **data: Any) -> None:
        table = self.table
        # Timestamps of one table strictly increase, so that a moment names exactly one version.
        moment = max(self.now, table.modified_on + timedelta(microseconds=1))
        stamp = chain.format_timestamp(moment)
        version = table.version + 1
        head = chain.digest(table.head, version, event_class.__name__, stamp, actor, data)
        table.trigger_event(
            event_class, timestamp=moment, actor=actor, digest=head, command=self.number, **data
        )


class Table(Aggregate):
    """Base aggregate of a card table; each game subclasses it with its own rules and events."""

    GAME: ClassVar[str] = ""

    def __init__(self, game: str, players: list[str], rules: dict[str, Any], digest: str, command: int) -> None:
        self.game = game
        self.players = list(players)
        self.rules = dict(rules)
        self.head = digest
        self.commands = command
        self.balances = {p: 0 for p in players}
        self.accounts: dict[str, int] = {}
        self.shoes = 0  # every shuffle of the table, lots included, numbered from 1
        self.decks: dict[str, dict[str, Any]] = {}  # the current deck of each label (shoe, lots, banker, dealer)
        self.last_deck = ""

    @property
    def shoe(self) -> dict[str, Any]:
        """The deck shuffled last."""
        return self.decks.get(self.last_deck, {})

    def _deck_numbered(self, number: int) -> dict[str, Any]:
        for deck in self.decks.values():
            if deck["number"] == number:
                return deck
        raise KeyError(number)  # an event for a shoe never shuffled: impossible in a recorded log

    @classmethod
    def _open(cls, players: list[str], rules: dict[str, Any], now: datetime) -> Any:
        data = {"game": cls.GAME, "players": list(players), "rules": rules}
        stamp = chain.format_timestamp(now)
        head = chain.digest("", 1, "TableOpened", stamp, SERVICE, data)
        return cls._create(
            TableOpened, timestamp=now, actor=SERVICE, digest=head, command=1, **data
        )

    # --- applying events: assignments only ---------------------------------------------------------

    def when_TableOpened(self, e: TableOpened) -> None:
        pass

    def _after(self, event: TableEvent) -> None:
        self.head = event.digest
        self.commands = event.command

    def when_ShoeShuffled(self, e: ShoeShuffled) -> None:
        self._after(e)
        self.shoes = e.shoe
        self.last_deck = e.deck
        self.decks[e.deck] = {
            "number": e.shoe,
            "deck": e.deck,
            "decks": e.decks,
            "seed": e.seed,
            "cut": 0,
            "cards": self._deck_order(e.deck, e.seed, e.decks, 0),
            "dealt": 0,
            "revealed": False,
        }

    @staticmethod
    def _deck_order(label: str, seed_hex: str, decks: int, cut: int) -> list[str]:
        """The order a deck is dealt in: the fair shuffle of its seed, then the cut. (Tests that need
        particular hands stack a deck by replacing this one function.)"""
        return shoe_order(bytes.fromhex(seed_hex), decks, cut)

    def when_ShoeCut(self, e: ShoeCut) -> None:
        self._after(e)
        deck = self._deck_numbered(e.shoe)
        deck["cut"] = e.position
        deck["cards"] = self._deck_order(deck["deck"], deck["seed"], deck["decks"], e.position)

    def when_CardDealt(self, e: CardDealt) -> None:
        self._after(e)
        self._deck_numbered(e.shoe)["dealt"] = e.position + 1

    def when_ShoeRevealed(self, e: ShoeRevealed) -> None:
        self._after(e)
        self._deck_numbered(e.shoe)["revealed"] = True

    def when_PaymentMade(self, e: PaymentMade) -> None:
        self._after(e)
        for name, delta in ((e.payer, -e.amount), (e.payee, e.amount)):
            if name in self.balances:
                self.balances[name] += delta
            else:
                self.accounts[name] = self.accounts.get(name, 0) + delta

    # --- deciding helpers used by the games --------------------------------------------------------

    def _shuffle(self, rec: Recorder, actor: str, deck: str, decks: int, seed: bytes) -> None:
        rec(
            ShoeShuffled,
            actor,
            shoe=self.shoes + 1,
            deck=deck,
            decks=decks,
            algorithm=ALGORITHM,
            commitment=commitment(seed),
            seed=seed.hex(),
        )

    def _take(self, rec: Recorder, actor: str, to: str, face_up: bool, deck: str | None = None) -> str:
        """Deals the next card of a deck (the last shuffled by default); its position is its index in
        the dealt order."""
        shoe = self.decks[deck] if deck else self.shoe
        position = shoe["dealt"]
        card = shoe["cards"][position]
        rec(CardDealt, actor, shoe=shoe["number"], position=position, card=card, to=to, face_up=face_up)
        return card

    def _reveal(self, rec: Recorder, deck: str | None = None) -> None:
        shoe = self.decks[deck] if deck else self.shoe
        rec(ShoeRevealed, SERVICE, shoe=shoe["number"], seed=shoe["seed"])

    def _pay(self, rec: Recorder, actor: str, payer: str, payee: str, amount: int, reason: str) -> None:
        rec(PaymentMade, actor, payer=payer, payee=payee, amount=amount, reason=reason)

    def shoe_view(self) -> dict[str, Any]:
        """The shoe as anyone may see it: counts, never the cards, never the seed."""
        if not self.shoe:
            return {"number": None, "dealt": 0, "remaining": 0}
        size = len(self.shoe["cards"])
        return {"number": self.shoe["number"], "dealt": self.shoe["dealt"], "remaining": size - self.shoe["dealt"]}

    # --- commands ----------------------------------------------------------------------------------

    COMMANDS: ClassVar[dict[str, dict[str, str]]] = {}
    SEEDED: ClassVar[tuple[str, ...]] = ()

    def handle(
        self, command: str, player: str, args: dict[str, Any], now: datetime, new_seed: Callable[[], bytes]
    ) -> None:
        """Runs one command: checks its fields, that it is expected from this player now, then lets the
        game decide and record. A refusal raises before anything is recorded."""
        args = parse_args(self.GAME, self.COMMANDS, command, args)
        if not self._may_issue(command, player):
            raise self._not_allowed(command, player)
        rec = Recorder(self, now)
        method = getattr(self, "do_" + command)
        if command in self.SEEDED:
            method(rec, player, new_seed, **args)
        else:
            method(rec, player, **args)

    def _may_issue(self, command: str, player: str) -> bool:
        return any(e["command"] == command and e["player"] == player for e in self.expects())

    def _not_allowed(self, command: str, player: str) -> NotAllowedNow:
        expects = self.expects()
        if not expects:
            return NotAllowedNow("The table expects no command now.", expects)
        wanted = "; ".join(f"{e['command']} by {e['player']}" for e in expects)
        if player not in self.players:
            why = f"'{player}' is not a player at this table (players: {', '.join(self.players)}); the table waits for {wanted}."
        elif special := self._why_not(command, player, wanted):
            why = special
        elif any(e["command"] == command for e in expects):
            why = f"It is not {player}'s turn to {command}: the table waits for {wanted}."
        else:
            why = f"'{command}' is not allowed now ({self.phase_description()}); the table waits for {wanted}."
        return NotAllowedNow(why, expects)

    def _why_not(self, command: str, player: str, wanted: str) -> str | None:
        """A game's own explanation of a refusal, where the generic one would mislead."""
        return None

    def phase_description(self) -> str:
        raise NotImplementedError

    # --- views ---------------------------------------------------------------------------------------

    def expects(self) -> list[dict[str, str]]:
        raise NotImplementedError

    def view(self) -> dict[str, Any]:
        raise NotImplementedError


def validate_players(players: Any, low: int, high: int) -> list[str]:
    if not isinstance(players, list) or not all(isinstance(p, str) for p in players):
        raise InvalidPlayers("'players' must be a list of names.")
    if not low <= len(players) <= high:
        raise InvalidPlayers(f"This game seats {low} to {high} players; {len(players)} were listed.")
    for p in players:
        if not p.strip() or len(p) > MAX_NAME_LENGTH or p != p.strip():
            raise InvalidPlayers(
                f"Player names are 1 to {MAX_NAME_LENGTH} characters without surrounding spaces; got {p!r}."
            )
        if p in RESERVED_NAMES:
            raise InvalidPlayers(
                f"'{p}' is reserved (names not allowed: {', '.join(sorted(RESERVED_NAMES))})."
            )
    dupes = sorted({p for p in players if players.count(p) > 1})
    if dupes:
        raise InvalidPlayers(f"Each player is listed once; listed twice: {', '.join(dupes)}.")
    return list(players)


__all__ = [
    "DEALER_RULE",
    "SERVICE",
    "CardDealt",
    "PaymentMade",
    "Recorder",
    "ShoeCut",
    "ShoeRevealed",
    "ShoeShuffled",
    "Table",
    "TableEvent",
    "TableOpened",
]


def parse_args(game: str, commands: dict[str, dict[str, str]], command: str, args: dict[str, Any]) -> dict[str, Any]:
    """Checks a command's fields before any rule is consulted: known command, no missing or unknown field,
    each field of its kind. Kinds: ``int`` (a whole number), ``amount`` (a whole number > 0; money is
    never fractional), ``card`` (a card in notation), ``cards`` (a list of them), ``amounts`` (a list of
    whole numbers), or a ``choice:a|b`` of words."""
    if command not in commands:
        raise UnknownCommand(command, game, sorted(commands))
    spec = commands[command]
    extra = sorted(set(args) - set(spec))
    if extra:
        takes = f"takes {', '.join(spec)}" if spec else "takes no fields besides 'command' and 'player'"
        raise BadArgument(extra[0], f"'{command}' {takes}; unexpected field '{extra[0]}'.")
    out: dict[str, Any] = {}
    for name, kind in spec.items():
        optional = kind.endswith("?")
        kind = kind.rstrip("?")
        if name not in args:
            if optional:
                continue
            raise BadArgument(name, f"'{command}' needs the field '{name}' ({_describe(kind)}).")
        value = args[name]
        if not _fits(kind, value, is_card):
            raise BadArgument(name, f"'{name}' must be {_describe(kind)}; got {value!r}.")
        out[name] = value
    return out


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _fits(kind: str, value: Any, is_card: Any) -> bool:
    if kind == "int":
        return _is_int(value)
    if kind == "amount":
        return _is_int(value) and value > 0
    if kind == "card":
        return is_card(value)
    if kind == "cards":
        return isinstance(value, list) and bool(value) and all(is_card(c) for c in value)
    if kind == "amounts":
        return isinstance(value, list) and all(_is_int(a) for a in value)
    if kind.startswith("choice:"):
        return value in kind[len("choice:"):].split("|")
    raise ValueError(f"unknown argument kind {kind}")


def _describe(kind: str) -> str:
    if kind.startswith("choice:"):
        return "one of " + ", ".join(repr(w) for w in kind[len("choice:"):].split("|"))
    return {
        "int": "a whole number",
        "amount": "a whole number above 0",
        "card": "a card such as 'Ts' or '2c' (rank 2-9 T J Q K A, then suit s h d c)",
        "cards": "a non-empty list of cards such as ['Ts', '2c']",
        "amounts": "a list of whole numbers",
    }[kind]
