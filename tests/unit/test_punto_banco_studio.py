"""A studio's punto banco table on the aggregate itself: open seats (bettors join with their first stake), timed
betting windows, the banker's and the tie's own limits and the table's exposure (docs/rules/punto-banco.md,
"A studio's table")."""

from __future__ import annotations

from datetime import timedelta

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from domain.errors import InvalidPlayers, InvalidRules, NotAllowedNow
from domain.punto_banco import rules as R
from domain.punto_banco.table import PuntoBancoTable, StakesAreClosed
from domain.sight import PLAYER, Viewer
from tests.helpers import Seeds, StepClock


class Studio:
    """A table whose clock moves only when told (``wait``), so that a window's deadline is named exactly."""

    def __init__(self, named=(), seed=0, **rules):
        self.clock, self.seeds = StepClock(step=timedelta(milliseconds=1)), Seeds(seed)
        self.table = PuntoBancoTable.open(["marta", *named], dict(rules), self.clock(), croupier="marta")
        self.events = list(self.table.collect_events())

    def do(self, command, player, **args):
        self.table.handle(command, player, args, self.clock(), self.seeds, new_salt=self.seeds.salt)
        new = list(self.table.collect_events())
        self.events += new
        return new

    def wait(self, seconds):
        self.clock.now += timedelta(seconds=seconds)

    def ready(self, cutter="marta"):
        self.do("shuffle", "marta")
        self.do("cut", cutter, position=50)
        return self

    def stake(self, player, spot, amount):
        return self.do("place_stake", player, spot=spot, amount=amount)


OPEN = {"open_seats": True, "min_window": 5, "max_window": 30}


# --- open seats ------------------------------------------------------------------------------------

def test_an_open_table_lists_the_croupier_alone_and_the_croupier_cuts():
    studio = Studio(**OPEN).ready()
    assert studio.table.players == ["marta"] and studio.table.phase == "stakes"


def test_a_table_that_is_not_open_needs_a_player_who_stakes():
    with pytest.raises(InvalidPlayers, match="only the croupier was listed"):
        Studio()


def test_a_bettors_first_stake_records_that_he_joined_and_the_next_does_not():
    studio = Studio(**OPEN).ready()
    joined, staked = studio.stake("anna", "player", 100)
    assert (joined.type, joined.actor, joined.player) == ("BettorJoined", "service", "anna")
    assert (staked.type, staked.player, staked.total) == ("StakePlaced", "anna", 100)
    assert [e.type for e in studio.stake("anna", "player", 50)] == ["StakePlaced"]
    assert studio.table.players == ["marta", "anna"] and studio.table.balances == {"marta": 0, "anna": 0}
    assert [(e["command"], e["player"]) for e in own_expects(studio.table, "anna")] == [
        ("place_stake", "anna"), ("place_stake", "anna")]  # the player and a tie: never both hands


def own_expects(table, player):
    return table.expects_seen(table.sight(Viewer(PLAYER, player)))


def test_an_open_table_offers_its_stakes_to_anyone_once_and_each_player_reads_his_own_bounds():
    studio = Studio(max_stake=1000, **OPEN).ready()
    studio.stake("anna", "player", 400)
    offered = [(e["command"], e["player"], e["fields"]["amount"]["max"]) for e in studio.table.expects()
               if e["command"] == "place_stake"]
    assert offered == [("place_stake", "*", 1000), ("place_stake", "*", 1000), ("place_stake", "*", 1000)]
    assert {"command": "place_stake", "player": "*"} in studio.table.view()["waits_for"]
    annas = {e["fields"]["spot"]["choices"][0]: e["fields"]["amount"]["max"] for e in own_expects(studio.table, "anna")}
    assert annas == {"player": 600, "tie": 1000}
    assert len(own_expects(studio.table, "boris")) == 3  # not yet at the table: a newcomer's bounds
    assert "place_stake" not in {e["command"] for e in own_expects(studio.table, "marta")}  # the croupier stakes not


def test_a_bettor_is_paid_like_a_named_player():
    studio = Studio(**OPEN).ready()
    studio.stake("anna", "tie", 100)
    studio.do("close_stakes", "marta")
    studio.do("deal", "marta")
    assert studio.table.balances["anna"] + studio.table.accounts["house"] == 0
    assert studio.table.balances["anna"] in (-100, 800)


@pytest.mark.parametrize("name, why", [
    ("house", "reserved"), ("banker", "reserved"), (" anna", "spaces"), ("Anna", "one name"), ("аnna", "look alike"),
])
def test_a_bettor_whose_name_is_not_allowed_or_reads_as_anothers_is_refused_and_nothing_is_recorded(name, why):
    studio = Studio(**OPEN).ready()
    studio.stake("anna", "player", 100)
    with pytest.raises(InvalidPlayers):
        studio.stake(name, "player", 100)
    assert studio.table.players == ["marta", "anna"] and not studio.table.pending_events


def test_the_croupier_may_not_stake_at_an_open_table_and_a_stranger_may_not_at_a_closed_one():
    studio = Studio(**OPEN).ready()
    with pytest.raises(NotAllowedNow, match="croupier"):
        studio.stake("marta", "player", 100)
    closed = Studio(named=("anna",)).ready(cutter="anna")
    with pytest.raises(NotAllowedNow, match="not a player at this table"):
        closed.stake("boris", "player", 100)


def test_the_audit_reads_a_bettors_first_stake_as_his_stake():
    studio = Studio(**OPEN).ready()
    before = PuntoBancoTable.open(["marta"], dict(OPEN), studio.clock(), croupier="marta")  # only for command_of
    events = [e.public() for e in studio.stake("anna", "banker", 100)]
    assert before.command_of(events) == ("place_stake", "anna", {"spot": "banker", "amount": 100})


# --- the betting window ----------------------------------------------------------------------------

def test_only_a_table_whose_rules_bound_its_windows_offers_to_open_the_stakes():
    plain = Studio(named=("anna",)).ready(cutter="anna")
    assert "open_stakes" not in {e["command"] for e in plain.table.expects()}
    timed = Studio(**OPEN).ready()
    [entry] = [e for e in timed.table.expects() if e["command"] == "open_stakes"]
    assert entry["player"] == "marta" and entry["fields"]["seconds"]["min"] == 5
    assert entry["fields"]["seconds"]["max"] == 30


@pytest.mark.parametrize("seconds", [4, 31, 0, -1])
def test_a_window_outside_the_tables_bounds_is_refused_naming_them(seconds):
    studio = Studio(**OPEN).ready()
    with pytest.raises(R.BadArgument, match="from 5 to 30 seconds"):
        studio.do("open_stakes", "marta", seconds=seconds)


def test_a_stake_before_the_deadline_is_taken_and_one_after_it_is_refused_with_the_deadline():
    studio = Studio(**OPEN).ready()
    [opened] = studio.do("open_stakes", "marta", seconds=15)
    assert studio.table.view()["window"] == {"seconds": 15, "closes_at": opened.closes_at}
    studio.wait(14.9)
    studio.stake("anna", "player", 100)
    studio.wait(0.2)
    with pytest.raises(StakesAreClosed) as refused:
        studio.stake("boris", "player", 100)
    assert opened.closes_at in refused.value.message and refused.value.details["closes_at"] == opened.closes_at
    assert "boris" not in studio.table.players


def test_the_deal_after_the_deadline_records_the_close_by_the_rules_first():
    studio = Studio(**OPEN).ready()
    studio.do("open_stakes", "marta", seconds=5)
    studio.stake("anna", "player", 100)
    studio.wait(5)
    dealt = studio.do("deal", "marta")
    assert (dealt[0].type, dealt[0].actor, dealt[0].stakes) == ("StakesClosed", "dealer-rule", {"anna": {"player": 100}})
    assert dealt[1].type == "CardDealt" and studio.table.window is None
    events = [e.public() for e in dealt]
    assert studio.table.command_of(events) == ("deal", "marta", {})


def test_the_croupier_may_close_a_window_early_and_after_its_deadline():
    early = Studio(**OPEN).ready()
    early.do("open_stakes", "marta", seconds=30)
    early.stake("anna", "player", 100)
    [closed] = early.do("close_stakes", "marta")
    assert closed.actor == "marta" and early.table.phase == "deal"
    late = Studio(**OPEN).ready()
    late.do("open_stakes", "marta", seconds=5)
    late.stake("anna", "player", 100)
    late.wait(6)
    assert [e.type for e in late.do("close_stakes", "marta")] == ["StakesClosed"]


def test_a_window_nobody_staked_in_lapses_and_the_croupier_opens_another():
    studio = Studio(**OPEN).ready()
    studio.do("open_stakes", "marta", seconds=5)
    studio.wait(5)
    with pytest.raises(StakesAreClosed):
        studio.stake("anna", "player", 100)
    with pytest.raises(NotAllowedNow):
        studio.do("deal", "marta")
    studio.do("open_stakes", "marta", seconds=10)
    studio.stake("anna", "player", 100)


def test_a_window_once_open_is_not_opened_again():
    studio = Studio(**OPEN).ready()
    studio.do("open_stakes", "marta", seconds=10)
    with pytest.raises(NotAllowedNow):
        studio.do("open_stakes", "marta", seconds=10)


# --- the spots' own limits ---------------------------------------------------------------------------

LIMITS = {"min_stake": 20, "max_stake": 1000, "max_banker_stake": 500, "max_tie_stake": 100}


@pytest.mark.parametrize("spot, most", [("player", 1000), ("banker", 500), ("tie", 100)])
def test_each_spot_takes_up_to_its_own_limit_and_refuses_past_it_naming_what_is_left(spot, most):
    studio = Studio(named=("anna",), **LIMITS).ready(cutter="anna")
    [entry] = [e for e in studio.table.expects() if e["command"] == "place_stake" and e["fields"]["spot"]["choices"] == [spot]]
    assert entry["fields"]["amount"]["max"] == most
    studio.stake("anna", spot, most - 40)
    with pytest.raises(R.StakeRefused) as refused:
        studio.stake("anna", spot, 60)
    assert refused.value.details["max_allowed"] == 40 and str(most) in refused.value.message
    studio.stake("anna", spot, 40)


@pytest.mark.parametrize("options, option", [
    ({"max_banker_stake": 10}, "max_banker_stake"),  # below min_stake
    ({"max_tie_stake": 20_000}, "max_tie_stake"),  # above max_stake
    ({"commission_percent": 1, "max_stake": 1000, "max_banker_stake": 50}, "max_banker_stake"),  # no multiple of 100
    ({"max_exposure": 0}, "max_exposure"),
    ({"open_seats": "yes"}, "open_seats"),
    ({"min_window": 0}, "min_window"),
    ({"min_window": 20, "max_window": 10}, "max_window"),
    ({"max_window": 3601}, "max_window"),
])
def test_studio_options_out_of_range_are_refused_at_the_opening(options, option):
    with pytest.raises(InvalidRules) as refused:
        Studio(named=("anna",), **options)
    assert refused.value.option == option


def test_the_studio_options_are_recorded_only_when_given():
    assert set(Studio(named=("anna",)).table.rules) == set(R.DEFAULT_RULES)
    assert Studio(**OPEN).table.rules == {**R.DEFAULT_RULES, **OPEN}


# --- the table's exposure ----------------------------------------------------------------------------

def test_the_exposure_is_the_most_the_house_may_lose_on_any_outcome():
    rules = R.resolve_rules({"tie_pays": 8, "commission_percent": 5})
    def exposure(stakes):
        return R.exposure(rules, R.spot_totals(stakes))
    assert exposure({}) == 0
    assert exposure({"a": {"player": 100}}) == 100
    assert exposure({"a": {"player": 100}, "b": {"banker": 100}}) == 0  # either way one pays the other
    assert exposure({"a": {"banker": 200}}) == 190
    assert exposure({"a": {"tie": 100}, "b": {"player": 500}}) == 800  # a tie returns the player stake


@pytest.mark.parametrize("spot, room", [("player", 1000), ("banker", 1040), ("tie", 125)])
def test_a_stake_past_the_exposure_is_refused_naming_the_limit_and_what_is_left(spot, room):
    studio = Studio(named=("anna", "boris"), max_stake=10_000, max_exposure=1000).ready(cutter="anna")
    entry = next(e for e in studio.table.expects()
                 if e["player"] == "anna" and e["fields"]["spot"]["choices"] == [spot])
    assert entry["fields"]["amount"]["max"] == room
    unit = 20 if spot == "banker" else 1
    with pytest.raises(R.StakeRefused) as refused:
        studio.stake("anna", spot, room + unit)
    assert "1000" in refused.value.message and refused.value.details["max_exposure"] == 1000
    assert refused.value.details["max_allowed"] == room
    studio.stake("anna", spot, room)
    assert studio.table.view()["exposure"] == {"now": R.exposure(studio.table.rules, R.spot_totals(studio.table.stakes)), "limit": 1000}


def test_a_stake_on_the_other_hand_frees_room_on_the_first():
    studio = Studio(named=("anna", "boris"), max_exposure=1000).ready(cutter="anna")
    studio.stake("anna", "player", 1000)
    with pytest.raises(R.StakeRefused, match="nothing more may be staked on the player"):
        studio.stake("boris", "player", 20)
    studio.stake("boris", "banker", 500)
    assert R.exposure_room(studio.table.rules, R.spot_totals(studio.table.stakes), "player") == 500


@settings(max_examples=60, deadline=None)
@given(st.lists(st.tuples(st.integers(0, 5), st.sampled_from(R.SPOTS), st.integers(1, 3000)), max_size=30),
       st.integers(100, 5000))
def test_whatever_is_staked_the_exposure_never_passes_its_limit_and_every_offered_amount_is_taken(stakes, limit):
    names = [f"bettor{i}" for i in range(6)]
    table = PuntoBancoTable.open(["marta"], {"open_seats": True, "max_exposure": limit, "max_stake": 3000},
                                 StepClock()(), croupier="marta")
    clock, seeds = StepClock(), Seeds(1)
    table.handle("shuffle", "marta", {}, clock(), seeds)
    table.handle("cut", "marta", {"position": 10}, clock(), seeds, new_salt=seeds.salt)
    for who, spot, amount in stakes:
        offered = [e["fields"]["amount"] for e in own_expects(table, names[who])
                   if e["fields"]["spot"]["choices"] == [spot]]
        try:
            table.handle("place_stake", names[who], {"spot": spot, "amount": amount}, clock(), seeds)
        except R.StakeRefused:
            if offered:
                bounds = offered[0]
                fits = bounds["min"] <= amount <= bounds["max"] and amount % bounds.get("multiple_of", 1) == 0
                assert not fits, (spot, amount, bounds)
        else:
            if offered:
                assert offered[0]["min"] <= amount <= offered[0]["max"]
        assert R.exposure(table.rules, R.spot_totals(table.stakes)) <= limit
        assert table.totals_now == R.spot_totals(table.stakes)  # the kept sums are the stakes' own
        table.collect_events()
