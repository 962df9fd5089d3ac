"""The Chemin de fer table aggregate (docs/rules/chemin-de-fer.md).

Commands (``@command``) validate against the rules in rules.py, then record past-tense events; handlers
(``@applies``) only assign state. Phases name what the table waits for:

    seating -> shuffle -> cut -> bank -> stakes -> close -> deal -> punter_draw -> banker_draw -> (settled)
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.cards import point_value
from domain.chemin_de_fer import rules as R
from domain.chemin_de_fer.events import (
    BankPassed,
    BankPosted,
    CoupCalledOff,
    CoupSettled,
    CoupTied,
    ExcessWithdrawn,
    HandStood,
    HandsShown,
    SeatsDrawn,
    ShoeFinished,
    StakePassed,
    StakePlaced,
    StakesClosed,
)
from domain.corrections import PaymentReversed, RoundVoided, StakeCorrected
from domain.errors import BadArgument, IllegalDraw, StakeAboveBank
from domain.events import DEALER_RULE, SERVICE, CardDealt, ShoeCut, ShoeRevealed, ShoeShuffled
from domain.game import FieldSpec, applies, command
from domain.recorder import Recorder
from domain.table import Issued, Table

SEATING, SHUFFLE, CUT, BANK, STAKES, CLOSE, DEAL = "seating", "shuffle", "cut", "bank", "stakes", "close", "deal"
PUNTER_DRAW, BANKER_DRAW = "punter_draw", "banker_draw"


POSITION = FieldSpec("int", doc="Where the shoe is cut: from 1 to the shoe's size less 1 (A.2).")
BANK_AMOUNT = FieldSpec("amount", doc="The bank, in whole units (A.3).")
STAKE_AMOUNT = FieldSpec("amount", doc="The stake, at most the uncovered rest of the bank (A.4).")


class ChemindeferTable(Table):
    def __init__(self, game: str, players: list[str], rules: dict[str, Any], players_act: str | None = None,
                 chain: int | None = None, table_id: str | None = None) -> None:
        super().__init__(game, players, rules, players_act, chain, table_id)
        self.phase = SEATING
        self.resume = BANK  # where play resumes after a new shoe is shuffled and cut (A.2)
        self.seats: list[str] = []
        self.banker_seat = 0
        self.bank = 0
        self.stakes: dict[str, int] = {}
        self.spoken: list[str] = []
        self.punter = ""
        self.hands: dict[str, list[str]] = {"punter": [], "banker": []}
        self.punter_third: int | None = None  # point value of the punter's third card, for A.10
        self.can_pass_bank = False
        self.coup = 0
        self.stop_zone_reached = False
        self.redeal = False  # a tied coup is dealt again: a new round from its first card
        self.lots: list[dict[str, str]] = []

    # --- who is who --------------------------------------------------------------------------------

    @property
    def banker(self) -> str:
        return self.seats[self.banker_seat] if self.seats else ""

    @property
    def cutter(self) -> str:
        return self.seats[R.cutter_seat(self.banker_seat, len(self.seats))]

    def next_speaker(self) -> str | None:
        """A.4: the first player, clockwise from the banker's left, who has neither staked nor passed."""
        if R.bank_covered(self.bank, self.stakes):
            return None
        for seat in R.stake_order(self.banker_seat, len(self.seats)):
            if self.seats[seat] not in self.spoken:
                return self.seats[seat]
        return None

    def expects(self) -> list[dict[str, Any]]:
        """Every command that is legal now, one entry per command and player, with the bounds legal now."""
        p = self.phase
        if p == SEATING:
            return [self.expect("draw_seats", name) for name in self.players]
        if p == SHUFFLE:
            return [self.expect("shuffle", self.banker)]
        if p == CUT:
            low, high = R.cut_positions(len(self.shoe["cards"]))
            return [self.expect("cut", self.cutter, position={"min": low, "max": high})]
        out = []
        if p == BANK:
            out.append(self.expect("post_bank", self.banker, amount={"min": 1, "max": R.MAX_BANK}))
        elif p == STAKES:
            speaker = self.next_speaker()
            if speaker:
                most = R.largest_stake_allowed(self.bank, self.stakes)
                out += [self.expect("place_stake", speaker, amount={"min": 1, "max": most}),
                        self.expect("pass", speaker)]
        elif p == CLOSE:
            out.append(self.expect("close_stakes", self.banker))
        elif p == DEAL:
            out.append(self.expect("deal", self.banker))
        elif p in (PUNTER_DRAW, BANKER_DRAW):
            who = self.punter if p == PUNTER_DRAW else self.banker
            out += [self.expect(c, who) for c in self._legal_choices()]
        if self.can_pass_bank and p in (BANK, STAKES) and not self.spoken:
            out.append(self.expect("pass_bank", self.banker))
        return out

    def _choices_seen(self, expects: list[dict[str, Any]], seen: Any) -> list[dict[str, Any]]:
        """A forced draw or stand tells what the hand adds up to: one who may not see the hand is offered
        both (the rules refuse the forbidden one, as ever)."""
        who = self._decider()
        choices = [e for e in expects if e["command"] in (R.DRAW, R.STAND)]
        if who and len(choices) == 1 and seen.hides_hand_of(who):
            return [self.expect(R.DRAW, who), self.expect(R.STAND, who)] + [e for e in expects if e not in choices]
        return expects

    # --- commands ----------------------------------------------------------------------------------

    def _may_issue(self, command: str, player: str, expects: list[dict[str, Any]]) -> bool:
        if command in (R.DRAW, R.STAND) and player == self._decider():
            return True  # let the draw rule itself say why a forced choice is refused
        return super()._may_issue(command, player, expects)

    def _why_not(self, command: str, player: str, wanted: str) -> str | None:
        if command in ("place_stake", "pass") and player == self.banker:
            return f"{player} holds the bank and does not stake against it; the table waits for {wanted}."
        return None

    def phase_description(self) -> str:
        return {
            SEATING: "seats are drawn by lots first",
            SHUFFLE: "the shoe must be shuffled",
            CUT: "the shoe must be cut",
            BANK: "the banker must post a bank",
            STAKES: "stakes are being placed",
            CLOSE: "the banker must close the stakes",
            DEAL: "the banker must deal",
            PUNTER_DRAW: "the punter decides on a third card",
            BANKER_DRAW: "the banker decides on a third card",
        }[self.phase]

    @command("draw_seats", seeded=True)
    def _draw_seats(self, rec: Recorder, player: str, new_seed: Callable[[], bytes]) -> None:
        """A.1: seats by lots from a fresh single deck; ties draw again among themselves, highest group first."""
        order: list[str] = []
        pending = [list(self.players)]  # groups still to be ordered, highest first
        self._shuffle(rec, SERVICE, "lots", 1, new_seed())
        while pending:
            group = pending.pop(0)
            if len(group) == 1:
                order.append(group[0])
                continue
            draws = []
            for name in group:
                if self.shoe["dealt"] >= len(self.shoe["cards"]):
                    # A lots deck run dry (vanishingly rare): reveal it and take a fresh one.
                    self._reveal(rec)
                    self._shuffle(rec, SERVICE, "lots", 1, new_seed())
                draws.append((name, self._take(rec, name, name, True)))
            pending = R.lots_groups(draws) + pending
        rec(SeatsDrawn, SERVICE, seats=order, banker=order[0])
        self._reveal(rec)

    @command("shuffle", seeded=True)
    def _shuffle_shoe(self, rec: Recorder, player: str, new_seed: Callable[[], bytes]) -> None:
        """A.2: the banker shuffles all the decks together."""
        self._shuffle(rec, player, "shoe", self.rules["decks"], new_seed())

    @command("cut", position=POSITION)
    def _cut(self, rec: Recorder, player: str, position: int) -> None:
        """A.2: the player to the banker's right cuts at 1..N-1."""
        self._cut_shoe(rec, player, position, *R.cut_positions(len(self.shoe["cards"])))

    @command("post_bank", amount=BANK_AMOUNT)
    def _post_bank(self, rec: Recorder, player: str, amount: int) -> None:
        """A.3: the banker puts up the bank, an amount above 0."""
        if amount > R.MAX_BANK:
            raise BadArgument("amount", f"A bank is at most {R.MAX_BANK}; got {amount}.")
        rec(BankPosted, player, banker=player, amount=amount)

    @command("place_stake", amount=STAKE_AMOUNT)
    def _place_stake(self, rec: Recorder, player: str, amount: int) -> None:
        """A.4: a stake, at most the uncovered rest of the bank."""
        most = R.largest_stake_allowed(self.bank, self.stakes)
        if amount > most:
            raise StakeAboveBank(amount, most)
        rec(StakePlaced, player, player=player, amount=amount)

    @command("pass")
    def _pass(self, rec: Recorder, player: str) -> None:
        """A.4: the player speaks without staking."""
        rec(StakePassed, player, player=player)
        if self.phase == CLOSE and not self.stakes:
            rec(CoupCalledOff, DEALER_RULE, banker=self.banker, reason="every player passed")

    @command("close_stakes")
    def _close_stakes(self, rec: Recorder, player: str) -> None:
        """A.5 "Zametano": the banker closes the stakes; A.6: the largest stake plays the hand."""
        at_risk = R.bank_at_risk(self.bank, self.stakes)
        rec(
            StakesClosed,
            player,
            coup=self.coup,
            stakes=dict(self.stakes),
            punter=R.choose_punter(self.stakes),
            bank=self.bank,
        )
        if at_risk < self.bank:
            rec(ExcessWithdrawn, player, banker=player, amount=self.bank - at_risk, bank_at_risk=at_risk)

    @command("deal")
    def _deal(self, rec: Recorder, player: str) -> None:
        """A.7: the banker deals punter, banker, punter, banker, face down."""
        for to in (self.punter, player, self.punter, player):
            self._take(rec, player, to, False)
        self._advance(rec)

    @command("draw")
    def _draw(self, rec: Recorder, player: str) -> None:
        """A.9 / A.10: a third card, face up."""
        self._choose(rec, player, R.DRAW)
        self._advance(rec)

    @command("stand")
    def _stand(self, rec: Recorder, player: str) -> None:
        """A.9 / A.10: no third card."""
        self._choose(rec, player, R.STAND)
        self._advance(rec)

    @command("pass_bank")
    def _give_up_bank(self, rec: Recorder, player: str) -> None:
        """A.12: the banker gives the bank up, after a settled coup and before the first player speaks."""
        self._pass_bank(rec, player, "given up")

    # The command that recorded a group of events, by its first event (for the audit).
    FIRST_EVENTS = {
        "ShoeCut": "cut",
        "BankPosted": "post_bank",
        "StakePlaced": "place_stake",
        "StakePassed": "pass",
        "StakesClosed": "close_stakes",
        "HandStood": "stand",
        "BankPassed": "pass_bank",
    }

    def _command_from(self, first: dict[str, Any], events: list[dict[str, Any]]) -> Issued | None:
        kind, data = first["type"], first["data"]
        if kind == "ShoeShuffled":
            if data["deck"] == "lots":
                return "draw_seats", self.players[0], {}  # any player may ask; the events do not depend on who
            return "shuffle", first["actor"], {}
        if kind == "CardDealt":
            return ("draw" if data["face_up"] else "deal"), first["actor"], {}
        return None

    # --- sequencing within a coup ------------------------------------------------------------------

    def _decider(self) -> str | None:
        return {PUNTER_DRAW: self.punter, BANKER_DRAW: self.banker}.get(self.phase)

    def _legal_choices(self) -> list[str]:
        choice = self._choice_now()
        return [R.DRAW, R.STAND] if choice == R.EITHER else [choice]

    def _choice_now(self) -> str:
        if self.phase == PUNTER_DRAW:
            return R.punter_choice(R.hand_total(self.hands["punter"]), self.rules["draw_rule"])
        return R.banker_choice(R.hand_total(self.hands["banker"]), self.punter_third, self.rules["draw_rule"])

    def _rule_text(self) -> str:
        rule = self.rules["draw_rule"]
        if self.phase == PUNTER_DRAW:
            return R.punter_rule_text(R.hand_total(self.hands["punter"]), rule)
        return R.banker_rule_text(R.hand_total(self.hands["banker"]), self.punter_third, rule)

    def _choose(self, rec: Recorder, actor: str, choice: str) -> None:
        """A.9 / A.10: at most one third card, face up; a choice the draw rule forbids is refused."""
        legal = self._choice_now()
        hand = "punter" if self.phase == PUNTER_DRAW else "banker"
        who = self.punter if hand == "punter" else self.banker
        if legal not in (R.EITHER, choice):
            raise IllegalDraw(choice.capitalize(), self._rule_text(), legal, about=who)
        if choice == R.DRAW:
            self._take(rec, actor, who, True)
        else:
            rec(HandStood, actor, player=who, hand=hand, total=R.hand_total(self.hands[hand]))

    def _advance(self, rec: Recorder) -> None:
        """Plays on as far as the rules decide alone: naturals, forced choices (auto_forced), showdown."""
        punter, banker = self.hands["punter"], self.hands["banker"]
        if self.phase == PUNTER_DRAW and (R.is_natural(punter) or R.is_natural(banker)):
            self._showdown(rec, natural=True)  # A.8: both shown at once, the coup is decided
            return
        while self.phase in (PUNTER_DRAW, BANKER_DRAW):
            choice = self._choice_now()
            if choice == R.EITHER or not self.rules["auto_forced"]:
                return  # a decision for a person
            self._choose(rec, DEALER_RULE, choice)
        self._showdown(rec, natural=False)

    def _showdown(self, rec: Recorder, natural: bool) -> None:
        """A.11: the higher total wins; a tie re-deals with the same stakes and bank."""
        punter, banker = self.hands["punter"], self.hands["banker"]
        pt, bt = R.hand_total(punter), R.hand_total(banker)
        rec(HandsShown, DEALER_RULE, punter=list(punter), banker=list(banker),
            punter_total=pt, banker_total=bt, natural=natural)
        winner = R.coup_winner(pt, bt)
        if winner == R.TIE:
            rec(CoupTied, DEALER_RULE, coup=self.coup, total=pt)
        else:
            self._settle(rec, winner, pt, bt)
        if self.stop_zone_reached:
            rec(ShoeFinished, DEALER_RULE, shoe=self.shoe["number"], dealt=self.shoe["dealt"])
            self._reveal(rec)

    def _settle(self, rec: Recorder, winner: str, punter_total: int, banker_total: int) -> None:
        """A.11 / A.12: the payments; a banker who wins keeps the bank, one who loses loses it."""
        percent = self.rules["commission_percent"]
        next_bank = R.bank_after_win(self.bank, self.stakes, percent) if winner == R.BANKER else 0
        payments = R.settlement(self.stakes, self.banker, winner, percent)
        rec(CoupSettled, DEALER_RULE, coup=self.coup, winner=winner,
            punter_total=punter_total, banker_total=banker_total, next_bank=next_bank)
        for p in payments:
            self._pay(rec, DEALER_RULE, **p)
        if winner == R.PUNTER:
            self._pass_bank(rec, DEALER_RULE, "lost")

    def _pass_bank(self, rec: Recorder, actor: str, reason: str) -> None:
        seat = R.next_banker_seat(self.banker_seat, len(self.seats))
        rec(BankPassed, actor, from_banker=self.banker, to_banker=self.seats[seat], reason=reason)

    # --- applying events ---------------------------------------------------------------------------

    @applies(ShoeShuffled)
    def _shoe_shuffled_here(self, e: ShoeShuffled) -> None:
        if e.deck == "shoe":
            self.phase = CUT

    @applies(ShoeCut)
    def _shoe_cut_here(self, e: ShoeCut) -> None:
        self.phase = self.resume
        self.stop_zone_reached = False

    @applies(CardDealt)
    def _card_dealt_here(self, e: CardDealt) -> None:
        if self._deck_numbered(e.shoe)["deck"] == "lots":
            self.lots.append({"player": e.to, "card": e.card})
            return
        if R.takes_stop_zone(e.position, len(self.shoe["cards"]), self.rules["stop_card"]):
            self.stop_zone_reached = True
        if self.phase == DEAL:
            if self.redeal:
                self.coup += 1
                self.redeal = False
            hand = "banker" if e.to == self.banker else "punter"
            self.hands[hand].append(e.card)
            if len(self.hands["banker"]) == 2:
                self.phase = PUNTER_DRAW
        elif self.phase == PUNTER_DRAW:
            self.hands["punter"].append(e.card)
            self.punter_third = point_value(e.card)
            self.phase = BANKER_DRAW
        elif self.phase == BANKER_DRAW:
            self.hands["banker"].append(e.card)
            self.phase = "showdown"

    @applies(SeatsDrawn)
    def _seats_drawn(self, e: SeatsDrawn) -> None:
        self.seats = list(e.seats)
        self.banker_seat = 0
        self.phase = SHUFFLE
        self.resume = BANK

    @applies(ShoeRevealed)
    def _shoe_revealed_here(self, e: ShoeRevealed) -> None:
        if self._deck_numbered(e.shoe)["deck"] == "shoe":
            # A.2: play resumes where it stood, after a new shuffle and cut
            self.resume = self.phase
            self.phase = SHUFFLE

    @applies(BankPosted)
    def _bank_posted(self, e: BankPosted) -> None:
        self.bank = e.amount
        self._new_bank(STAKES)

    @applies(StakePlaced)
    def _stake_placed(self, e: StakePlaced) -> None:
        if not self.stakes:
            self.coup += 1  # a round is one coup, from its first stake
        self.stakes[e.player] = e.amount
        self._spoke(e.player)

    @applies(StakePassed)
    def _stake_passed(self, e: StakePassed) -> None:
        self._spoke(e.player)

    def _spoke(self, player: str) -> None:
        self.spoken.append(player)
        if self.next_speaker() is None:
            self.phase = CLOSE

    @applies(CoupCalledOff)
    def _coup_called_off(self, e: CoupCalledOff) -> None:
        self.spoken = []
        self.phase = BANK
        self.can_pass_bank = True

    @applies(StakesClosed)
    def _stakes_closed(self, e: StakesClosed) -> None:
        self.punter = e.punter
        self.can_pass_bank = False
        self.phase = DEAL

    @applies(ExcessWithdrawn)
    def _excess_withdrawn(self, e: ExcessWithdrawn) -> None:
        self.bank = e.bank_at_risk

    @applies(HandStood)
    def _hand_stood(self, e: HandStood) -> None:
        self.phase = BANKER_DRAW if e.hand == "punter" else "showdown"

    @applies(HandsShown)
    def _hands_shown(self, e: HandsShown) -> None:
        self.phase = "settling"

    @applies(CoupTied)
    def _coup_tied(self, e: CoupTied) -> None:
        self._clear_hands()
        self.redeal = True
        self.phase = DEAL

    @applies(CoupSettled)
    def _coup_settled(self, e: CoupSettled) -> None:
        self._clear_hands()
        self.stakes = {}
        self.spoken = []
        self.punter = ""
        if e.winner == R.BANKER:
            self.bank = e.next_bank  # A.12: the winner keeps the bank, stakes open again at once
            self.phase = STAKES
            self.can_pass_bank = True

    @applies(BankPassed)
    def _bank_passed(self, e: BankPassed) -> None:
        self.banker_seat = self.seats.index(e.to_banker)
        self.bank = 0
        self._new_bank(BANK)

    @applies(RoundVoided)
    def _round_voided_here(self, e: RoundVoided) -> None:
        if not e.settled:  # its stakes went back: the same banker takes stakes again on the bank as it stands
            self._clear_hands()
            self.redeal = False
            self.punter = ""
            self._new_bank(STAKES)

    @applies(StakeCorrected)
    def _stake_corrected(self, e: StakeCorrected) -> None:
        if e.amount:
            self.stakes[e.player] = e.amount
        else:
            self.stakes.pop(e.player, None)
        self.phase = CLOSE if self.next_speaker() is None else STAKES  # the bank covered, or not, now

    @applies(PaymentReversed)
    def _payment_reversed_here(self, e: PaymentReversed) -> None:
        # A banker who kept the bank after a win keeps it at what it held before the coup (A.12 undone).
        kept = self.phase == STAKES and self.can_pass_bank and not self.stakes
        if kept and e.payer == self.banker:
            self.bank -= e.amount
        elif kept and e.payee == self.banker:
            self.bank += e.amount

    def _new_bank(self, phase: str) -> None:
        self.stakes = {}
        self.spoken = []
        self.can_pass_bank = False
        self.phase = phase

    def _clear_hands(self) -> None:
        self.hands = {"punter": [], "banker": []}
        self.punter_third = None
