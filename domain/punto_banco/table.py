"""The punto banco table aggregate (docs/rules/punto-banco.md).

Commands (``@command``) check the rules of rules.py, then record past-tense events; handlers (``@applies``)
only assign state. Phases name what the table waits for:

    shuffle -> cut -> stakes -> deal -> stakes -> deal -> ... (the shoe's last coup settled) -> shuffle

The croupier, named when the table opens and listed among its players, shuffles, closes the stakes and
deals; every other player cuts and stakes; the house banks. The cut also turns the shoe's first card and
burns that many; a deal plays the whole coup (every draw is fixed by the rules) and settles it.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime, timedelta
from typing import Any

from domain.baccarat import DRAW, STAND, hand_total
from domain.chain import format_timestamp
from domain.corrections import RoundVoided, StakeCorrected
from domain.errors import DomainError
from domain.events import DEALER_RULE, SERVICE, CardDealt, PaymentMade, ShoeCut, ShoeRevealed, ShoeShuffled
from domain.game import FieldSpec, applies, command
from domain.inputs import refuse_names_that_look_alike, refuse_one_name_written_twice, validate_name
from domain.punto_banco import coup as C
from domain.punto_banco import rules as R
from domain.punto_banco.events import (
    BettorJoined,
    CardsBurned,
    CoupDecided,
    DrawDecided,
    RolesAssigned,
    ShoeFinished,
    StakePlaced,
    StakesClosed,
    StakesOpened,
    StopCardCameOut,
)
from domain.recorder import Recorder
from domain.table import Table

SHUFFLE, CUT, STAKES, DEAL = "shuffle", "cut", "stakes", "deal"
BURNING, SHOE_OVER = "burning", "shoe over"  # only ever seen between two events of one command
BURN = "burn"  # where the turned card and the burned cards go (CardDealt.to)
CROUPIER_COMMANDS = {"shuffle": "shuffle the shoe", "open_stakes": "open the stakes", "close_stakes": "close the stakes",
                     "deal": "deal"}


POSITION = FieldSpec("int", doc="Where the shoe is cut: from 1 to the shoe's size less 1.")
SPOT = FieldSpec("choice", choices=R.SPOTS, doc="What the stake backs: the player's hand, the banker's hand or a tie.")
STAKE = FieldSpec("amount", doc="Added to the player's stake on the spot; the total stays within the table's "
                                "limits, and a banker total is a multiple of the commission's unit.")
SECONDS = FieldSpec("int", doc="How long the stakes stay open, in seconds, within the table's min_window and max_window.")


class StakesAreClosed(DomainError):
    """A stake after the betting window's deadline: the stakes closed then, whether or not the close is recorded yet."""

    def __init__(self, closes_at: str, seconds: int) -> None:
        super().__init__(f"The stakes of this coup closed at {closes_at}, when the {seconds}-second betting window "
                         "the croupier opened ended; no stake is taken after it.", closes_at=closes_at)


class PuntoBancoTable(Table):
    def __init__(self, game: str, players: list[str], rules: dict[str, Any], players_act: str | None = None,
                 chain: int | None = None, table_id: str | None = None) -> None:
        super().__init__(game, players, rules, players_act, chain, table_id)
        self.phase = SHUFFLE
        self.croupier = ""
        self.coup = 0
        self.stakes: dict[str, dict[str, int]] = {}  # player -> spot -> total, in the order they first staked
        self.hands: dict[str, list[str]] = {R.PLAYER: [], R.BANKER: []}
        self.result: dict[str, Any] | None = None  # the coup last decided, while its hands are on the table
        self.turned: str | None = None
        self.burned: list[str] = []
        self.discarded = 0  # cards of earlier coups of this shoe
        self.last_coup = False  # the stop card is out: the next coup to be settled ends the shoe
        # The stakes of the coup just decided stay on the felt until they are paid (the state shows them as its
        # stakes meanwhile), with the payments still to come for them as (player, spot), in the settlement's
        # order. Read with getattr: a snapshot made before they existed restores without them, and none is made
        # in the middle of a settlement (snapshots follow whole commands).
        self.unpaid: dict[str, dict[str, int]] = {}
        self.settling: tuple[tuple[str, str], ...] = ()
        self.window: dict[str, Any] | None = None

    # The betting window of the coup in play ({"seconds", "closes_at"}); tables snapshotted before it existed
    # never had one open.
    window: Any = None
    # Every stake on the table in this coup by spot, kept as stakes are placed (the exposure reads it at every
    # stake); tables snapshotted before it existed count it from the stakes.
    totals: Any = None

    @property
    def totals_now(self) -> dict[str, int]:
        """The stakes by spot (a read never changes the table: a snapshot holds the same whether or not its
        state was read before it was taken)."""
        return dict(self.totals) if self.totals is not None else R.spot_totals(self.stakes)

    @property
    def stakers(self) -> list[str]:
        """The players who stake and cut: everyone listed but the croupier (at an open table, the bettors who
        joined too)."""
        return [p for p in self.players if p != self.croupier]

    @property
    def open_seats(self) -> bool:
        return R.is_open(self.rules)

    def moment(self, now: datetime) -> datetime:
        """The time a command at ``now`` is recorded at (domain/recorder.py): what its deadline is read against,
        so that the audit, which runs it again at its first event's time, decides as it was decided."""
        return max(now, self.modified_on + timedelta(microseconds=1))

    def deadline_passed(self, now: datetime) -> bool:
        """Whether the betting window's deadline has passed for a command at ``now``: "the window closes at the
        first command at or after its deadline"."""
        return (self.phase == STAKES and self.window is not None
                and self.moment(now) >= datetime.fromisoformat(self.window["closes_at"]))

    # --- opening -----------------------------------------------------------------------------------

    @classmethod
    def _resolve_rules(cls, options: dict[str, Any], players: int) -> dict[str, Any]:
        return R.resolve_rules(options)  # the options depend on one another (the limits, the commission)

    @classmethod
    def _check_opening(cls, players: list[str], rules: dict[str, Any], roles: dict[str, Any]) -> None:
        stakers = [p for p in players if p != roles["croupier"]]
        R.check_croupier(roles["croupier"], stakers)
        R.check_named_players(stakers, rules)

    def _record_opening(self, rec: Recorder, roles: dict[str, Any]) -> None:
        rec(RolesAssigned, SERVICE, croupier=roles["croupier"])

    # --- what the table waits for ------------------------------------------------------------------

    def expects(self) -> list[dict[str, Any]]:
        """Every command legal now, with the bounds legal now: a stake per player and spot (the amounts that
        keep the total within the limits, a banker stake's multiple), the cut's range."""
        p = self.phase
        if p == SHUFFLE:
            return [self.expect("shuffle", self.croupier)]
        if p == CUT:
            low, high = C.cut_positions(len(self.shoe["cards"]))
            return [self.expect("cut", name, position={"min": low, "max": high}) for name in self.cutters]
        if p == STAKES:
            rooms = {spot: R.exposure_room(self.rules, self.totals_now, spot) for spot in R.SPOTS}
            # An open table's stakes are offered once, to anyone, with a newcomer's bounds: listing hundreds of
            # bettors would make every command's answer as long as the crowd (a player's own view lists his own).
            stakers = [R.ANYONE] if self.open_seats else self.stakers
            out = [entry for name in stakers for entry in self._stake_entries(name, rooms)]
            if self.window is None and R.timed(self.rules):
                low, high = R.window_bounds(self.rules)
                out.append(self.expect("open_stakes", self.croupier, seconds={"min": low, "max": high}))
            if R.stakes_closable(self.stakes):
                out.append(self.expect("close_stakes", self.croupier))
            return out
        if p == DEAL:
            return [self.expect("deal", self.croupier)]
        return []

    @property
    def cutters(self) -> list[str]:
        """Who may cut: the players at the table; at an open table, whose bettors come and go, the croupier too."""
        return [*self.stakers, self.croupier] if self.open_seats else self.stakers

    def _expects_past_deadline(self) -> list[dict[str, Any]]:
        """What the table waits for once its window's deadline has passed, whatever ``expects`` listed before it:
        the deal (which records the close first) or "no more bets"; a window nobody staked in, a new one."""
        if R.stakes_closable(self.stakes):
            return [self.expect("deal", self.croupier), self.expect("close_stakes", self.croupier)]
        low, high = R.window_bounds(self.rules)
        return [self.expect("open_stakes", self.croupier, seconds={"min": low, "max": high})]

    def _stake_entries(self, name: str, rooms: dict[str, int | None]) -> list[dict[str, Any]]:
        out = []
        for spot in R.SPOTS:
            room = R.stake_room(self.rules, self.stakes.get(name, {}), spot)
            if room is None:
                continue
            least, most, unit = room
            if rooms[spot] is not None:
                most = min(most, rooms[spot])  # type: ignore[type-var]
            if least > most:
                continue
            amount = {"min": least, "max": most, **({"multiple_of": unit} if unit > 1 else {})}
            out.append(self.expect("place_stake", name, spot={"choices": [spot]}, amount=amount))
        return out

    def house_seats(self) -> frozenset[str]:
        return frozenset({self.croupier}) if self.croupier else frozenset()

    def _may_issue(self, command: str, player: str, expects: list[dict[str, Any]]) -> bool:
        if command == "place_stake" and self.phase == STAKES and (player in self.stakers or self._may_join(player)):
            return True  # let the stake rules say exactly what is refused (limits, multiple, both hands)
        return super()._may_issue(command, player, expects)

    def _own(self, public: list[dict[str, Any]], seen: Any) -> list[dict[str, Any]]:  # type: ignore[override]
        """A player's own commands; at an open table, the stakes it offers to anyone read as his own, with the
        bounds his own stakes leave him."""
        own = Table._own(public, seen)
        me = seen.viewer.player
        if me is None or me == self.croupier or not any(e["player"] == R.ANYONE for e in public):
            return own
        rooms = {spot: R.exposure_room(self.rules, self.totals_now, spot) for spot in R.SPOTS}
        return own + self._stake_entries(me, rooms)

    def _may_join(self, player: str) -> bool:
        """At an open table anyone but the croupier may stake: his name is checked as he joins."""
        return self.open_seats and player != self.croupier and player not in self.players

    def handle(self, command: str, player: str, args: dict[str, Any], now: datetime, new_seed: Callable[[], bytes],
               expects: list[dict[str, Any]] | None = None, by: str | None = None,
               new_salt: Callable[[], str] | None = None) -> None:
        """As every table's, but that once a betting window's deadline has passed the stakes are closed: a stake
        is refused with the deadline, and the table waits for the deal (or a new window), whatever its
        ``expects`` of before the deadline said."""
        if self.deadline_passed(now):
            if command == "place_stake":
                raise StakesAreClosed(self.window["closes_at"], self.window["seconds"])
            expects = self._expects_past_deadline()
        super().handle(command, player, args, now, new_seed, expects, by=by, new_salt=new_salt)

    def _why_not(self, command: str, player: str, wanted: str) -> str | None:
        if player == self.croupier and (command == "place_stake" or (command == "cut" and not self.open_seats)):
            does = "cut the shoe" if command == "cut" else "stake"
            return f"{player} is the croupier, who runs the table and does not {does}; the table waits for {wanted}."
        if player != self.croupier and command in CROUPIER_COMMANDS and self.phase in (SHUFFLE, STAKES, DEAL):
            return (f"Only the croupier ({self.croupier}) may {CROUPIER_COMMANDS[command]}; "
                    f"the table waits for {wanted}.")
        if command == "close_stakes" and self.phase == STAKES and not R.stakes_closable(self.stakes):
            return f"No stake is on the table yet: a coup nobody backs is not dealt; the table waits for {wanted}."
        return None

    def phase_description(self) -> str:
        return {
            SHUFFLE: "the croupier must shuffle a new shoe",
            CUT: "a player must cut the shoe",
            STAKES: "stakes are being placed",
            DEAL: "the croupier must deal the coup",
        }.get(self.phase, self.phase)

    # --- commands ----------------------------------------------------------------------------------

    @command("shuffle", seeded=True)
    def _shuffle_shoe(self, rec: Recorder, player: str, new_seed: Callable[[], bytes]) -> None:
        """The croupier shuffles all the decks together into a new shoe."""
        self._shuffle(rec, player, "shoe", self.rules["decks"], new_seed())

    @command("cut", position=POSITION)
    def _cut(self, rec: Recorder, player: str, position: int) -> None:
        """A player cuts the shoe; its first card is then turned and that many cards burned face down."""
        self._cut_shoe(rec, player, position, *C.cut_positions(len(self.shoe["cards"])))
        turned = self._take(rec, self.croupier, BURN, True)
        count = C.burn_count(turned)
        for _ in range(count):
            self._take(rec, self.croupier, BURN, False)
        rec(CardsBurned, self.croupier, shoe=self.shoe["number"], turned=turned, burned=count)

    @command("place_stake", spot=SPOT, amount=STAKE)
    def _place_stake(self, rec: Recorder, player: str, spot: str, amount: int) -> None:
        """A player backs the player, the banker or a tie; stakes on a spot add up within the table's limits
        and the table's exposure. At an open table a player not yet at it joins with his first stake."""
        total = R.check_stake(self.rules, self.stakes.get(player, {}), spot, amount)
        R.check_exposure(self.rules, self.totals_now, spot, amount)
        coup = self.coup if self.stakes else self.coup + 1  # a coup begins with its first stake
        if player not in self.players:
            self._check_bettor(player)
            rec(BettorJoined, SERVICE, player=player)
        rec(StakePlaced, player, coup=coup, player=player, spot=spot, amount=amount, total=total)

    def _check_bettor(self, player: str) -> None:
        """A bettor's name, as a listed player's is checked at the opening: allowed, and not one that reads as,
        or looks like, a name already at the table."""
        validate_name(player)
        if len(self.players) >= R.MAX_BETTORS + R.MAX_PLAYERS + 1:
            raise R.StakeRefused("player", f"This open table has its {R.MAX_BETTORS} bettors; no one else may join it.")
        refuse_one_name_written_twice([*self.players, player])
        refuse_names_that_look_alike([*self.players, player])

    @command("open_stakes", seconds=SECONDS)
    def _open_stakes(self, rec: Recorder, player: str, seconds: int) -> None:
        """The croupier opens the stakes of the coup for a number of seconds: the first command at or after
        the deadline finds them closed."""
        R.check_window(self.rules, seconds)
        closes_at = format_timestamp(self.moment(rec.now) + timedelta(seconds=seconds))
        rec(StakesOpened, player, coup=self.coup if self.stakes else self.coup + 1, seconds=seconds, closes_at=closes_at)

    @command("close_stakes")
    def _close_stakes(self, rec: Recorder, player: str) -> None:
        """"No more bets": the croupier closes the stakes of the coup."""
        rec(StakesClosed, player, coup=self.coup, stakes={p: dict(s) for p, s in self.stakes.items()})

    @command("deal")
    def _deal(self, rec: Recorder, player: str) -> None:
        """The croupier deals the coup (player, banker, player, banker, then each third card the rules call
        for) and it is settled at once. After a betting window's deadline it first records that the stakes
        closed (the rules' event: the timer closed them, not the croupier)."""
        if self.phase == STAKES:
            rec(StakesClosed, DEALER_RULE, coup=self.coup, stakes={p: dict(s) for p, s in self.stakes.items()})
        start = self.shoe["dealt"]
        coup = C.play_coup(self.shoe["cards"][start : start + C.LONGEST_COUP])
        for to in C.DEAL_ORDER:
            self._take(rec, player, to, True)
        if not coup.natural:
            self._third_cards(rec, player, coup)
        payments = R.settlement(self.stakes, coup.outcome, self.rules)  # read before the decision clears them
        rec(CoupDecided, DEALER_RULE, coup=self.coup, player_hand=list(coup.player), banker_hand=list(coup.banker),
            player_total=coup.player_total, banker_total=coup.banker_total, natural=coup.natural, outcome=coup.outcome)
        for p in payments:
            self._pay(rec, DEALER_RULE, p["payer"], p["payee"], p["amount"], f"{p['spot']} {p['reason']}")
        self._end_of_coup(rec, start)

    def _third_cards(self, rec: Recorder, croupier: str, coup: C.Coup) -> None:
        """No natural: the player's rule, then the banker's, each recorded with its reason, and the cards
        they call for."""
        player_two, banker_two = hand_total(coup.player[:2]), hand_total(coup.banker[:2])
        player_draws = len(coup.player) == 3
        rec(DrawDecided, DEALER_RULE, coup=self.coup, hand=R.PLAYER, total=player_two,
            decision=DRAW if player_draws else STAND, rule=C.player_rule_text(player_two))
        if player_draws:
            self._take(rec, croupier, R.PLAYER, True)
        banker_draws = len(coup.banker) == 3
        rec(DrawDecided, DEALER_RULE, coup=self.coup, hand=R.BANKER, total=banker_two,
            decision=DRAW if banker_draws else STAND, rule=C.banker_rule_text(banker_two, coup.player_third))
        if banker_draws:
            self._take(rec, croupier, R.BANKER, True)

    def _end_of_coup(self, rec: Recorder, start: int) -> None:
        """The stop card: the coup in which it comes out is finished and one more is played; then the shoe
        ends and its seed is revealed."""
        shoe = self.shoe
        state = C.after_coup(start, shoe["dealt"], len(shoe["cards"]), self.rules["stop_card"], self.last_coup)
        if state == C.LAST_COUP:
            rec(StopCardCameOut, DEALER_RULE, shoe=shoe["number"], coup=self.coup)
        elif state == C.SHOE_OVER:
            rec(ShoeFinished, DEALER_RULE, shoe=shoe["number"], dealt=shoe["dealt"])
            self._reveal(rec)

    # The command that recorded a group of events, by its first event (for the audit).
    FIRST_EVENTS = {
        "ShoeShuffled": "shuffle",
        "ShoeCut": "cut",
        "StakePlaced": "place_stake",
        "StakesOpened": "open_stakes",
        "StakesClosed": "close_stakes",
        "CardDealt": "deal",
    }

    def _command_from(self, first: dict[str, Any], events: list[dict[str, Any]]) -> Any:
        """A bettor's first stake begins with his joining; a deal after a window's deadline with the close the
        rules recorded."""
        if first["type"] == "BettorJoined" and len(events) > 1:
            data = events[1]["data"]
            return "place_stake", events[1]["actor"], {"spot": data["spot"], "amount": data["amount"]}
        if first["type"] == "StakesClosed" and first["actor"] == DEALER_RULE:
            return "deal", self.croupier, {}
        return None

    # --- applying events ---------------------------------------------------------------------------

    @applies(RolesAssigned)
    def _roles_assigned(self, e: RolesAssigned) -> None:
        self.croupier = e.croupier
        self.phase = SHUFFLE

    @applies(ShoeShuffled)
    def _shoe_shuffled_here(self, e: ShoeShuffled) -> None:
        self.phase = CUT
        self.turned, self.burned, self.discarded = None, [], 0
        self.hands = {R.PLAYER: [], R.BANKER: []}
        self.result = None
        self.last_coup = False

    @applies(ShoeCut)
    def _shoe_cut_here(self, e: ShoeCut) -> None:
        self.phase = BURNING

    @applies(CardDealt)
    def _card_dealt_here(self, e: CardDealt) -> None:
        if e.to != BURN:
            self.hands[e.to].append(e.card)
        elif self.turned is None:
            self.turned = e.card
        else:
            self.burned.append(e.card)

    @applies(CardsBurned)
    def _cards_burned(self, e: CardsBurned) -> None:
        self.phase = STAKES

    @applies(BettorJoined)
    def _bettor_joined(self, e: BettorJoined) -> None:
        self.players.append(e.player)
        self.balances[e.player] = 0

    @applies(StakesOpened)
    def _stakes_opened(self, e: StakesOpened) -> None:
        self.window = {"seconds": e.seconds, "closes_at": e.closes_at}

    @applies(StakePlaced)
    def _stake_placed(self, e: StakePlaced) -> None:
        totals = self.totals_now  # read before the player's total changes: the old stakes' sum
        totals[e.spot] += e.amount
        self.totals = totals
        self.coup = e.coup
        self.stakes.setdefault(e.player, {})[e.spot] = e.total

    @applies(StakesClosed)
    def _stakes_closed(self, e: StakesClosed) -> None:
        # The last coup's cards leave the table for the discard as the next coup is dealt.
        self.discarded += len(self.hands[R.PLAYER]) + len(self.hands[R.BANKER])
        self.hands = {R.PLAYER: [], R.BANKER: []}
        self.result = None
        self.window = None
        self.phase = DEAL

    @applies(CoupDecided)
    def _coup_decided(self, e: CoupDecided) -> None:
        self.result = {"coup": e.coup, "outcome": e.outcome, "player_total": e.player_total,
                       "banker_total": e.banker_total, "natural": e.natural}
        payments = R.settlement(self.stakes, e.outcome, self.rules)
        self.settling = tuple((p["payee"] if p["payer"] == R.HOUSE else p["payer"], p["spot"]) for p in payments)
        self.unpaid = {p: dict(s) for p, s in self.stakes.items()} if self.settling else {}
        self.stakes = {}
        self.totals = None
        self.phase = STAKES

    @applies(PaymentMade)
    def _stake_paid(self, e: PaymentMade) -> None:
        """A stake leaves the felt with its last payment (a won banker stake's commission follows its win); a
        push, which moves no money, with the coup's last payment."""
        if not getattr(self, "settling", ()):
            return
        paid, self.settling = self.settling[0], self.settling[1:]
        if not self.settling:
            self.unpaid = {}
        elif paid not in self.settling:
            left = {p: {s: a for s, a in spots.items() if (p, s) != paid} for p, spots in self.unpaid.items()}
            self.unpaid = {p: spots for p, spots in left.items() if spots}

    @applies(RoundVoided)
    def _round_voided_here(self, e: RoundVoided) -> None:
        if not e.settled:  # its stakes went back: the table takes stakes for a new coup
            self.stakes = {}
            self.totals = None
            self.phase = STAKES

    @applies(StakeCorrected)
    def _stake_corrected(self, e: StakeCorrected) -> None:
        spots = self.stakes.setdefault(e.player, {})
        if e.amount:
            spots[e.spot] = e.amount
        else:
            spots.pop(e.spot, None)
        if not spots:
            del self.stakes[e.player]
        self.totals = None  # counted again from the stakes as corrected

    @applies(StopCardCameOut)
    def _stop_card_came_out(self, e: StopCardCameOut) -> None:
        self.last_coup = True

    @applies(ShoeFinished)
    def _shoe_finished(self, e: ShoeFinished) -> None:
        self.phase = SHOE_OVER

    @applies(ShoeRevealed)
    def _shoe_revealed_here(self, e: ShoeRevealed) -> None:
        self.phase = SHUFFLE
