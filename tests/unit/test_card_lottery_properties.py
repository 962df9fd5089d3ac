"""Invariants of the Card lottery under random legal play (hypothesis)."""

from __future__ import annotations

import json
import random
from collections import Counter

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.card_lottery import rules as R
from domain.card_lottery.table import CardLotteryTable
from domain.cards import is_card, new_deck, suit
from domain.errors import DomainError
from domain.shuffle import commitment, shoe_order
from domain.sight import EVERYTHING
from tests.helpers import Seeds, StepClock

BANKER, DEALER = "ivan", "olga"
GAMES = 3  # each example plays this many whole games


@st.composite
def tables(draw):
    """Players in a random seat order, random rules (a contribution too small for the holders is raised
    to the smallest allowed), and a seed for the play."""
    holders = draw(st.integers(1, 17))
    rules = draw(
        st.fixed_dictionaries(
            {},
            optional={
                "stage2": st.sampled_from(["beating", "tricks"]),
                "unclaimed": st.sampled_from(["carry", "to_banker"]),
                "contribution": st.integers(1, 25),
                "fine_per_card": st.integers(0, 5),
                "banker_plays": st.booleans(),
                "dealer_plays": st.booleans(),
            },
        )
    )
    dealt_in = int(rules.get("banker_plays", False)) + int(rules.get("dealer_plays", False))
    others = [f"h{i}" for i in range(1, max(holders - dealt_in, 0) + 1)]
    count = len(others) + dealt_in
    if "contribution" in rules:
        rules["contribution"] = max(rules["contribution"], -(-R.MIN_POT // count))
    players = draw(st.permutations([BANKER, DEALER, *others]))
    return list(players), rules, draw(st.integers(0, 10**6))


def legal_args(table: CardLotteryTable, expect: dict, rng: random.Random) -> dict:
    """Random fields for an expected command that the rules allow, read from the table's state."""
    command, player = expect["command"], expect["player"]
    if command == "shuffle":
        return {"deck": expect["deck"]}
    if command == "collect":
        kitty = table.accounts.get("kitty", 0) if table.game_rounds == 0 else 0
        carried = table.accounts.get("pot", 0) + kitty
        least = max(1, -(-(R.MIN_POT - carried) // len(table.holders)))
        return rng.choice([{}, {"amount": rng.randint(least, least + 15)}])
    if command == "distribute":
        pot = table.accounts["pot"]
        cuts = sorted(rng.sample(range(1, pot), 3))
        return {"amounts": [cuts[0], cuts[1] - cuts[0], cuts[2] - cuts[1], pot - cuts[2]]}
    if command == "lead":
        hand = table.hands[player]
        card = rng.choice(hand)
        pairs = [c for c in hand if c != card and c[0] == card[0]]
        return {"cards": [card, rng.choice(pairs)] if pairs and rng.random() < 0.5 else [card]}
    if command == "beat":
        hand = table.hands[player]
        return {"cards": [rng.choice([c for c in hand if R.beats(led, c)]) for led in table.led]}
    if command == "play":
        hand = table.hands[player]
        led_suit = suit(table.trick[0][1]) if table.trick else None
        return {"card": rng.choice([c for c in hand if R.may_play(c, led_suit, hand)])}
    return {}


def play(players, rules, seed, games=GAMES):
    """Plays random legal commands for ``games`` whole games; yields the table after each command with
    the events it appended (the opening first)."""
    rng = random.Random(seed)
    clock, seeds = StepClock(), Seeds(seed)
    table = CardLotteryTable.open(players, rules, clock(), banker=BANKER, dealer=DEALER)
    yield table, table.collect_events()
    for _ in range(5000):
        if table.game_number > games:
            return
        expect = rng.choice(table.expects())
        table.handle(expect["command"], expect["player"], legal_args(table, expect, rng), clock(), seeds, new_salt=seeds.salt)
        yield table, table.collect_events()
    raise AssertionError(f"{games} games did not end in 5000 commands")


common = settings(max_examples=50, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@common
@given(setup=tables())
def test_money_is_never_made_or_lost_and_every_balance_is_its_owners_prizes_less_contributions_and_fines(setup):
    players, rules, seed = setup
    # What each player should hold, from the game's own events (not from the payments).
    ledger = Counter({p: 0 for p in players})
    contributions = prizes = to_banker = fines = 0
    for table, events in play(players, rules, seed):
        for e in events:
            if e.type == "PaymentMade":
                assert isinstance(e.amount, int) and not isinstance(e.amount, bool) and e.amount > 0
            elif e.type == "ContributionsCollected":
                contributions += e.amount * len(table.holders)
                for holder in table.holders:
                    ledger[holder] -= e.amount
            elif e.type == "PrizeWon":
                prizes += e.amount
                ledger[e.holder] += e.amount
            elif e.type == "PrizeUnclaimed" and e.disposition == "to banker":
                to_banker += e.amount
                ledger[BANKER] += e.amount
            elif e.type == "Stage2Ended":
                for holder, amount in e.fines.items():
                    fines += amount
                    ledger[holder] -= amount
        pot, kitty = table.accounts.get("pot", 0), table.accounts.get("kitty", 0)
        assert set(table.accounts) <= {"pot", "kitty"}
        assert pot >= 0 and kitty >= 0
        # Double entry: whatever the players lost is in the pot or the kitty.
        assert sum(table.balances.values()) + pot + kitty == 0
        # Money comes into the pot and the kitty only from holders (contributions, fines) and leaves them
        # only for players (prizes, unclaimed money paid to the banker); the kitty opening a pot and the
        # pot going to the kitty move money between the two. So, exactly:
        #   contributions = prizes + unclaimed to the banker + pot + kitty - fines.
        assert contributions == prizes + to_banker + pot + kitty - fines
        assert table.balances == dict(ledger)
        if table.phase in ("deal", "reveal"):
            assert sum(table.amounts) == pot  # the spread on the lottery cards is the whole pot
        if table.stage == 2 or table.phase == "shuffle":
            assert pot == 0  # stage 1 over: the pot went to the kitty


def dealer_cards_in_play(table):
    """The dealer's cards in holders' hands, set-aside and penalty piles and on the table."""
    cards = []
    for piles in (table.hands, table.set_aside, table.penalty):
        for pile in piles.values():
            cards += pile
    return cards + list(table.led) + [c for _, c in table.trick]


@common
@given(setup=tables())
def test_each_card_of_both_decks_is_in_exactly_one_place_at_every_moment(setup):
    players, rules, seed = setup
    full = Counter(new_deck())
    for table, _ in play(players, rules, seed):
        # Between games the old decks are left as they ended; a deck counts once shuffled for this game.
        for label in table.shuffled:
            deck = table.decks[label]
            assert Counter(deck["cards"]) == full
            undealt = deck["cards"][deck["dealt"]:]
            if label == "banker":
                places = undealt + table.lottery + table.discarded["banker"]
            else:
                places = undealt + dealer_cards_in_play(table) + table.discarded["dealer"]
            assert Counter(places) == full, f"{label}'s deck: {sorted((Counter(places) - full) + (full - Counter(places)))}"
        if len(table.shuffled) < 2:
            assert table.lottery == [] and dealer_cards_in_play(table) == []


def card_strings(value):
    """Every card-like string anywhere in a view, keys included."""
    if isinstance(value, dict):
        return [c for k, v in value.items() for c in card_strings(k) + card_strings(v)]
    if isinstance(value, list):
        return [c for v in value for c in card_strings(v)]
    return [value] if is_card(value) else []


@common
@given(setup=tables())
def test_the_view_never_shows_a_lottery_card_before_the_reveal_nor_an_undealt_card_nor_a_secret_seed(setup):
    players, rules, seed = setup
    secret: set[str] = set()
    for table, events in play(players, rules, seed):
        for e in events:
            if e.type == "ShoeShuffled":
                secret.add(e.seed)
                assert "seed" not in e.public_data
            elif e.type == "ShoeRevealed":
                secret.discard(e.seed)
            public = json.dumps(e.public_data)
            assert not any(s in public for s in secret)
        view = table.view()  # as the croupier sees it
        assert view["lottery_cards"] == ["??"] * len(table.lottery)
        # The only cards a view shows are the dealer's cards face up in play: never a lottery card,
        # never an undealt card, never a discarded one, never a face-down set-aside pile nor a hand.
        face_down = Counter(c for piles in (table.set_aside, table.hands) for pile in piles.values() for c in pile)
        shown = {k: v for k, v in view.items() if k != "expects"}
        assert Counter(card_strings(shown)) == Counter(dealer_cards_in_play(table)) - face_down
        # expects names only cards the state already shows (those a holder may play from a hand)
        assert set(card_strings(view["expects"])) <= set(card_strings(shown))
        assert view["set_aside"] == {h: ["??"] * len(p) for h, p in table.set_aside.items()}
        text = json.dumps(view)
        assert not any(s in text for s in secret)
        assert not any(d["seed"] in text for d in table.decks.values() if not d["revealed"])


@common
@given(setup=tables())
def test_every_game_lasts_the_rule_in_rounds_reveals_both_decks_and_refuses_whatever_is_not_expected(setup):
    players, rules, seed = setup
    rng = random.Random(seed)
    shuffles: dict[int, str] = {}
    dealt: dict[int, list[str]] = {}
    rounds, games = 0, 0
    for table, events in play(players, rules, seed):
        for e in events:
            if e.type == "ShoeShuffled":
                shuffles[e.shoe] = e.commitment
                dealt[e.shoe] = []
            elif e.type == "CardDealt":
                assert e.position == len(dealt[e.shoe]) and not e.face_up
                dealt[e.shoe].append(e.card)
            elif e.type == "ContributionsCollected":
                rounds += 1
            elif e.type == "Stage1Ended":
                assert rounds == min(52 // 4, 52 // (3 * len(table.holders)))
                rounds = 0
            elif e.type == "ShoeRevealed":
                # the seed answers the commitment and recomputes every card dealt from the deck
                assert commitment(bytes.fromhex(e.seed)) == shuffles.pop(e.shoe)
                order = shoe_order(bytes.fromhex(e.seed), 1, 0)
                assert dealt[e.shoe] == order[: len(dealt[e.shoe])]
            elif e.type == "GameEnded":
                games += 1
                assert not shuffles, "a game ended with a deck not revealed"
        expects = table.expects()
        assert expects == table.view(table.sight(EVERYTHING))["expects"]
        assert len(expects) == (2 - len(table.shuffled) if table.phase == "shuffle" else 1)
        for x in expects:
            who, command = x["player"], x["command"]
            if command == "shuffle":
                assert (who, x["deck"]) in {(BANKER, "banker"), (DEALER, "dealer")}
                assert x["deck"] not in table.shuffled
            elif command in ("collect", "lay_out", "distribute", "reveal"):
                assert who == BANKER and table.phase == command
            elif command == "deal":
                assert who == DEALER and table.phase == "deal"
            elif command == "lead":
                assert who == table.leader and table.hands[who]
            elif command in ("beat", "take"):
                assert who == table.target == R.left_of(table.holders, table.leader)
                assert (command == "beat") is R.can_beat(table.led, table.hands[who])
            else:
                assert command == "play" and who == table.turn and table.hands[who]
        # a command the table does not wait for, from anyone, is refused and records nothing
        wanted = {(x["command"], x["player"]) for x in expects}
        command = rng.choice(sorted(CardLotteryTable.COMMANDS))
        player = rng.choice([*players, "zoe"])
        if (command, player) not in wanted:
            card = rng.choice(new_deck())
            args = {
                "shuffle": {"deck": rng.choice(["banker", "dealer"])},
                "distribute": {"amounts": [1, 1, 1, 1]},
                "lead": {"cards": [card]},
                "beat": {"cards": [card]},
                "play": {"card": card},
            }.get(command, {})
            version = table.version
            try:
                table.handle(command, player, args, StepClock()(), seeded := Seeds(seed), new_salt=seeded.salt)
            except DomainError:
                pass
            else:
                raise AssertionError(f"{command} by {player} was accepted; the table waited for {wanted}")
            assert table.version == version and table.pending_events == []
    assert games == GAMES
