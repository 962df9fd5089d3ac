"""The base aggregate of every card table: the shoes, the bookkeeping and the running of commands.

What every table shares, whatever the game (the contract a game plugs into is domain/game.py; the events
every game records are domain/events.py's, recorded through domain/recorder.py's ``Recorder``).

Decide, then record: a command method validates, decides what happens and records events through a
``Recorder``; applying an event only assigns state (the handlers registered with ``@applies``), never
raises, never reads a clock or a random source, so replays run the apply code and never the decision code.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from datetime import datetime
from typing import Any, ClassVar

from eventsourcing.domain import Aggregate

from domain import chain
from domain import chain as _chain  # Table.__init__ takes TableOpened's field named chain
from domain import corrections
from domain.acting import CROUPIER, check_acting, players_act_option
from domain.errors import BadArgument, DomainError, NotAllowedNow
from domain.events import (
    DEALER_RULE,
    SERVICE,
    CardDealt,
    PaymentMade,
    ShoeCut,
    ShoeRevealed,
    ShoeShuffled,
    TableEvent,
    TableOpened,
)
from domain.game import CommandSpec, Game, applies, resolve_options
from domain.inputs import parse_args, validate_players
from domain.recorder import Recorder
from domain.shuffle import ALGORITHM, commitment, shoe_order
from domain.sight import CROUPIER as CROUPIER_VIEW
from domain.sight import EVERYTHING, PLAYER, Entry, Sight
from domain.sight import sight as sight_of

Issued = tuple[str, str, dict[str, Any]]  # a command as issued: its name, who issued it, its fields


class Table(corrections.Correctable, Aggregate):
    """Base aggregate of a card table; each game subclasses it with its own rules, events and commands.

    ``GAME`` is the game's ``Game`` (set when the game's package builds it); ``COMMANDS`` and ``HANDLERS``
    are filled from the methods registered with ``@command`` and ``@applies`` (domain/game.py).
    """

    GAME: ClassVar[Game]
    COMMANDS: ClassVar[Mapping[str, CommandSpec]] = {}
    HANDLERS: ClassVar[Mapping[type, tuple[Callable[..., None], ...]]] = {}
    _RUNS: ClassVar[Mapping[str, Callable[..., None]]] = {}

    # Tables snapshotted before the field existed are croupier's tables.
    players_act: str = CROUPIER
    # The chain rule its events are recorded under (domain/chain.py): tables snapshotted before rule 3 existed
    # were opened under rule 1 or 2, which record no salts, so either reads as "not 3" here.
    chain_rule: int = chain.RULE_BOUND
    # The face-down cards hidden now (domain/sight.py); a table restored from a snapshot taken before the
    # ledger existed starts with none until its next hidden card is dealt. (A list once set: snapshots are JSON.)
    hidden: Any = ()

    def __init__(self, game: str, players: list[str], rules: dict[str, Any], players_act: str | None = None,
                 chain: int | None = None, table_id: str | None = None) -> None:
        self.players_act = players_act or CROUPIER
        self.chain_rule = chain or (_chain.RULE_BOUND if table_id else _chain.RULE_UNBOUND)
        self.game = game
        self.players = list(players)
        self.rules = dict(rules)
        self.phase = ""  # what the table waits for, in the game's words
        self.head = ""
        self.commands = 0
        self.balances = {p: 0 for p in players}
        self.accounts: dict[str, int] = {}
        self.shoes = 0  # every shuffle of the table, lots included, numbered from 1
        self.decks: dict[str, dict[str, Any]] = {}  # the current deck of each label (shoe, lots, banker, dealer)
        self.last_deck = ""
        self.hidden = []
        self.start_corrections()

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        cls._register()

    @classmethod
    def _register(cls) -> None:
        """Reads the ``@applies`` and ``@command`` marks of the class and of its bases, the bases first: a
        handler registered by a base always runs, before the subclass's; a command registered again under
        the same name by a subclass replaces the base's."""
        handlers: dict[type, list[Callable[..., None]]] = {}
        commands: dict[str, CommandSpec] = {}
        runs: dict[str, Callable[..., None]] = {}
        for klass in reversed(cls.__mro__):
            for method in vars(klass).values():
                for event_class in getattr(method, "__applies__", ()):
                    handlers.setdefault(event_class, []).append(method)
                spec = getattr(method, "__command__", None)
                if spec is not None:
                    commands[spec.name] = spec
                    runs[spec.name] = method
        cls.HANDLERS = {k: tuple(v) for k, v in handlers.items()}
        cls.COMMANDS = commands
        cls._RUNS = runs

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
    def open(cls, players: Any, options: Any, now: datetime, *, by: str | None = None, players_act: Any = None,
             **roles: Any) -> Any:
        """A new table with its opening events pending: the players checked, the options resolved to the
        rules, each role of the game one of the players, who acts for the players (domain/acting.py). A
        refusal names what is allowed. ``by``: the credential that opens it, recorded in its events."""
        acting = players_act_option(players_act)
        game = cls.GAME
        unknown = sorted(set(roles) - set(game.roles))
        if unknown:
            takes = (f"its opening fields besides players and rules are: {', '.join(game.roles)}" if game.roles
                     else "it takes no opening field besides players and rules")
            raise BadArgument(unknown[0], f"'{unknown[0]}' is not an opening field of {game.title}; {takes}.")
        names = validate_players(players, *game.players)
        if not isinstance(options, dict):
            raise BadArgument("rules", "'rules' must be an object of options.")
        rules = cls._resolve_rules(options, len(names))
        for role in game.roles:
            if roles.get(role) is None:
                raise BadArgument(role, f"{game.title} needs a '{role}', one of the players ({', '.join(names)}).")
            if roles[role] not in names:
                raise BadArgument(role, f"The {role} '{roles[role]}' is not among the players ({', '.join(names)}).")
        cls._check_opening(names, rules, roles)
        table = cls._open(names, rules, now, by, None if acting == CROUPIER else acting)
        table._record_opening(Recorder(table, now, number=1, by=by), roles)
        return table

    @classmethod
    def _resolve_rules(cls, options: dict[str, Any], players: int) -> dict[str, Any]:
        """The options with their defaults, from the game's ``OptionSpec`` tuple; a game whose options
        depend on one another overrides this."""
        return resolve_options(cls.GAME.name, cls.GAME.options, options, players)

    @classmethod
    def _check_opening(cls, players: list[str], rules: dict[str, Any], roles: dict[str, Any]) -> None:
        """A game's own checks of an opening (raise a DomainError to refuse)."""

    def _record_opening(self, rec: Recorder, roles: dict[str, Any]) -> None:
        """A game's own opening events, after TableOpened (named in the Game's ``opening_events``)."""

    @classmethod
    def _open(cls, players: list[str], rules: dict[str, Any], now: datetime, by: str | None,
              players_act: str | None) -> Any:
        data: dict[str, Any] = {"game": cls.GAME.name, "players": list(players), "rules": rules}
        # Recorded only where given, so that a croupier's table opened without a credential is recorded as
        # every table was before these fields.
        data.update({k: v for k, v in (("players_act", players_act), ("by", by)) if v is not None})
        # The id the library would draw itself, drawn first so that the chain binds it (domain/chain.py); every
        # table opened now commits to its concealed parts (chain rule 3).
        table_id = cls.create_id()
        data[chain.BOUND_FIELD] = str(table_id)
        data[chain.RULE_FIELD] = chain.RULE_COMMITTED
        stamp = chain.format_timestamp(now)
        head = chain.digest("", 1, "TableOpened", stamp, SERVICE, data)
        return cls._create(
            TableOpened, id=table_id, timestamp=now, actor=SERVICE, digest=head, command=1, **data
        )

    # --- applying the shared events: assignments only ----------------------------------------------

    @applies(ShoeShuffled)
    def _shoe_shuffled(self, e: ShoeShuffled) -> None:
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

    @applies(ShoeCut)
    def _shoe_cut(self, e: ShoeCut) -> None:
        deck = self._deck_numbered(e.shoe)
        deck["cut"] = e.position
        deck["cards"] = self._deck_order(deck["deck"], deck["seed"], deck["decks"], e.position)

    @applies(CardDealt)
    def _card_dealt(self, e: CardDealt) -> None:
        self._deck_numbered(e.shoe)["dealt"] = e.position + 1

    @applies(ShoeRevealed)
    def _shoe_revealed(self, e: ShoeRevealed) -> None:
        self._deck_numbered(e.shoe)["revealed"] = True

    @applies(PaymentMade)
    def _payment_made(self, e: PaymentMade) -> None:
        for name, delta in ((e.payer, -e.amount), (e.payee, e.amount)):
            if name in self.balances:
                self.balances[name] += delta
            else:
                self.accounts[name] = self.accounts.get(name, 0) + delta

    def track_hidden(self, e: TableEvent) -> None:
        """The ledger of face-down cards after an event (applied after the event's handlers)."""
        concealment = self.GAME.secrets
        if e.type == "CardDealt" or (self.hidden and e.type in concealment.reveals):
            deck = self._deck_numbered(e.shoe)["deck"] if isinstance(e, CardDealt) else None
            self.hidden = concealment.track(self.hidden, e.type, e.data, e.originator_version, deck)

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

    def _cut_shoe(self, rec: Recorder, player: str, position: int, low: int, high: int) -> None:
        """Cuts the shoe shuffled last at ``position``, which the game's rules allow from ``low`` to ``high``."""
        if not low <= position <= high:
            raise BadArgument("position", f"The cut position must be from {low} to {high}; got {position}.")
        rec(ShoeCut, player, shoe=self.shoe["number"], position=position)

    def _reveal(self, rec: Recorder, deck: str | None = None) -> None:
        shoe = self.decks[deck] if deck else self.shoe
        rec(ShoeRevealed, SERVICE, shoe=shoe["number"], seed=shoe["seed"])

    def _pay(self, rec: Recorder, actor: str, payer: str, payee: str, amount: int, reason: str) -> None:
        rec(PaymentMade, actor, payer=payer, payee=payee, amount=amount, reason=reason)

    def deck_counts(self, label: str) -> dict[str, Any]:
        """A deck as anyone may see it: counts, never the cards, never the seed."""
        deck = self.decks.get(label)
        if not deck:
            return {"number": None, "dealt": 0, "remaining": 0}
        return {"number": deck["number"], "dealt": deck["dealt"], "remaining": len(deck["cards"]) - deck["dealt"]}

    # --- commands ----------------------------------------------------------------------------------

    def handle(
        self, command: str, player: str, args: dict[str, Any], now: datetime, new_seed: Callable[[], bytes],
        expects: list[dict[str, Any]] | None = None, by: str | None = None,
        new_salt: Callable[[], str] | None = None,
    ) -> None:
        """Runs one command: checks its fields, that it is expected from this player now, then lets the
        game decide and record. A refusal raises before anything is recorded. ``expects``: this table's
        ``expects()`` where the caller already has it (the state it last showed), so it is not built again;
        ``by``: the credential that issued it, recorded in each of its events; ``new_salt``: the source of the
        salts of its concealed parts (chain rule 3, domain/recorder.py)."""
        args = parse_args(self.game, self.COMMANDS, command, args)
        if expects is None:
            expects = self.expects()
        # A correction is no move of the game: a supervisor's, never in expects (domain/corrections.py).
        if command not in corrections.COMMANDS and not self._may_issue(command, player, expects):
            raise self._not_allowed(command, player)
        rec = Recorder(self, now, by=by, new_salt=new_salt)
        run = self._RUNS[command]
        if self.COMMANDS[command].seeded:
            run(self, rec, player, new_seed, **args)
        else:
            run(self, rec, player, **args)

    def expect(self, command: str, player: str, **bounds: dict[str, Any]) -> dict[str, Any]:
        """One entry of ``expects``: the command, who may issue it now, and each of its fields with the
        bounds legal now (``bounds[field]``, see ``FieldSpec.expected``)."""
        fields = self.COMMANDS[command].fields
        return {
            "command": command,
            "player": player,
            "fields": {name: spec.expected(**bounds.get(name, {})) for name, spec in fields.items()},
        }

    def house_seats(self) -> frozenset[str]:
        """The players who act for the house here (a game with a croupier among its players names him)."""
        return frozenset()

    def check_acting(self, actor: str, player: str | None) -> None:
        """Refuses (NotYourSeat) a credential that may not issue a command for ``actor`` at this table;
        ``player``: the player a player's credential speaks for, None for the house's (domain/acting.py)."""
        check_acting(self.players_act, self.house_seats(), actor, player)

    def _may_issue(self, command: str, player: str, expects: list[dict[str, Any]]) -> bool:
        return any(e["command"] == command and e["player"] == player for e in expects)

    def _not_allowed(self, command: str, player: str, seen: Sight | None = None) -> NotAllowedNow:
        """Why ``command`` by ``player`` is not expected now, as ``seen`` (by default: everything) may read it: the
        commands the table waits for are public, but not the choices a hidden hand forces (domain/sight.py)."""
        seen = seen or self.sight(EVERYTHING)
        expects = self.expects()
        public = self.expects_public(seen, expects)
        shown = self.expects_seen(seen, expects)
        if not public:
            return NotAllowedNow("The table expects no command now.", shown, command, player)
        wanted = "; ".join(f"{e['command']} by {e['player']}" for e in waits_for(public))
        if player not in self.players:
            why = f"'{player}' is not a player at this table (players: {', '.join(self.players)}); the table waits for {wanted}."
        elif special := self._why_not(command, player, wanted):
            why = special
        elif any(e["command"] == command for e in public):
            why = f"It is not {player}'s turn to {command}: the table waits for {wanted}."
        else:
            why = f"'{command}' is not allowed now ({self.phase_description()}); the table waits for {wanted}."
        return NotAllowedNow(why, shown, command, player)

    def refusal_seen(self, refused: DomainError, command: str, player: str, seen: Sight) -> DomainError:
        """A refusal as ``seen`` may read it, telling nothing his own view does not show: a command not expected
        now worded from what he sees; a refusal whose reason lies in cards hidden from him (``about``) only says
        that the rules do not allow it (the player whose cards they are is told why)."""
        if isinstance(refused, NotAllowedNow):
            return self._not_allowed(refused.command or command, refused.player or player, seen)
        if refused.about is not None and seen.hides_hand_of(refused.about):
            return NotAllowedNow(f"The rules do not allow {command} by {player} now.", self.expects_seen(seen),
                                 command, player)
        return refused

    def _why_not(self, command: str, player: str, wanted: str) -> str | None:
        """A game's own explanation of a refusal, where the generic one would mislead."""
        return None

    def phase_description(self) -> str:
        raise NotImplementedError

    # The command a group of events was recorded by, by the type of its first event; the command's
    # fields are read from that event's data under the same names. ``_command_from`` takes the rest.
    FIRST_EVENTS: ClassVar[Mapping[str, str]] = {}

    def command_of(self, events: list[dict[str, Any]]) -> Issued:
        """The command (name, issuer, fields) that recorded these events (as the events API shows them),
        read from its first event: what an auditor re-runs against the rules. Raises KeyError for a first
        event no command of this game records."""
        first = events[0]
        found = corrections.command_of(first) or self._command_from(first, events)
        if found is not None:
            return found
        command, data = self.FIRST_EVENTS[first["type"]], first["data"]
        return command, first["actor"], {f: data[f] for f in self.COMMANDS[command].fields if f in data}

    def _command_from(self, first: dict[str, Any], events: list[dict[str, Any]]) -> Issued | None:
        """A game's reading of a first event that ``FIRST_EVENTS`` cannot name alone, or None."""
        return None

    # --- views ---------------------------------------------------------------------------------------

    def expects(self) -> list[dict[str, Any]]:
        """Every command legal now, one entry per command and player (built with ``expect``)."""
        raise NotImplementedError

    def sight(self, viewer: Any = CROUPIER_VIEW, now: list[Entry] | None = None) -> Sight:
        """``viewer`` reading this table at its version (``now``: the ledger at the head, if this is an
        earlier version)."""
        return sight_of(viewer, self.hidden, now, self.GAME.secrets)

    def view(self, seen: Sight | None = None, expects: list[dict[str, Any]] | None = None) -> dict[str, Any]:
        """The state as ``seen`` (by default: the croupier) may see it: what every table shows, then the
        game's own part. ``expects``: this table's, where the caller already built them."""
        seen = seen or self.sight()
        game = self.GAME
        public = self.expects_public(seen, expects)
        return {
            "game": self.game,
            "rules": dict(self.rules),
            "players": list(self.players),
            "phase": self.phase,
            "balances": dict(self.balances),
            **{account: self.accounts.get(account, 0) for account in game.accounts},
            "expects": self._own(public, seen),
            "waits_for": waits_for(public),
            **game.view(self, seen),
            **self._corrections_view(),
        }

    def _corrections_view(self) -> dict[str, Any]:
        """The requests pending and the rounds voided, shown only where there are any (a state of a table never
        corrected is the state it always was)."""
        pending = list((self.corrections or {}).get("pending", {}).values())
        voided = list((self.voided or {}).values())
        out: dict[str, Any] = {}
        if pending:
            out["corrections"] = [{k: v for k, v in p.items() if k != "version"} for p in pending]
        if voided:
            out["voided"] = voided
        return out

    def expects_seen(self, seen: Sight, expects: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """``expects`` as ``seen`` may see it: a player's own commands only, as ``expects_public`` shows them."""
        return self._own(self.expects_public(seen, expects), seen)

    @staticmethod
    def _own(public: list[dict[str, Any]], seen: Sight) -> list[dict[str, Any]]:
        if seen.viewer.kind == PLAYER:
            return [e for e in public if e["player"] == seen.viewer.player]
        return public

    def expects_public(self, seen: Sight, expects: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """Every command the table waits for and from whom, as ``seen`` may see them: bounds drawn from a hand
        he may not see (the cards a holder may play) left out, and choices a hidden hand forces widened."""
        shown = []
        for entry in self.expects() if expects is None else expects:
            if seen.hides_hand_of(entry["player"]):
                fields = self.COMMANDS[entry["command"]].fields
                entry = {**entry, "fields": {name: spec.expected() if spec.kind in ("card", "cards") else
                                             entry["fields"][name] for name, spec in fields.items()}}
            shown.append(entry)
        return self._choices_seen(shown, seen)

    def _choices_seen(self, expects: list[dict[str, Any]], seen: Sight) -> list[dict[str, Any]]:
        """A game's own widening of ``expects`` where the choices themselves tell of hidden cards."""
        return expects


def waits_for(public: list[dict[str, Any]]) -> list[dict[str, str]]:
    """Which commands the table waits for and from whom, once each: public to every reader (whose turn it is is
    no secret), whoever may send them (``expects`` lists only the caller's own)."""
    return [{"command": c, "player": p} for c, p in dict.fromkeys((e["command"], e["player"]) for e in public)]


Table._register()

# The events and the recorder lived here once: the games and the service import them from here too, and
# the stored logs name the shared events by this module (domain/events.py keeps those topics).
__all__ = [
    "DEALER_RULE",
    "Issued",
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
