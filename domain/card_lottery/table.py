"""The Card lottery table aggregate (docs/rules/card-lottery.md).

A game: both decks shuffled; stage 1 rounds (collect -> lay_out -> distribute -> deal -> reveal) until a
deck runs short; stage 2 (`beating`: lead -> beat | take, or `tricks`: play ...) until a holder is out
of cards; fines to the kitty; both decks revealed; the next game's pot starts from the kitty.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from domain.card_lottery import bounds as B
from domain.card_lottery import rules as R
from domain.card_lottery.events import (
    CardPlayed,
    CardsBeaten,
    CardsLed,
    CardsSetAside,
    CardsTaken,
    ContributionsCollected,
    GameEnded,
    LotteryCardsRevealed,
    PotDistributed,
    PrizeUnclaimed,
    PrizeWon,
    RolesAssigned,
    Stage1Ended,
    Stage2Began,
    Stage2Ended,
    TrickTaken,
)
from domain.cards import suit
from domain.corrections import RoundVoided
from domain.errors import BadArgument, IllegalPlay, InvalidPlayers, InvalidRules
from domain.events import DEALER_RULE, SERVICE, CardDealt, ShoeShuffled
from domain.game import FieldSpec, applies, command
from domain.recorder import Recorder
from domain.table import Issued, Table
from domain.words import counted

SHUFFLE, COLLECT, LAY_OUT, DISTRIBUTE, DEAL, REVEAL = "shuffle", "collect", "lay_out", "distribute", "deal", "reveal"
LEAD, BEAT, PLAY = "lead", "beat", "play"
BANKER_DECK, DEALER_DECK = "banker", "dealer"


DECK = FieldSpec("choice", choices=(BANKER_DECK, DEALER_DECK), doc="Which deck: the banker's or the dealer's.")
CONTRIBUTION = FieldSpec("amount", optional=True,
                         doc="What each holder pays this round; the rules' contribution if left out.")
AMOUNTS = FieldSpec("amounts", doc="The pot spread over the four lottery cards, in the order laid out (B.3).")
LED = FieldSpec("cards", doc="One card, or two of equal rank, from the hand.")
BEATERS = FieldSpec("cards", doc="A higher card of its suit for each led card, in the led order.")
CARD = FieldSpec("card", doc="A card from the hand; follow the led suit if you can.")


class CardLotteryTable(Table):
    FIRST_EVENTS = {
        "ShoeShuffled": "shuffle",
        "PotDistributed": "distribute",
        "LotteryCardsRevealed": "reveal",
        "CardsLed": "lead",
        "CardsBeaten": "beat",
        "CardsTaken": "take",
        "CardPlayed": "play",
    }

    def __init__(self, game: str, players: list[str], rules: dict[str, Any], players_act: str | None = None,
                 chain: int | None = None, table_id: str | None = None) -> None:
        super().__init__(game, players, rules, players_act, chain, table_id)
        self.banker = ""
        self.dealer = ""
        self.holders: list[str] = []
        self.phase = SHUFFLE
        self.stage = 1
        self.game_number = 1
        self.round = 0
        self.game_rounds = 0
        self.shuffled: list[str] = []
        self.lottery: list[str] = []
        self.amounts: list[int] = []
        self.hands: dict[str, list[str]] = {}
        self.set_aside: dict[str, list[str]] = {}
        self.penalty: dict[str, list[str]] = {}
        self.discarded: dict[str, list[str]] = {BANKER_DECK: [], DEALER_DECK: []}
        self.last_winner: str | None = None
        self.led: list[str] = []
        self.leader = ""
        self.target = ""
        self.trick: list[list[str]] = []  # [holder, card] in the order played
        self.turn = ""

    # --- opening -----------------------------------------------------------------------------------

    @classmethod
    def _check_opening(cls, players: list[str], rules: dict[str, Any], roles: dict[str, Any]) -> None:
        banker, dealer = roles["banker"], roles["dealer"]
        if banker == dealer:
            raise BadArgument("dealer", "The banker and the dealer are two different players.")
        holders = R.holders_of(players, banker, dealer, rules)
        if not R.MIN_HOLDERS <= len(holders) <= R.MAX_HOLDERS:
            raise InvalidPlayers(
                f"The card lottery has {R.MIN_HOLDERS} to {R.MAX_HOLDERS} holders besides the banker and the dealer; "
                f"these players give {len(holders)}."
            )
        if not R.pot_can_be_spread(R.round_pot(rules["contribution"], len(holders), 0)):
            raise InvalidRules(
                "contribution",
                f"A pot of {rules['contribution']} x {counted(len(holders), 'holder')} cannot be spread over four cards "
                f"of at least 1 each; the contribution must be at least {-(-R.MIN_POT // len(holders))}.",
            )

    def _record_opening(self, rec: Recorder, roles: dict[str, Any]) -> None:
        banker, dealer = roles["banker"], roles["dealer"]
        holders = R.holders_of(self.players, banker, dealer, self.rules)
        rec(RolesAssigned, SERVICE, banker=banker, dealer=dealer, holders=holders)

    # --- what the table waits for ------------------------------------------------------------------

    def expects(self) -> list[dict[str, Any]]:
        """Every command legal now, with the bounds legal now (the amounts, the cards that may be used)."""
        p = self.phase
        if p == SHUFFLE:
            return [
                {**self.expect("shuffle", who, deck={"choices": [deck]}), "deck": deck}
                for deck, who in ((BANKER_DECK, self.banker), (DEALER_DECK, self.dealer))
                if deck not in self.shuffled
            ]
        if p == COLLECT:
            least = self._least_contribution()
            return [self.expect("collect", self.banker, amount={"min": least, "max": R.MAX_CONTRIBUTION})]
        if p == DISTRIBUTE:
            pot = self.accounts.get("pot", 0)
            return [self.expect("distribute", self.banker, amounts={"count": R.LOTTERY_CARDS, "min": 1, "sum": pot})]
        if p in (LAY_OUT, REVEAL):
            return [self.expect(p, self.banker)]
        if p == DEAL:
            return [self.expect("deal", self.dealer)]
        if p == LEAD:
            return [self.expect("lead", self.leader, cards=B.lead_bounds(self.hands[self.leader]))]
        if p == BEAT:
            if R.can_beat(self.led, self.hands[self.target]):
                return [self.expect("beat", self.target, cards=B.beat_bounds(self.led, self.hands[self.target]))]
            return [self.expect("take", self.target)]
        if p == PLAY:
            return [self.expect("play", self.turn, card={"cards": B.playable(self.hands[self.turn], self.trick)})]
        return []

    def _least_contribution(self) -> int:
        """B.1: the smallest contribution that makes this round's pot at least 4."""
        return max(1, -(-(R.MIN_POT - self._carried()) // len(self.holders)))

    def _carried(self) -> int:
        kitty = self.accounts.get("kitty", 0) if self.game_rounds == 0 else 0
        return self.accounts.get("pot", 0) + kitty

    def _may_issue(self, command: str, player: str, expects: list[dict[str, Any]]) -> bool:
        if self.phase == BEAT and command in ("beat", "take") and player == self.target:
            return True  # let the rule itself say why a beat or a take is refused
        return super()._may_issue(command, player, expects)

    def phase_description(self) -> str:
        return {
            SHUFFLE: "both decks must be shuffled for the new game",
            COLLECT: "the banker collects the contributions",
            LAY_OUT: "the banker lays out the four lottery cards",
            DISTRIBUTE: "the banker spreads the pot over the lottery cards",
            DEAL: "the dealer deals three cards to each holder",
            REVEAL: "the banker reveals the lottery cards",
            LEAD: "stage 2: a holder leads",
            BEAT: "stage 2: the led cards must be beaten or taken",
            PLAY: "stage 2: a trick is being played",
        }.get(self.phase, self.phase)

    def _command_from(self, first: dict[str, Any], events: list[dict[str, Any]]) -> Issued | None:
        kind, actor, data = first["type"], first["actor"], first["data"]
        if kind == "PaymentMade":  # the first money of a collect
            collected = next(e for e in events if e["type"] == "ContributionsCollected")
            return "collect", actor, {"amount": collected["data"]["amount"]}
        if kind == "CardDealt":
            deck = self._deck_numbered(data["shoe"])["deck"]
            return ("lay_out" if deck == BANKER_DECK else "deal"), actor, {}
        return None

    # --- commands: stage 1 -------------------------------------------------------------------------

    @command("shuffle", seeded=True, deck=DECK)
    def _shuffle_deck(self, rec: Recorder, player: str, new_seed: Callable[[], bytes], deck: str) -> None:
        """B: the banker shuffles the banker's deck, the dealer the dealer's; neither deck is cut."""
        own = BANKER_DECK if player == self.banker else DEALER_DECK
        if deck != own:
            raise IllegalPlay(f"The {own} shuffles the {own}'s deck; send deck '{own}'.")
        self._shuffle(rec, player, deck, 1, new_seed())

    @command("collect", amount=CONTRIBUTION)
    def _collect(self, rec: Recorder, player: str, amount: int | None = None) -> None:
        """B.1: every holder pays the contribution; the pot adds what was carried (the kitty, at a game's
        first round)."""
        amount = self.rules["contribution"] if amount is None else amount
        if amount > R.MAX_CONTRIBUTION:
            raise IllegalPlay(f"A contribution is at most {R.MAX_CONTRIBUTION}; got {amount}.")
        kitty = self.accounts.get("kitty", 0) if self.game_rounds == 0 else 0
        carried = self._carried()
        pot = R.round_pot(amount, len(self.holders), carried)
        if not R.pot_can_be_spread(pot):
            raise IllegalPlay(
                f"This round's pot would be {pot} ({len(self.holders)} x {amount} + {carried} carried); "
                f"four lottery cards need at least {R.MIN_POT}. Collect at least "
                f"{self._least_contribution()} from each holder."
            )
        if kitty:
            self._pay(rec, player, "kitty", "pot", kitty, "kitty opens the game's pot")
        for holder in self.holders:
            self._pay(rec, player, holder, "pot", amount, "contribution")
        rec(ContributionsCollected, player, round=self.round + 1, amount=amount, pot=pot)

    @command("lay_out")
    def _lay_out(self, rec: Recorder, player: str) -> None:
        """B.2: the banker lays out four cards from the banker's deck, face down."""
        for _ in range(R.LOTTERY_CARDS):
            self._take(rec, player, self.banker, False, BANKER_DECK)

    @command("distribute", amounts=AMOUNTS)
    def _distribute(self, rec: Recorder, player: str, amounts: list[int]) -> None:
        """B.3: the pot spread over the four cards, at least 1 each, summing exactly to the pot."""
        problem = R.distribution_problem(amounts, self.accounts.get("pot", 0))
        if problem:
            raise IllegalPlay(problem)
        rec(PotDistributed, player, amounts=list(amounts))

    @command("deal")
    def _deal(self, rec: Recorder, player: str) -> None:
        """B.4: the dealer deals three cards to each holder, three at a time, in seat order."""
        for holder in self.holders:
            for _ in range(R.CARDS_PER_HOLDER):
                self._take(rec, player, holder, False, DEALER_DECK)

    @command("reveal")
    def _reveal_lottery(self, rec: Recorder, player: str) -> None:
        """B.5: prizes to the holders of matching cards, the rest carried (or to the banker); B.6 ends stage 1."""
        rec(LotteryCardsRevealed, player, cards=list(self.lottery), amounts=list(self.amounts))
        winning_cards = self._pay_prizes(rec)
        piles = {h: [c for c in self.hands[h] if c not in winning_cards] for h in self.holders}
        rec(CardsSetAside, DEALER_RULE, piles=piles)
        banker_left = len(self.decks[BANKER_DECK]["cards"]) - self.decks[BANKER_DECK]["dealt"]
        dealer_left = len(self.decks[DEALER_DECK]["cards"]) - self.decks[DEALER_DECK]["dealt"]
        if R.stage1_over(banker_left, dealer_left, len(self.holders)):
            pot = self.accounts.get("pot", 0)
            if pot:
                self._pay(rec, DEALER_RULE, "pot", "kitty", pot, "stage 1 over: the pot goes to the kitty")
            rec(Stage1Ended, DEALER_RULE, game=self.game_number, to_kitty=pot)
            self._begin_stage2(rec)

    def _pay_prizes(self, rec: Recorder) -> set[str]:
        """B.5: each lottery card pays its holder, or is carried or paid to the banker; the winning cards."""
        won = dict(R.prizes(self.lottery, self.hands))
        winning_cards = set()
        for index, (card, amount) in enumerate(zip(self.lottery, self.amounts)):
            holder = won.get(index)
            if holder is not None:
                winning_cards.add(card)
                rec(PrizeWon, DEALER_RULE, holder=holder, card=card, amount=amount)
                self._pay(rec, DEALER_RULE, "pot", holder, amount, f"prize on {card}")
            elif self.rules["unclaimed"] == R.TO_BANKER:
                rec(PrizeUnclaimed, DEALER_RULE, card=card, amount=amount, disposition="to banker")
                self._pay(rec, DEALER_RULE, "pot", self.banker, amount, f"unclaimed prize on {card}")
            else:
                rec(PrizeUnclaimed, DEALER_RULE, card=card, amount=amount, disposition="carried")
        return winning_cards

    # --- commands: stage 2 -------------------------------------------------------------------------

    def _begin_stage2(self, rec: Recorder) -> None:
        leader = R.stage2_leader(self.last_winner, self.holders)
        rec(Stage2Began, DEALER_RULE, variant=self.rules["stage2"], leader=leader,
            hands={h: list(self.set_aside[h]) for h in self.holders})
        empty = [h for h in self.holders if not self.hands[h]]
        if empty or len(self.holders) == 1:
            # A holder who starts stage 2 with no cards ends it at once; a lone holder has nobody to play.
            self._end_stage2(rec, empty[0] if empty else None)

    @command("lead", cards=LED)
    def _lead(self, rec: Recorder, player: str, cards: list[str]) -> None:
        """`beating`: one card, or two of equal rank, led at the next holder to the left."""
        problem = R.lead_problem(cards, self.hands[player])
        if problem:
            raise IllegalPlay(problem, about=player)
        rec(CardsLed, player, holder=player, at=R.left_of(self.holders, player), cards=list(cards))
        if not self.hands[player]:
            self._end_stage2(rec, player)

    @command("beat", cards=BEATERS)
    def _beat(self, rec: Recorder, player: str, cards: list[str]) -> None:
        """`beating`: each led card beaten by a higher card of its suit; the beater leads next."""
        hand = self.hands[player]
        if not R.can_beat(self.led, hand):
            raise IllegalPlay(f"You cannot beat {', '.join(self.led)} (no higher card of the suit): take them.",
                              about=player)
        problem = R.beat_problem(self.led, cards, hand)
        if problem:
            raise IllegalPlay(problem, about=player)
        rec(CardsBeaten, player, holder=player, led=list(self.led), cards=list(cards))
        if not self.hands[player]:
            self._end_stage2(rec, player)

    @command("take")
    def _take_led(self, rec: Recorder, player: str) -> None:
        """`beating`: a holder who cannot beat takes the led cards and loses the turn to lead."""
        hand = self.hands[player]
        if R.can_beat(self.led, hand):
            options = "; ".join(
                f"{led} with {', '.join(c for c in hand if R.beats(led, c))}" for led in self.led
            )
            raise IllegalPlay(f"You can beat, so you must: {options}. A take is allowed only when no beat exists.",
                              about=player)
        rec(CardsTaken, player, holder=player, cards=list(self.led), next_leader=R.left_of(self.holders, player))

    @command("play", card=CARD)
    def _play(self, rec: Recorder, player: str, card: str) -> None:
        """`tricks`: a card, following the led suit if you can; the highest of the led suit takes the trick."""
        hand = self.hands[player]
        led_suit = B.led_suit(self.trick)
        if card not in hand:
            raise IllegalPlay(f"{card} is not in your hand.", about=player)
        if not R.may_play(card, led_suit, hand):
            follow = [c for c in hand if suit(c) == led_suit]
            raise IllegalPlay(f"Follow the led suit: play one of {', '.join(follow)}.", about=player)
        rec(CardPlayed, player, holder=player, card=card)
        if len(self.trick) == len(self.holders):
            plays = [(h, c) for h, c in self.trick]
            rec(TrickTaken, DEALER_RULE, holder=R.trick_taker(plays), cards=[c for _, c in plays])
            if any(not self.hands[h] for h in self.holders):
                out = next(h for h in self.holders if not self.hands[h])
                self._end_stage2(rec, out)

    def _end_stage2(self, rec: Recorder, out: str | None) -> None:
        """Fines into the kitty (per card, or by suit), both decks revealed, the game over."""
        if self.rules["stage2"] == R.BEATING:
            fines = R.beating_fines(self.hands, self.penalty, out or "", self.rules["fine_per_card"])
        else:
            fines = R.suit_penalties(self.hands)
        rec(Stage2Ended, DEALER_RULE, variant=self.rules["stage2"], out=out, fines=fines)
        for holder, amount in fines.items():
            self._pay(rec, DEALER_RULE, holder, "kitty", amount, "fine")
        self._reveal(rec, BANKER_DECK)
        self._reveal(rec, DEALER_DECK)
        rec(GameEnded, DEALER_RULE, game=self.game_number, kitty=self.accounts.get("kitty", 0))

    # --- applying events ---------------------------------------------------------------------------

    @applies(RolesAssigned)
    def _roles_assigned(self, e: RolesAssigned) -> None:
        self.banker, self.dealer, self.holders = e.banker, e.dealer, list(e.holders)
        self._new_game_state()

    def _new_game_state(self) -> None:
        self.phase, self.stage, self.game_rounds = SHUFFLE, 1, 0
        self.shuffled = []
        self.hands = {h: [] for h in self.holders}
        self.set_aside = {h: [] for h in self.holders}
        self.penalty = {h: [] for h in self.holders}
        self.discarded = {BANKER_DECK: [], DEALER_DECK: []}
        self.last_winner = None
        self.led, self.trick, self.leader, self.target, self.turn = [], [], "", "", ""

    @applies(ShoeShuffled)
    def _deck_shuffled(self, e: ShoeShuffled) -> None:
        self.shuffled.append(e.deck)
        if len(self.shuffled) == 2:
            self.phase = COLLECT

    @applies(ContributionsCollected)
    def _contributions_collected(self, e: ContributionsCollected) -> None:
        self.round = e.round
        self.game_rounds += 1
        self.phase = LAY_OUT

    @applies(CardDealt)
    def _card_dealt_here(self, e: CardDealt) -> None:
        if self._deck_numbered(e.shoe)["deck"] == BANKER_DECK:
            self.lottery.append(e.card)
            if len(self.lottery) == R.LOTTERY_CARDS:
                self.phase = DISTRIBUTE
        else:
            self.hands[e.to].append(e.card)
            if all(len(self.hands[h]) == R.CARDS_PER_HOLDER for h in self.holders):
                self.phase = REVEAL

    @applies(PotDistributed)
    def _pot_distributed(self, e: PotDistributed) -> None:
        self.amounts = list(e.amounts)
        self.phase = DEAL

    @applies(PrizeWon)
    def _prize_won(self, e: PrizeWon) -> None:
        self.last_winner = e.holder
        self.hands[e.holder].remove(e.card)
        self.discarded[DEALER_DECK].append(e.card)

    @applies(CardsSetAside)
    def _cards_set_aside(self, e: CardsSetAside) -> None:
        for holder, pile in e.piles.items():
            self.set_aside[holder].extend(pile)
            self.hands[holder] = []
        self.discarded[BANKER_DECK].extend(self.lottery)
        self.lottery, self.amounts = [], []
        self.phase = COLLECT

    @applies(RoundVoided)
    def _round_voided_here(self, e: RoundVoided) -> None:
        # Its contributions went back (PaymentReversed): the cards laid out to the discard, the holders' cards out
        # of their hands (still face down), the round uncounted, and the banker collects again.
        self.discarded[BANKER_DECK].extend(self.lottery)
        self.hands = {h: [] for h in self.holders}
        self.lottery, self.amounts = [], []
        self.game_rounds -= 1
        self.phase = COLLECT

    @applies(Stage2Began)
    def _stage2_began(self, e: Stage2Began) -> None:
        self.stage = 2
        self.round += 1  # stage 2 of a game is one round too
        self.hands = {h: list(cards) for h, cards in e.hands.items()}
        self.set_aside = {h: [] for h in self.holders}
        self.leader = self.turn = e.leader
        self.phase = LEAD if e.variant == R.BEATING else PLAY

    @applies(CardsLed)
    def _cards_led(self, e: CardsLed) -> None:
        for c in e.cards:
            self.hands[e.holder].remove(c)
        self.led = list(e.cards)
        self.leader, self.target = e.holder, e.at
        self.phase = BEAT

    @applies(CardsBeaten)
    def _cards_beaten(self, e: CardsBeaten) -> None:
        for c in e.cards:
            self.hands[e.holder].remove(c)
        self.discarded[DEALER_DECK].extend(e.led + e.cards)
        self.led = []
        self.leader, self.target = e.holder, ""
        self.phase = LEAD

    @applies(CardsTaken)
    def _cards_taken(self, e: CardsTaken) -> None:
        self.penalty[e.holder].extend(e.cards)
        self.led = []
        self.leader, self.target = e.next_leader, ""
        self.phase = LEAD

    @applies(CardPlayed)
    def _card_played(self, e: CardPlayed) -> None:
        self.hands[e.holder].remove(e.card)
        self.trick.append([e.holder, e.card])
        self.turn = R.left_of(self.holders, e.holder)

    @applies(TrickTaken)
    def _trick_taken(self, e: TrickTaken) -> None:
        self.discarded[DEALER_DECK].extend(e.cards)
        self.trick = []
        self.turn = self.leader = e.holder

    @applies(Stage2Ended)
    def _stage2_ended(self, e: Stage2Ended) -> None:
        self.discarded[DEALER_DECK].extend(self.led)  # cards still on the table are discarded
        self.led = []
        self.phase = "ended"

    @applies(GameEnded)
    def _game_ended(self, e: GameEnded) -> None:
        self.game_number = e.game + 1
        self._new_game_state()
