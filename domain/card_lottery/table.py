"""The Card lottery table aggregate (RULES.md, Game B).

A game: both decks shuffled; stage 1 rounds (collect -> lay_out -> distribute -> deal -> reveal) until a
deck runs short; stage 2 (`beating`: lead -> beat | take, or `tricks`: play ...) until a holder is out
of cards; fines to the kitty; both decks revealed; the next game's pot starts from the kitty.
"""

from __future__ import annotations

from collections.abc import Callable
from datetime import datetime
from typing import Any

from domain.card_lottery import rules as R
from domain.cards import suit
from domain.errors import BadArgument, IllegalPlay, InvalidPlayers, InvalidRules
from domain.table import (
    DEALER_RULE,
    SERVICE,
    CardDealt,
    Recorder,
    ShoeShuffled,
    Table,
    TableEvent,
    validate_players,
)

SHUFFLE, COLLECT, LAY_OUT, DISTRIBUTE, DEAL, REVEAL = "shuffle", "collect", "lay_out", "distribute", "deal", "reveal"
LEAD, BEAT, PLAY = "lead", "beat", "play"
BANKER_DECK, DEALER_DECK = "banker", "dealer"


# --- events ----------------------------------------------------------------------------------------

class RolesAssigned(TableEvent):
    """Who banks, who deals, and the holders in seat order (recorded with the opening)."""

    banker: str
    dealer: str
    holders: list[str]


class ContributionsCollected(TableEvent):
    """B.1: every holder paid ``amount`` into the pot; ``pot`` is the round's pot with what was carried."""

    round: int
    amount: int
    pot: int


class PotDistributed(TableEvent):
    """B.3: the banker's spread of the pot over the four lottery cards, in the order they were laid out."""

    amounts: list[int]


class LotteryCardsRevealed(TableEvent):
    cards: list[str]
    amounts: list[int]


class PrizeWon(TableEvent):
    """B.5: a holder held the card equal in rank and suit to a lottery card."""

    holder: str
    card: str
    amount: int


class PrizeUnclaimed(TableEvent):
    """B.5: nobody held this lottery card; its money is carried to the next round or goes to the banker."""

    card: str
    amount: int
    disposition: str


class CardsSetAside(TableEvent):
    """B.5: each holder's cards that won nothing go face down onto that holder's own pile."""

    piles: dict[str, list[str]]


class Stage1Ended(TableEvent):
    """B.6: a deck ran short; money still in the pot went to the kitty."""

    game: int
    to_kitty: int


class Stage2Began(TableEvent):
    variant: str
    leader: str
    hands: dict[str, list[str]]


class CardsLed(TableEvent):
    holder: str
    at: str
    cards: list[str]


class CardsBeaten(TableEvent):
    holder: str
    led: list[str]
    cards: list[str]


class CardsTaken(TableEvent):
    """`beating`: the holder could not beat; the led cards go onto their penalty pile and they lose the lead."""

    holder: str
    cards: list[str]
    next_leader: str


class CardPlayed(TableEvent):
    holder: str
    card: str


class TrickTaken(TableEvent):
    holder: str
    cards: list[str]


class Stage2Ended(TableEvent):
    """A holder is out of cards (``out``; none when stage 2 could not be played); fines are due."""

    variant: str
    out: str | None
    fines: dict[str, int]


class GameEnded(TableEvent):
    game: int
    kitty: int


COMMANDS: dict[str, dict[str, str]] = {
    "shuffle": {"deck": "choice:banker|dealer"},
    "collect": {"amount": "amount?"},
    "lay_out": {},
    "distribute": {"amounts": "amounts"},
    "deal": {},
    "reveal": {},
    "lead": {"cards": "cards"},
    "beat": {"cards": "cards"},
    "take": {},
    "play": {"card": "card"},
}


class CardLotteryTable(Table):
    GAME = R.GAME
    COMMANDS = COMMANDS
    SEEDED = ("shuffle",)

    def __init__(self, game: str, players: list[str], rules: dict[str, Any], digest: str, command: int) -> None:
        super().__init__(game, players, rules, digest, command)
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

    @classmethod
    def open(cls, players: Any, options: Any, now: datetime, **roles: Any) -> "CardLotteryTable":
        names = validate_players(players, 2, R.MAX_HOLDERS + 2)
        if not isinstance(options, dict):
            raise BadArgument("rules", "'rules' must be an object of options.")
        rules = R.resolve_rules(options)
        extra = sorted(set(roles) - {"banker", "dealer"})
        if extra:
            raise BadArgument(extra[0], f"Unexpected field '{extra[0]}'.")
        banker, dealer = roles.get("banker"), roles.get("dealer")
        for role, name in (("banker", banker), ("dealer", dealer)):
            if name is None:
                raise BadArgument(role, f"The card lottery needs a '{role}', one of the players ({', '.join(names)}).")
            if name not in names:
                raise BadArgument(role, f"The {role} '{name}' is not among the players ({', '.join(names)}).")
        if banker == dealer:
            raise BadArgument("dealer", "The banker and the dealer are two different players.")
        holders = R.holders_of(names, banker, dealer, rules)
        if not R.MIN_HOLDERS <= len(holders) <= R.MAX_HOLDERS:
            raise InvalidPlayers(
                f"The card lottery has {R.MIN_HOLDERS} to {R.MAX_HOLDERS} holders besides the banker and the dealer; "
                f"these players give {len(holders)}."
            )
        if not R.pot_can_be_spread(R.round_pot(rules["contribution"], len(holders), 0)):
            raise InvalidRules(
                "contribution",
                f"A pot of {rules['contribution']} x {len(holders)} holder(s) cannot be spread over four cards "
                f"of at least 1 each; the contribution must be at least {-(-R.MIN_POT // len(holders))}.",
            )
        table = cls._open(names, rules, now)
        Recorder(table, now, number=1)(RolesAssigned, SERVICE, banker=banker, dealer=dealer, holders=holders)
        return table

    # --- what the table waits for ------------------------------------------------------------------

    def expects(self) -> list[dict[str, str]]:
        p = self.phase
        if p == SHUFFLE:
            return [
                {"command": "shuffle", "player": who, "deck": deck}
                for deck, who in ((BANKER_DECK, self.banker), (DEALER_DECK, self.dealer))
                if deck not in self.shuffled
            ]
        if p in (COLLECT, LAY_OUT, DISTRIBUTE, REVEAL):
            return [{"command": p, "player": self.banker}]
        if p == DEAL:
            return [{"command": "deal", "player": self.dealer}]
        if p == LEAD:
            return [{"command": "lead", "player": self.leader}]
        if p == BEAT:
            command = "beat" if R.can_beat(self.led, self.hands[self.target]) else "take"
            return [{"command": command, "player": self.target}]
        if p == PLAY:
            return [{"command": "play", "player": self.turn}]
        return []

    def _may_issue(self, command: str, player: str) -> bool:
        if self.phase == BEAT and command in ("beat", "take") and player == self.target:
            return True  # let the rule itself say why a beat or a take is refused
        return super()._may_issue(command, player)

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

    def command_of(self, events: list[dict[str, Any]]) -> tuple[str, str, dict[str, Any]]:
        """The command (name, issuer, fields) that recorded these events, read from its first event: what an
        auditor re-runs against the rules. Raises KeyError for a first event no command of this game records."""
        first = events[0]
        kind, actor, data = first["type"], first["actor"], first["data"]
        if kind == "PaymentMade":  # the first money of a collect
            collected = next(e for e in events if e["type"] == "ContributionsCollected")
            return "collect", actor, {"amount": collected["data"]["amount"]}
        if kind == "CardDealt":
            deck = self._deck_numbered(data["shoe"])["deck"]
            return ("lay_out" if deck == BANKER_DECK else "deal"), actor, {}
        command, fields = {
            "ShoeShuffled": ("shuffle", ("deck",)),
            "PotDistributed": ("distribute", ("amounts",)),
            "LotteryCardsRevealed": ("reveal", ()),
            "CardsLed": ("lead", ("cards",)),
            "CardsBeaten": ("beat", ("cards",)),
            "CardsTaken": ("take", ()),
            "CardPlayed": ("play", ("card",)),
        }[kind]
        return command, actor, {f: data[f] for f in fields}

    # --- commands: stage 1 -------------------------------------------------------------------------

    def do_shuffle(self, rec: Recorder, player: str, new_seed: Callable[[], bytes], deck: str) -> None:
        """B: the banker shuffles the banker's deck, the dealer the dealer's; neither deck is cut."""
        own = BANKER_DECK if player == self.banker else DEALER_DECK
        if deck != own:
            raise IllegalPlay(f"The {own} shuffles the {own}'s deck; send deck '{own}'.")
        self._shuffle(rec, player, deck, 1, new_seed())

    def do_collect(self, rec: Recorder, player: str, amount: int | None = None) -> None:
        """B.1: every holder pays the contribution; the pot adds what was carried (the kitty, at a game's first round)."""
        amount = self.rules["contribution"] if amount is None else amount
        kitty = self.accounts.get("kitty", 0) if self.game_rounds == 0 else 0
        carried = self.accounts.get("pot", 0) + kitty
        pot = R.round_pot(amount, len(self.holders), carried)
        if not R.pot_can_be_spread(pot):
            raise IllegalPlay(
                f"This round's pot would be {pot} ({len(self.holders)} x {amount} + {carried} carried); "
                f"four lottery cards need at least {R.MIN_POT}. Collect at least "
                f"{-(-(R.MIN_POT - carried) // len(self.holders))} from each holder."
            )
        if kitty:
            self._pay(rec, player, "kitty", "pot", kitty, "kitty opens the game's pot")
        for holder in self.holders:
            self._pay(rec, player, holder, "pot", amount, "contribution")
        rec(ContributionsCollected, player, round=self.round + 1, amount=amount, pot=pot)

    def do_lay_out(self, rec: Recorder, player: str) -> None:
        """B.2: four cards from the banker's deck, face down."""
        for _ in range(R.LOTTERY_CARDS):
            self._take(rec, player, self.banker, False, BANKER_DECK)

    def do_distribute(self, rec: Recorder, player: str, amounts: list[int]) -> None:
        """B.3: the pot spread over the four cards, at least 1 each, summing exactly to the pot."""
        problem = R.distribution_problem(amounts, self.accounts.get("pot", 0))
        if problem:
            raise IllegalPlay(problem)
        rec(PotDistributed, player, amounts=list(amounts))

    def do_deal(self, rec: Recorder, player: str) -> None:
        """B.4: three cards to each holder, three at a time, holder by holder in seat order."""
        for holder in self.holders:
            for _ in range(R.CARDS_PER_HOLDER):
                self._take(rec, player, holder, False, DEALER_DECK)

    def do_reveal(self, rec: Recorder, player: str) -> None:
        """B.5: prizes to the holders of matching cards; the rest carried (or to the banker); B.6 ends stage 1."""
        rec(LotteryCardsRevealed, player, cards=list(self.lottery), amounts=list(self.amounts))
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

    # --- commands: stage 2 -------------------------------------------------------------------------

    def _begin_stage2(self, rec: Recorder) -> None:
        leader = R.stage2_leader(self.last_winner, self.holders)
        rec(Stage2Began, DEALER_RULE, variant=self.rules["stage2"], leader=leader,
            hands={h: list(self.set_aside[h]) for h in self.holders})
        empty = [h for h in self.holders if not self.hands[h]]
        if empty or len(self.holders) == 1:
            # A holder who starts stage 2 with no cards ends it at once; a lone holder has nobody to play.
            self._end_stage2(rec, empty[0] if empty else None)

    def do_lead(self, rec: Recorder, player: str, cards: list[str]) -> None:
        """`beating`: one card, or two of equal rank, at the next holder to the left."""
        problem = R.lead_problem(cards, self.hands[player])
        if problem:
            raise IllegalPlay(problem)
        rec(CardsLed, player, holder=player, at=R.left_of(self.holders, player), cards=list(cards))
        if not self.hands[player]:
            self._end_stage2(rec, player)

    def do_beat(self, rec: Recorder, player: str, cards: list[str]) -> None:
        """`beating`: each led card beaten by a higher card of its suit; the beater leads next."""
        hand = self.hands[player]
        if not R.can_beat(self.led, hand):
            raise IllegalPlay(f"You cannot beat {', '.join(self.led)} (no higher card of the suit): take them.")
        problem = R.beat_problem(self.led, cards, hand)
        if problem:
            raise IllegalPlay(problem)
        rec(CardsBeaten, player, holder=player, led=list(self.led), cards=list(cards))
        if not self.hands[player]:
            self._end_stage2(rec, player)

    def do_take(self, rec: Recorder, player: str) -> None:
        """`beating`: only a holder who cannot beat may take; they lose their turn to lead."""
        hand = self.hands[player]
        if R.can_beat(self.led, hand):
            options = "; ".join(
                f"{led} with {', '.join(c for c in hand if R.beats(led, c))}" for led in self.led
            )
            raise IllegalPlay(f"You can beat, so you must: {options}. A take is allowed only when no beat exists.")
        rec(CardsTaken, player, holder=player, cards=list(self.led), next_leader=R.left_of(self.holders, player))

    def do_play(self, rec: Recorder, player: str, card: str) -> None:
        """`tricks`: follow the led suit if you can; the highest card of the led suit takes the trick."""
        hand = self.hands[player]
        led_suit = suit(self.trick[0][1]) if self.trick else None
        if card not in hand:
            raise IllegalPlay(f"{card} is not in your hand.")
        if not R.may_play(card, led_suit, hand):
            follow = [c for c in hand if suit(c) == led_suit]
            raise IllegalPlay(f"Follow the led suit: play one of {', '.join(follow)}.")
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

    def when_RolesAssigned(self, e: RolesAssigned) -> None:
        self._after(e)
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

    def when_ShoeShuffled(self, e: ShoeShuffled) -> None:
        super().when_ShoeShuffled(e)
        self.shuffled.append(e.deck)
        if len(self.shuffled) == 2:
            self.phase = COLLECT

    def when_ContributionsCollected(self, e: ContributionsCollected) -> None:
        self._after(e)
        self.round = e.round
        self.game_rounds += 1
        self.phase = LAY_OUT

    def when_CardDealt(self, e: CardDealt) -> None:
        super().when_CardDealt(e)
        if self._deck_numbered(e.shoe)["deck"] == BANKER_DECK:
            self.lottery.append(e.card)
            if len(self.lottery) == R.LOTTERY_CARDS:
                self.phase = DISTRIBUTE
        else:
            self.hands[e.to].append(e.card)
            if all(len(self.hands[h]) == R.CARDS_PER_HOLDER for h in self.holders):
                self.phase = REVEAL

    def when_PotDistributed(self, e: PotDistributed) -> None:
        self._after(e)
        self.amounts = list(e.amounts)
        self.phase = DEAL

    def when_LotteryCardsRevealed(self, e: LotteryCardsRevealed) -> None:
        self._after(e)

    def when_PrizeWon(self, e: PrizeWon) -> None:
        self._after(e)
        self.last_winner = e.holder
        self.hands[e.holder].remove(e.card)
        self.discarded[DEALER_DECK].append(e.card)

    def when_PrizeUnclaimed(self, e: PrizeUnclaimed) -> None:
        self._after(e)

    def when_CardsSetAside(self, e: CardsSetAside) -> None:
        self._after(e)
        for holder, pile in e.piles.items():
            self.set_aside[holder].extend(pile)
            self.hands[holder] = []
        self.discarded[BANKER_DECK].extend(self.lottery)
        self.lottery, self.amounts = [], []
        self.phase = COLLECT

    def when_Stage1Ended(self, e: Stage1Ended) -> None:
        self._after(e)

    def when_Stage2Began(self, e: Stage2Began) -> None:
        self._after(e)
        self.stage = 2
        self.round += 1  # stage 2 of a game is one round too
        self.hands = {h: list(cards) for h, cards in e.hands.items()}
        self.set_aside = {h: [] for h in self.holders}
        self.leader = self.turn = e.leader
        self.phase = LEAD if e.variant == R.BEATING else PLAY

    def when_CardsLed(self, e: CardsLed) -> None:
        self._after(e)
        for c in e.cards:
            self.hands[e.holder].remove(c)
        self.led = list(e.cards)
        self.leader, self.target = e.holder, e.at
        self.phase = BEAT

    def when_CardsBeaten(self, e: CardsBeaten) -> None:
        self._after(e)
        for c in e.cards:
            self.hands[e.holder].remove(c)
        self.discarded[DEALER_DECK].extend(e.led + e.cards)
        self.led = []
        self.leader, self.target = e.holder, ""
        self.phase = LEAD

    def when_CardsTaken(self, e: CardsTaken) -> None:
        self._after(e)
        self.penalty[e.holder].extend(e.cards)
        self.led = []
        self.leader, self.target = e.next_leader, ""
        self.phase = LEAD

    def when_CardPlayed(self, e: CardPlayed) -> None:
        self._after(e)
        self.hands[e.holder].remove(e.card)
        self.trick.append([e.holder, e.card])
        self.turn = R.left_of(self.holders, e.holder)

    def when_TrickTaken(self, e: TrickTaken) -> None:
        self._after(e)
        self.discarded[DEALER_DECK].extend(e.cards)
        self.trick = []
        self.turn = self.leader = e.holder

    def when_Stage2Ended(self, e: Stage2Ended) -> None:
        self._after(e)
        self.discarded[DEALER_DECK].extend(self.led)  # cards still on the table are discarded
        self.led = []
        self.phase = "ended"

    def when_GameEnded(self, e: GameEnded) -> None:
        self._after(e)
        self.game_number = e.game + 1
        self._new_game_state()

    # --- the table as anyone may see it --------------------------------------------------------------

    def view(self) -> dict[str, Any]:
        def counts(label: str) -> dict[str, Any]:
            deck = self.decks.get(label)
            if not deck or label not in self.shuffled:
                return {"number": None, "dealt": 0, "remaining": 0}
            return {"number": deck["number"], "dealt": deck["dealt"], "remaining": len(deck["cards"]) - deck["dealt"]}

        return {
            "game": self.game,
            "rules": dict(self.rules),
            "players": list(self.players),
            "seats": list(self.players),
            "banker": self.banker,
            "dealer": self.dealer,
            "holders": list(self.holders),
            "phase": self.phase,
            "stage": self.stage,
            "game_number": self.game_number,
            "round": self.round,
            "expects": self.expects(),
            "balances": dict(self.balances),
            "pot": self.accounts.get("pot", 0),
            "kitty": self.accounts.get("kitty", 0),
            "lottery_cards": ["??"] * len(self.lottery),  # face down until revealed
            "lottery_amounts": list(self.amounts),
            "hands": {h: list(c) for h, c in self.hands.items()},
            "set_aside": {h: ["??"] * len(c) for h, c in self.set_aside.items()},  # face-down piles (B.5)
            "penalty_piles": {h: list(c) for h, c in self.penalty.items()},
            "table": list(self.led) if self.led else [c for _, c in self.trick],
            "leader": self.leader or None,
            "to_beat": self.target or None,
            "turn": (self.turn if self.phase == PLAY else None),
            "last_winner": self.last_winner,
            "decks": {BANKER_DECK: counts(BANKER_DECK), DEALER_DECK: counts(DEALER_DECK)},
        }
