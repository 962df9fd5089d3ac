"""Stories of a punto banco table, played on the aggregate itself (no service, no store), and its invariants
under random legal play (hypothesis)."""

from __future__ import annotations

import copy
import json
import random
import re

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from domain.chain import digest
from domain.errors import BadArgument, InvalidPlayers, InvalidRules, NotAllowedNow, UnknownCommand
from domain.punto_banco import GAME
from domain.punto_banco import rules as R
from domain.punto_banco.rounds import MARKS
from domain.punto_banco.table import PuntoBancoTable
from tests.helpers import Seeds, StepClock, rounds_of, stacked_shoe

CARD = re.compile(r"\b[2-9TJQKA][shdc]\b")


class Story:
    """A table with a croupier and players who stake, and the events it recorded."""

    def __init__(self, stakers=("anna", "boris"), croupier="marta", seed=0, **rules):
        self.clock, self.seeds = StepClock(), Seeds(seed)
        self.croupier, self.stakers = croupier, list(stakers)
        self.table = PuntoBancoTable.open([croupier, *stakers], dict(rules), self.clock(), croupier=croupier)
        self.events = list(self.table.collect_events())

    def do(self, command, player, **args):
        self.table.handle(command, player, args, self.clock(), self.seeds, new_salt=self.seeds.salt)
        new = list(self.table.collect_events())
        self.events += new
        return new

    def ready(self, cut=50):
        """Shuffled, cut and burned: stakes are open."""
        self.do("shuffle", self.croupier)
        self.do("cut", self.stakers[0], position=cut)
        return self

    def coup(self, **stakes):
        """Each ``player=(spot, amount)`` staked, the stakes closed and the coup dealt: the deal's events."""
        for player, (spot, amount) in stakes.items():
            self.do("place_stake", player, spot=spot, amount=amount)
        self.do("close_stakes", self.croupier)
        return self.do("deal", self.croupier)

    @property
    def view(self):
        return self.table.view()

    def who(self):
        return [(e["command"], e["player"]) for e in self.table.expects()]


def types(events):
    return [e.type for e in events]


def payments(events):
    return [(e.payer, e.payee, e.amount, e.reason) for e in events if e.type == "PaymentMade"]


# A shoe whose first card is an ace (one card burned), then the coup's cards in the order dealt.
def ace_then(*cards):
    return stacked_shoe(["As", "Kc", *cards])


# --- opening -------------------------------------------------------------------------------------

def test_the_table_opens_with_its_croupier_among_the_players_and_waits_for_the_croupiers_shuffle():
    story = Story()
    assert types(story.events) == ["TableOpened", "RolesAssigned"]
    assert story.events[1].croupier == "marta" and story.events[1].actor == "service"
    view = story.view
    assert view["players"] == ["marta", "anna", "boris"] and view["croupier"] == "marta"
    assert view["balances"] == {"marta": 0, "anna": 0, "boris": 0} and view["house"] == 0
    assert view["rules"] == R.DEFAULT_RULES
    assert story.who() == [("shuffle", "marta")]


@pytest.mark.parametrize(
    "players,roles,error,says",
    [
        (["marta", "anna"], {}, BadArgument, "needs a 'croupier'"),
        (["marta", "anna"], {"croupier": "zoya"}, BadArgument, "not among the players"),
        (["marta"], {"croupier": "marta"}, InvalidPlayers, "only the croupier was listed"),
        ([f"p{i}" for i in range(16)], {"croupier": "p0"}, InvalidPlayers, "1 to 15"),
        (["marta", "house"], {"croupier": "marta"}, InvalidPlayers, "reserved"),
        (["marta", "player"], {"croupier": "marta"}, InvalidPlayers, "reserved"),
        (["marta", "burn"], {"croupier": "marta"}, InvalidPlayers, "reserved"),
        (["marta", "anna"], {"croupier": "marta", "banker": "anna"}, BadArgument, "not an opening field"),
    ],
)
def test_an_opening_without_its_croupier_at_the_table_or_with_wrong_names_is_refused(players, roles, error, says):
    with pytest.raises(error) as refused:
        PuntoBancoTable.open(players, {}, StepClock()(), **roles)
    assert says in refused.value.message


@pytest.mark.parametrize("rules,option", [({"decks": 7}, "decks"), ({"tie_pays": 10}, "tie_pays"),
                                          ({"min_stake": 50, "max_stake": 40}, "max_stake"),
                                          ({"commission_percent": 1, "max_stake": 99}, "max_stake"),
                                          ({"bank": 100}, "bank")])
def test_options_outside_the_punto_banco_rules_are_refused_at_opening(rules, option):
    with pytest.raises(InvalidRules) as refused:
        Story(**rules)
    assert refused.value.option == option


def test_the_options_the_api_documents_are_the_ones_the_rules_resolve():
    documented = {o.name: o.default for o in GAME.options}
    assert {k: documented[k] for k in R.DEFAULT_RULES} == R.DEFAULT_RULES
    assert set(documented) == {*R.DEFAULT_RULES, *R.LATER_DEFAULTS}
    assert Story(decks=6, tie_pays=9).view["rules"] == {**R.DEFAULT_RULES, "decks": 6, "tie_pays": 9}


# --- the shoe: shuffle, cut, burn ----------------------------------------------------------------

def test_only_the_croupier_shuffles_and_a_player_who_tries_is_told_who_does():
    story = Story()
    with pytest.raises(NotAllowedNow) as refused:
        story.do("shuffle", "anna")
    assert "Only the croupier (marta)" in refused.value.message
    [shuffled] = story.do("shuffle", "marta")
    assert shuffled.type == "ShoeShuffled" and shuffled.actor == "marta" and shuffled.decks == 8
    assert "seed" not in shuffled.public_data
    cuts = story.table.expects()
    assert [(e["command"], e["player"]) for e in cuts] == [("cut", "anna"), ("cut", "boris")]
    assert cuts[0]["fields"]["position"] == {"kind": "int", "optional": False, "min": 1, "max": 415}


@pytest.mark.parametrize("turned,burned", [("As", 1), ("7h", 7), ("Kd", 10), ("Tc", 10)])
def test_the_cut_turns_the_first_card_face_up_and_burns_that_many_face_down(turned, burned):
    story = Story()
    story.do("shuffle", "marta")
    with stacked_shoe([turned]):
        events = story.do("cut", "boris", position=123)
    assert types(events) == ["ShoeCut"] + ["CardDealt"] * (1 + burned) + ["CardsBurned"]
    cut, first, *rest, done = events
    assert cut.actor == "boris" and cut.position == 123
    assert (first.card, first.to, first.face_up, first.actor, first.position) == (turned, "burn", True, "marta", 0)
    assert all(e.to == "burn" and not e.face_up for e in rest)
    assert [e.position for e in rest] == list(range(1, 1 + burned))
    assert (done.turned, done.burned) == (turned, burned)
    view = story.view
    assert view["burn"] == {"turned": turned, "burned": ["??"] * burned}
    assert view["shoe"] == {"number": 1, "dealt": 1 + burned, "remaining": 415 - burned, "last_coup": False}
    assert view["phase"] == "stakes"


def test_the_croupier_neither_cuts_nor_stakes():
    story = Story()
    story.do("shuffle", "marta")
    with pytest.raises(NotAllowedNow, match="marta is the croupier, who runs the table and does not cut"):
        story.do("cut", "marta", position=10)
    story.do("cut", "anna", position=10)
    with pytest.raises(NotAllowedNow, match="does not stake"):
        story.do("place_stake", "marta", spot="player", amount=100)


@pytest.mark.parametrize("position", [0, 416, -3])
def test_a_cut_outside_the_shoe_is_refused_naming_the_range(position):
    story = Story(decks=8)
    story.do("shuffle", "marta")
    with pytest.raises(BadArgument, match="from 1 to 415"):
        story.do("cut", "anna", position=position)
    assert types(story.events)[-1] == "ShoeShuffled"


# --- stakes ----------------------------------------------------------------------------------------

def test_stakes_on_a_spot_add_up_and_the_total_stays_within_the_limits():
    story = Story(max_stake=200).ready()
    [first] = story.do("place_stake", "anna", spot="player", amount=100)
    assert (first.coup, first.player, first.spot, first.amount, first.total) == (1, "anna", "player", 100, 100)
    [second] = story.do("place_stake", "anna", spot="player", amount=50)
    assert (second.coup, second.total) == (1, 150)
    assert story.view["stakes"] == {"anna": {"player": 150}} and story.view["round"] == 1
    with pytest.raises(R.StakeRefused) as refused:
        story.do("place_stake", "anna", spot="player", amount=60)
    assert refused.value.details["max_allowed"] == 50
    entry = next(e for e in story.table.expects() if e["player"] == "anna" and e["fields"]["spot"]["choices"] == ["player"])
    assert entry["fields"]["amount"] == {"kind": "amount", "optional": False, "min": 1, "max": 50}


def test_a_banker_stake_is_a_multiple_of_the_commissions_unit_and_expects_says_which():
    story = Story(min_stake=10, max_stake=1010).ready()
    banker = next(e for e in story.table.expects() if e["fields"]["spot"]["choices"] == ["banker"])
    assert banker["fields"]["amount"] == {"kind": "amount", "optional": False, "min": 20, "max": 1000, "multiple_of": 20}
    with pytest.raises(R.StakeRefused) as refused:
        story.do("place_stake", "anna", spot="banker", amount=30)
    assert refused.value.details["multiple_of"] == 20
    story.do("place_stake", "anna", spot="banker", amount=40)
    assert story.view["stakes"] == {"anna": {"banker": 40}}


def test_nobody_backs_both_hands_but_a_tie_goes_with_either():
    story = Story().ready()
    story.do("place_stake", "anna", spot="player", amount=100)
    assert ("banker" not in [e["fields"]["spot"]["choices"][0] for e in story.table.expects()
                             if e["command"] == "place_stake" and e["player"] == "anna"])
    with pytest.raises(R.StakeRefused, match="both the player and the banker"):
        story.do("place_stake", "anna", spot="banker", amount=100)
    story.do("place_stake", "anna", spot="tie", amount=20)
    assert story.view["stakes"] == {"anna": {"player": 100, "tie": 20}}


@pytest.mark.parametrize("args,field", [({"spot": "punto", "amount": 100}, "spot"), ({"spot": "tie", "amount": 0}, "amount"),
                                        ({"spot": "tie"}, "amount"), ({"spot": "tie", "amount": 20.0}, "amount")])
def test_a_stake_of_the_wrong_shape_is_refused_before_any_rule(args, field):
    story = Story().ready()
    with pytest.raises(BadArgument) as refused:
        story.do("place_stake", "anna", **args)
    assert refused.value.field == field


def test_no_more_bets_needs_a_stake_and_then_only_the_deal_is_expected():
    story = Story().ready()
    with pytest.raises(NotAllowedNow, match="No stake is on the table yet"):
        story.do("close_stakes", "marta")
    story.do("place_stake", "boris", spot="tie", amount=20)
    assert ("close_stakes", "marta") in story.who()
    [closed] = story.do("close_stakes", "marta")
    assert (closed.type, closed.coup, closed.stakes) == ("StakesClosed", 1, {"boris": {"tie": 20}})
    assert story.who() == [("deal", "marta")]
    with pytest.raises(NotAllowedNow):
        story.do("place_stake", "anna", spot="tie", amount=20)
    with pytest.raises(NotAllowedNow, match="Only the croupier"):
        story.do("deal", "anna")


def test_an_unknown_command_is_refused_naming_the_games_commands():
    with pytest.raises(UnknownCommand) as refused:
        Story().do("draw", "marta")
    assert refused.value.details["allowed"] == sorted(GAME.commands)


# --- the coup and its settlement --------------------------------------------------------------------

def test_a_natural_decides_the_coup_at_once_and_every_stake_is_settled_with_the_house():
    story = Story()
    with ace_then("9c", "5d", "Kh", "2s"):  # player 9c Kh = 9, a natural; banker 5d 2s = 7
        story.ready()
        events = story.coup(anna=("player", 100), boris=("banker", 200))
    assert types(events) == ["CardDealt"] * 4 + ["CoupDecided", "PaymentMade", "PaymentMade"]
    assert [(e.to, e.card, e.face_up, e.actor) for e in events[:4]] == [
        ("player", "9c", True, "marta"), ("banker", "5d", True, "marta"),
        ("player", "Kh", True, "marta"), ("banker", "2s", True, "marta")]
    decided = events[4]
    assert decided.data == {"coup": 1, "player_hand": ["9c", "Kh"], "banker_hand": ["5d", "2s"], "player_total": 9,
                            "banker_total": 7, "natural": True, "outcome": "player"}
    assert payments(events) == [("house", "anna", 100, "player stake won"), ("boris", "house", 200, "banker stake lost")]
    view = story.view
    assert view["balances"] == {"marta": 0, "anna": 100, "boris": -200} and view["house"] == 100
    assert view["hands"] == {"player": ["9c", "Kh"], "banker": ["5d", "2s"]}
    assert view["result"] == {"coup": 1, "outcome": "player", "player_total": 9, "banker_total": 7, "natural": True}
    assert view["stakes"] == {} and view["phase"] == "stakes"


def test_a_banker_win_pays_one_to_one_less_the_commission():
    story = Story()
    with ace_then("2c", "4d", "Ac", "4h"):  # player 3, banker a natural 8
        story.ready()
        events = story.coup(anna=("player", 100), boris=("banker", 100))
    assert payments(events) == [("anna", "house", 100, "player stake lost"), ("house", "boris", 100, "banker stake won"),
                                ("boris", "house", 5, "banker commission")]
    assert story.view["balances"]["boris"] == 95 and story.view["house"] == 5


def test_a_tie_pays_tie_stakes_at_the_tables_rate_and_pushes_the_hands():
    story = Story(tie_pays=9)
    with ace_then("3c", "3d", "4c", "4d"):  # 7 against 7: both stand, a tie
        story.ready()
        story.do("place_stake", "anna", spot="player", amount=100)
        events = story.coup(anna=("tie", 20), boris=("banker", 100))
    assert [(e.hand, e.total, e.decision) for e in events if e.type == "DrawDecided"] == [
        ("player", 7, "stand"), ("banker", 7, "stand")]
    assert events[-1].type == "PaymentMade"
    assert payments(events) == [("house", "anna", 180, "tie stake won")]  # the player and banker stakes: a push
    assert story.view["balances"] == {"marta": 0, "anna": 180, "boris": 0} and story.view["house"] == -180


def test_the_player_draws_on_four_and_the_banker_on_three_stands_against_an_eight():
    story = Story()
    with ace_then("2c", "Td", "2h", "3d", "8s"):
        story.ready()
        events = story.coup(anna=("banker", 100))
    assert types(events) == ["CardDealt"] * 4 + ["DrawDecided", "CardDealt", "DrawDecided", "CoupDecided",
                                                 "PaymentMade", "PaymentMade"]
    player_rule, third, banker_rule = events[4], events[5], events[6]
    assert (player_rule.hand, player_rule.total, player_rule.decision) == ("player", 4, "draw")
    assert player_rule.actor == "dealer-rule" and "draws on 0-5" in player_rule.rule
    assert (third.to, third.card, third.face_up, third.actor) == ("player", "8s", True, "marta")
    assert (banker_rule.hand, banker_rule.total, banker_rule.decision) == ("banker", 3, "stand")
    assert "worth 8" in banker_rule.rule
    assert (events[7].player_total, events[7].banker_total, events[7].outcome) == (2, 3, "banker")


def test_the_banker_draws_by_the_tableau_after_the_players_third_card():
    story = Story()
    with ace_then("2c", "Td", "2h", "3d", "5s", "6h"):  # player 4 draws 5: 9; banker 3 against a 5 draws 6: 9
        story.ready()
        events = story.coup(anna=("tie", 50))
    assert [e.card for e in events if e.type == "CardDealt"] == ["2c", "Td", "2h", "3d", "5s", "6h"]
    decided = next(e for e in events if e.type == "CoupDecided")
    assert (decided.player_hand, decided.banker_hand, decided.outcome) == (["2c", "2h", "5s"], ["Td", "3d", "6h"], "tie")
    assert payments(events) == [("house", "anna", 400, "tie stake won")]


def play_shoe(story, spot="player"):
    """Coups of one stake until the shoe is revealed; the deal events of each coup."""
    coups = []
    while story.table.phase != "shuffle":
        coups.append(story.coup(anna=(spot, 20)))
    return coups


def test_the_coup_after_the_stop_card_ends_the_shoe_and_reveals_its_seed():
    story = Story(decks=6, stop_card=20).ready()
    size = 6 * 52
    coups = play_shoe(story)
    [stop] = [i for i, c in enumerate(coups) if "StopCardCameOut" in types(c)]
    assert stop == len(coups) - 2, "one more coup is played after the one in which the stop card comes out"
    positions = [e.position for e in coups[stop] if e.type == "CardDealt"]
    assert positions[0] <= size - 20 <= positions[-1]
    assert all(e.position < size - 20 for c in coups[:stop] for e in c if e.type == "CardDealt")
    last = coups[-1]
    assert types(last)[-2:] == ["ShoeFinished", "ShoeRevealed"]
    shuffled = next(e for e in story.events if e.type == "ShoeShuffled")
    assert last[-1].seed == shuffled.seed and last[-1].actor == "service"
    view = story.view
    assert view["phase"] == "shuffle" and story.who() == [("shuffle", "marta")]
    assert view["burn"]["burned"] == story.table.burned and "??" not in view["burn"]["burned"]
    burned = [e.card for e in story.events if e.type == "CardDealt" and e.to == "burn" and not e.face_up]
    assert view["burn"]["burned"] == burned
    story.do("shuffle", "marta")
    assert story.view["shoe"]["number"] == 2 and story.view["burn"] == {"turned": None, "burned": []}
    assert story.view["round"] == len(coups)


def test_the_stop_card_coming_out_is_shown_until_the_last_coup_is_settled():
    story = Story(decks=6, stop_card=52).ready()
    while not story.view["shoe"]["last_coup"]:
        story.coup(boris=("banker", 20))
    assert story.view["phase"] == "stakes" and "StopCardCameOut" in types(story.events)
    events = story.coup(boris=("banker", 20))
    assert types(events)[-2:] == ["ShoeFinished", "ShoeRevealed"] and story.view["phase"] == "shuffle"


def test_each_round_is_one_coup_from_its_first_stake_to_its_settlement():
    story = Story(decks=6, stop_card=52).ready()
    story.do("place_stake", "boris", spot="tie", amount=20)
    play_shoe(story)
    public = [e.public() for e in story.events]
    rounds = rounds_of(MARKS, public)
    decided = [e for e in public if e["type"] == "CoupDecided"]
    assert len(rounds) == len(decided) == story.view["round"]
    by_version = {e["version"]: e for e in public}
    for r, d in zip(rounds, decided):
        assert by_version[r["first_version"]]["type"] == "StakePlaced"
        assert r["first_version"] < d["version"] <= r["last_version"]
        assert d["data"]["outcome"] in r["summary"]
    assert "revealed" in rounds[-1]["summary"] and by_version[rounds[-1]["last_version"]]["type"] == "ShoeRevealed"
    assert "boris" not in rounds[1]["summary"] and "1 player staked" in rounds[1]["summary"]


# --- invariants under random legal play ---------------------------------------------------------

rules_strategy = st.builds(
    lambda decks, stop, percent, tie, low, spread: {"decks": decks, "stop_card": stop, "commission_percent": percent,
                                                    "tie_pays": tie, "min_stake": low, "max_stake": low + spread},
    st.sampled_from(R.DECKS_ALLOWED), st.integers(R.MIN_STOP_CARD, R.MAX_STOP_CARD), st.integers(0, 10),
    st.sampled_from(R.TIE_PAYS_ALLOWED), st.integers(1, 100), st.integers(100, 5000),
)
common = settings(max_examples=20, deadline=None, suppress_health_check=[HealthCheck.too_slow])


def fields_within(entry, rng):
    """Random fields within an entry's bounds (a multiple where it says so)."""
    out = {}
    for name, bounds in entry["fields"].items():
        if bounds["kind"] == "choice":
            out[name] = rng.choice(bounds["choices"])
            continue
        step = bounds.get("multiple_of", 1)
        out[name] = step * rng.randint(bounds["min"] // step, min(bounds["max"], bounds["min"] + 5000) // step)
    return out


def play(stakers, rules, seed, commands):
    """Random legal commands (closing and dealing favoured, so that shoes end); yields the table after each
    one with the events it appended."""
    rng, clock, seeds = random.Random(seed), StepClock(), Seeds(seed)
    names = ["croupier"] + [f"p{i}" for i in range(stakers)]
    table = PuntoBancoTable.open(names, rules, clock(), croupier="croupier")
    yield table, table.collect_events()
    for _ in range(commands):
        expects = table.expects()
        entry = rng.choices(expects, [1 if e["command"] == "place_stake" else 4 for e in expects])[0]
        table.handle(entry["command"], entry["player"], fields_within(entry, rng), clock(), seeds, new_salt=seeds.salt)
        yield table, table.collect_events()


@common
@given(stakers=st.integers(1, 4), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_money_is_conserved_the_balances_and_the_house_always_sum_to_zero(stakers, rules, seed):
    for table, events in play(stakers, rules, seed, 500):
        view = table.view()
        assert sum(view["balances"].values()) + view["house"] == 0
        assert view["balances"]["croupier"] == 0
        for e in events:
            if e.type == "PaymentMade":
                assert isinstance(e.amount, int) and e.amount > 0 and "house" in (e.payer, e.payee)


@common
@given(stakers=st.integers(1, 4), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_every_card_is_in_exactly_one_place(stakers, rules, seed):
    positions: list[int] = []
    for table, events in play(stakers, rules, seed, 500):
        for e in events:
            if e.type == "ShoeShuffled":
                positions = []
            elif e.type == "CardDealt":
                positions.append(e.position)
        shoe, view = table.shoe, table.view()
        if not shoe:
            continue
        assert positions == list(range(shoe["dealt"])), "each card of the shoe is dealt once, in order"
        dealt = shoe["cards"][: shoe["dealt"]]
        burn = [view["burn"]["turned"]] + table.burned if view["burn"]["turned"] else []
        hands = view["hands"]["player"] + view["hands"]["banker"]
        assert dealt[: len(burn)] == burn
        if hands:
            assert sorted(dealt[len(dealt) - len(hands):]) == sorted(hands)
        counted = view["shoe"]["remaining"] + len(burn) + view["discarded"] + len(hands)
        assert counted == len(shoe["cards"]) == 52 * rules["decks"]


@common
@given(stakers=st.integers(1, 3), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_no_view_shows_an_undealt_or_burned_card_and_no_event_an_unrevealed_seed(stakers, rules, seed):
    secret: set[str] = set()
    for table, events in play(stakers, rules, seed, 500):
        for e in events:
            if e.type == "ShoeShuffled":
                secret.add(e.seed)
                assert "seed" not in e.public_data
            elif e.type == "ShoeRevealed":
                secret.discard(e.seed)
            elif e.type == "CardDealt" and e.to == "burn" and e.position > 0:
                assert not e.face_up, "a burned card is recorded face down"
            text = json.dumps(e.public())
            assert not any(s in text for s in secret)
        view = table.view()
        text = json.dumps(view)
        assert not any(s in text for s in secret)
        shoe = table.shoe
        visible = list(view["hands"]["player"]) + list(view["hands"]["banker"]) + [view["burn"]["turned"]]
        if shoe and shoe["revealed"]:
            visible += table.burned
        else:
            assert set(view["burn"]["burned"]) <= {"??"}
        for card in CARD.findall(text):
            assert card in visible, f"the state shows {card}, which is neither in a hand nor turned"
        assert set(view["shoe"]) == {"number", "dealt", "remaining", "last_coup"}


@settings(max_examples=10, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stakers=st.integers(1, 3), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_every_expected_command_is_taken_at_the_ends_of_its_bounds_and_refused_past_them(stakers, rules, seed):
    rng = random.Random(seed)
    clock, seeds = StepClock(), Seeds(seed)
    for table, _ in play(stakers, rules, seed, 60):
        for entry in table.expects():
            ends = [{}]
            for name, bounds in entry["fields"].items():
                if bounds["kind"] in ("int", "amount"):
                    step = bounds.get("multiple_of", 1)
                    ends = [{name: bounds["min"]}, {name: bounds["max"]}, {name: bounds["min"] - 1},
                            {name: bounds["max"] + 1}] + ([{name: bounds["min"] + step // 2}] if step > 1 else [])
            for k, end in enumerate(ends):
                trial = copy.deepcopy(table)
                args = {**fields_within(entry, rng), **end}
                if k < 2:
                    trial.handle(entry["command"], entry["player"], args, clock(), seeds, new_salt=seeds.salt)
                    assert trial.version > table.version
                else:
                    with pytest.raises((BadArgument, NotAllowedNow)):
                        trial.handle(entry["command"], entry["player"], args, clock(), seeds, new_salt=seeds.salt)


@settings(max_examples=8, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(stakers=st.integers(1, 3), rules=rules_strategy, seed=st.integers(0, 10**6))
def test_every_command_is_told_by_its_events_and_run_again_records_them_to_the_byte(stakers, rules, seed):
    """What the audit does: the command read back from the recorded events, run on the table as it was."""
    before = None
    prev = ""
    for table, events in play(stakers, rules, seed, 400):
        if before is not None:
            for e in events:
                assert e.digest == digest(prev, e.originator_version, e.type, e.timestamp_text, e.actor, e.data,
                                          e.salts)
                prev = e.digest
            command, player, args = before.command_of([e.public() for e in events])
            seeds = iter([bytes.fromhex(e.seed) for e in events if e.type == "ShoeShuffled"])
            salts = iter([salt for e in events for salt in (e.salts or {}).values()])
            before.handle(command, player, args, events[0].timestamp, lambda: next(seeds), new_salt=lambda: next(salts))
            again = before.collect_events()
            assert [(e.type, e.actor, e.data, e.digest) for e in again] == [
                (e.type, e.actor, e.data, e.digest) for e in events]
        else:
            prev = events[-1].digest
        before = copy.deepcopy(table)


def replayed(events):
    """The table rebuilt from its first events alone, as a replay to that version rebuilds it."""
    table = None
    for event in events:
        table = event.mutate(table)
    return table


def test_the_stakes_stay_on_the_felt_until_each_is_paid_and_a_push_until_the_coups_last_payment():
    story = Story(tie_pays=9)
    with ace_then("2c", "4d", "Ac", "4h"):  # player 3, banker a natural 8
        story.ready()
        story.do("place_stake", "anna", spot="player", amount=100)
        events = story.coup(anna=("tie", 20), boris=("banker", 100))
    decided = next(i for i, e in enumerate(story.events) if e.type == "CoupDecided")
    shown = [replayed(story.events[: decided + 1 + paid]).view()["stakes"] for paid in range(4)]

    assert payments(events) == [("anna", "house", 100, "player stake lost"), ("anna", "house", 20, "tie stake lost"),
                                ("house", "boris", 100, "banker stake won"), ("boris", "house", 5, "banker commission")]
    assert shown == [
        {"anna": {"player": 100, "tie": 20}, "boris": {"banker": 100}},  # decided: nothing paid yet
        {"anna": {"tie": 20}, "boris": {"banker": 100}},
        {"boris": {"banker": 100}},
        {"boris": {"banker": 100}},  # won, and its commission still to take
    ]
    assert story.view["stakes"] == {}  # the coup's last payment made


def test_stakes_pushed_by_a_tie_leave_the_felt_with_the_coups_last_payment():
    story = Story()
    with ace_then("3c", "3d", "4c", "4d"):  # 7 against 7, a tie
        story.ready()
        story.coup(anna=("player", 100), boris=("banker", 100))  # both pushed: no payment at all
    decided = next(i for i, e in enumerate(story.events) if e.type == "CoupDecided")
    assert replayed(story.events[: decided + 1]).view()["stakes"] == {}


def test_a_refusal_while_stakes_are_open_names_each_players_stake_once_whatever_spots_he_has():
    story = Story().ready()
    story.do("place_stake", "anna", spot="player", amount=20)
    with pytest.raises(NotAllowedNow) as refused:
        story.do("shuffle", "boris")
    message = refused.value.message
    assert message.count("place_stake by anna") == 1 and message.count("place_stake by boris") == 1, message
    assert len([e for e in story.table.expects() if e["player"] == "anna"]) > 1  # one entry per spot offered
