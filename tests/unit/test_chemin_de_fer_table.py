"""Stories of a Chemin de fer table, played on the aggregate itself (no service, no store)."""

from __future__ import annotations

import pytest

from domain.chemin_de_fer.table import ChemindeferTable
from domain.errors import BadArgument, IllegalDraw, NotAllowedNow, StakeAboveBank, UnknownCommand
from tests.helpers import Seeds, StepClock, stacked_shoe


class Game:
    def __init__(self, players=("anna", "boris", "vera"), seed=0, **rules):
        self.clock = StepClock()
        self.seeds = Seeds(seed)
        self.table = ChemindeferTable.open(list(players), dict(rules), self.clock())
        self.events = list(self.table.collect_events())

    def do(self, command, player, **args):
        self.table.handle(command, player, args, self.clock(), self.seeds, new_salt=self.seeds.salt)
        new = list(self.table.collect_events())
        self.events += new
        return new

    @property
    def expects(self):
        """Who may do what now (the fields' bounds are checked by tests of their own)."""
        return [{k: v for k, v in e.items() if k != "fields"} for e in self.table.expects()]

    def types(self, events):
        return [e.type for e in events]

    @property
    def banker(self):
        return self.table.banker

    def seat(self, offset):
        """The player `offset` seats to the banker's left (negative: right)."""
        seats = self.table.seats
        return seats[(self.table.banker_seat + offset) % len(seats)]

    def ready(self, bank=100, cut=10):
        self.do("draw_seats", self.table.players[0])
        self.do("shuffle", self.banker)
        self.do("cut", self.seat(-1), position=cut)
        self.do("post_bank", self.banker, amount=bank)
        return self

    def stake_all(self, *amounts):
        """Players from the banker's left stake the given amounts (None = pass)."""
        for k, amount in enumerate(amounts, start=1):
            if amount is None:
                self.do("pass", self.seat(k))
            else:
                self.do("place_stake", self.seat(k), amount=amount)


# --- A.1 seating by lots -------------------------------------------------------------------------

def test_lots_seat_the_highest_rank_as_banker_at_seat_0_and_the_rest_clockwise_by_rank():
    g = Game()
    events = g.do("draw_seats", "vera")
    lots = [e for e in events if e.type == "CardDealt"]
    assert events[0].type == "ShoeShuffled" and events[0].deck == "lots" and events[0].decks == 1
    assert events[-2].type == "SeatsDrawn" and events[-1].type == "ShoeRevealed"
    assert events[-1].seed == events[0].seed  # the lots deck is revealed as soon as seats are decided
    last_draw = {e.to: e.card for e in lots}
    ranks = [ "23456789TJQKA".index(last_draw[p][0]) for p in g.table.seats]
    assert g.table.seats[0] == g.banker
    assert sorted(g.table.seats) == ["anna", "boris", "vera"]
    assert [e.position for e in lots] == list(range(len(lots)))
    assert ranks[0] >= ranks[1] >= ranks[2]


def _seed_with_a_tie():
    for seed in range(500):
        g = Game(players=("anna", "boris"), seed=seed)
        events = g.do("draw_seats", "anna")
        if sum(e.type == "CardDealt" for e in events) > 2:
            return g, events
    raise AssertionError("no tie in 500 seeds")


def test_tied_players_draw_again_among_themselves_and_every_draw_is_recorded():
    g, events = _seed_with_a_tie()
    draws = [(e.to, e.card) for e in events if e.type == "CardDealt"]
    assert draws[0][1][0] == draws[1][1][0]  # the first two drew the same rank
    assert [p for p, _ in draws[:2]] == ["anna", "boris"]
    final = dict(draws[-2:])
    assert final[g.table.seats[0]][0] != final[g.table.seats[1]][0]


def test_seats_are_drawn_only_once():
    g = Game().ready()
    with pytest.raises(NotAllowedNow):
        g.do("draw_seats", "anna")


# --- A.2 shoe and cut ------------------------------------------------------------------------------

def test_only_the_banker_shuffles_and_the_shoe_holds_as_many_decks_as_players():
    g = Game()
    g.do("draw_seats", "anna")
    with pytest.raises(NotAllowedNow, match=f"shuffle by {g.banker}"):
        g.do("shuffle", g.seat(1))
    (shuffled,) = g.do("shuffle", g.banker)
    assert shuffled.decks == 3 and shuffled.deck == "shoe" and shuffled.shoe == 2


def test_only_the_player_to_the_bankers_right_cuts_within_1_to_n_minus_1():
    g = Game(decks=2)
    g.do("draw_seats", "anna")
    g.do("shuffle", g.banker)
    with pytest.raises(NotAllowedNow, match=f"cut by {g.seat(-1)}"):
        g.do("cut", g.seat(1), position=5)
    for bad in (0, 104):
        with pytest.raises(BadArgument, match="from 1 to 103"):
            g.do("cut", g.seat(-1), position=bad)
    (cut,) = g.do("cut", g.seat(-1), position=103)
    assert cut.position == 103


# --- A.3 - A.6 bank and stakes ---------------------------------------------------------------------

def test_stakes_go_clockwise_from_the_bankers_left_one_at_a_time():
    g = Game().ready()
    with pytest.raises(NotAllowedNow, match=f"not {g.seat(2)}'s turn"):
        g.do("place_stake", g.seat(2), amount=10)
    g.do("place_stake", g.seat(1), amount=10)
    assert g.expects == [
        {"command": "place_stake", "player": g.seat(2)},
        {"command": "pass", "player": g.seat(2)},
    ]


def test_a_stake_above_the_uncovered_rest_is_refused_naming_the_largest_allowed():
    g = Game().ready(bank=100)
    g.do("place_stake", g.seat(1), amount=70)
    with pytest.raises(StakeAboveBank) as refused:
        g.do("place_stake", g.seat(2), amount=31)
    assert refused.value.max_allowed == 30
    assert "largest stake allowed is 30" in refused.value.message


def test_a_covered_bank_skips_the_players_still_to_speak():
    g = Game(players=("anna", "boris", "vera", "gleb")).ready(bank=50)
    g.do("place_stake", g.seat(1), amount=50)
    assert g.expects == [{"command": "close_stakes", "player": g.banker}]


def test_stakes_cannot_be_closed_before_everyone_has_spoken():
    g = Game().ready()
    g.do("place_stake", g.seat(1), amount=10)
    with pytest.raises(NotAllowedNow):
        g.do("close_stakes", g.banker)


def test_closing_short_stakes_withdraws_the_excess_and_the_largest_stake_plays():
    g = Game().ready(bank=100)
    g.stake_all(20, 40)
    events = g.do("close_stakes", g.banker)
    assert g.types(events) == ["StakesClosed", "ExcessWithdrawn"]
    assert events[0].punter == g.seat(2)
    assert events[1].amount == 40 and events[1].bank_at_risk == 60
    assert g.table.bank == 60


def test_when_everyone_passes_no_coup_is_dealt_and_the_banker_posts_again_or_passes_the_bank():
    g = Game().ready()
    g.do("pass", g.seat(1))
    events = g.do("pass", g.seat(2))
    assert g.types(events) == ["StakePassed", "CoupCalledOff"]
    assert {e["command"] for e in g.expects} == {"post_bank", "pass_bank"}
    old = g.banker
    (passed,) = g.do("pass_bank", old)
    assert passed.type == "BankPassed" and passed.to_banker == g.banker == g.seat(0)
    assert g.table.seats.index(g.banker) == (g.table.seats.index(old) + 1) % 3


# --- A.7 - A.11 deal, draws, showdown ----------------------------------------------------------------

def play_to_deal(top, **rules):
    g = Game(**rules)
    g.ready(bank=100)
    g.stake_all(30, None)
    g.do("close_stakes", g.banker)
    return g


def test_the_deal_alternates_punter_banker_face_down_and_a_natural_decides_at_once():
    # punter 9 (natural) against banker 7
    with stacked_shoe(["4s", "3h", "5d", "4c"]):
        g = play_to_deal(None)
        punter, banker = g.table.punter, g.banker
        events = g.do("deal", banker)
    dealt = [e for e in events if e.type == "CardDealt"]
    assert [(e.to, e.face_up) for e in dealt] == [(punter, False), (banker, False)] * 2
    shown = next(e for e in events if e.type == "HandsShown")
    assert shown.natural and shown.punter_total == 9 and shown.banker_total == 7
    settled = next(e for e in events if e.type == "CoupSettled")
    assert settled.winner == "punter"


def test_a_forced_punter_draw_is_applied_at_once_and_recorded_as_decided_by_the_rule():
    # punter 2+2 = 4 must draw; then the banker's choice: banker 7 stands (forced)
    with stacked_shoe(["2s", "3h", "2d", "4c", "9s"]):
        g = play_to_deal(None)
        events = g.do("deal", g.banker)
    third = [e for e in events if e.type == "CardDealt"][4]
    assert third.actor == "dealer-rule" and third.face_up and third.card == "9s"
    stood = next(e for e in events if e.type == "HandStood")
    assert stood.actor == "dealer-rule" and stood.hand == "banker" and stood.total == 7
    assert events[-1].type in ("PaymentMade", "BankPassed", "ShoeRevealed")


def test_a_punter_on_five_chooses_and_then_the_banker_follows_the_tableau():
    # punter 5 (free choice), banker 3; punter draws an 8, banker on 3 against 8 must stand
    with stacked_shoe(["2s", "Th", "3d", "3c", "8s"]):
        g = play_to_deal(None)
        g.do("deal", g.banker)
        assert g.expects == [
            {"command": "draw", "player": g.table.punter},
            {"command": "stand", "player": g.table.punter},
        ]
        events = g.do("draw", g.table.punter)
    assert events[0].type == "CardDealt" and events[0].actor == g.seat(1)
    assert events[1].type == "HandStood" and events[1].actor == "dealer-rule"


def test_without_auto_forced_the_illegal_choice_is_refused_with_the_rule_that_forces_the_draw():
    with stacked_shoe(["2s", "3h", "2d", "4c", "9s"]):
        g = play_to_deal(None, auto_forced=False)
        g.do("deal", g.banker)
        assert g.expects == [{"command": "draw", "player": g.table.punter}]
        with pytest.raises(IllegalDraw, match="must draw on 4"):
            g.do("stand", g.table.punter)
        g.do("draw", g.table.punter)
        with pytest.raises(IllegalDraw, match="banker must stand"):
            g.do("draw", g.banker)
        events = g.do("stand", g.banker)
    assert events[0].actor == g.banker


def test_the_banker_on_three_against_a_nine_chooses_freely():
    with stacked_shoe(["2s", "Th", "2d", "3c", "9s"]):
        g = play_to_deal(None)
        g.do("deal", g.banker)  # punter 4 draws 9 (forced); banker 3 vs 9: free
    assert {e["command"] for e in g.expects} == {"draw", "stand"}
    assert g.expects[0]["player"] == g.banker


def test_only_the_punter_decides_the_punters_third_card():
    with stacked_shoe(["2s", "Th", "3d", "3c"]):
        g = play_to_deal(None)
        g.do("deal", g.banker)
        with pytest.raises(NotAllowedNow):
            g.do("draw", g.banker)


def test_a_winning_banker_keeps_the_bank_plus_the_stakes_less_commission_and_may_give_it_up():
    # punter 0, banker 9: banker natural
    with stacked_shoe(["Ts", "4h", "Jd", "5c"]):
        g = play_to_deal(None, commission_percent=5)
        events = g.do("deal", g.banker)
    payments = [e for e in events if e.type == "PaymentMade"]
    assert [(p.payer, p.payee, p.amount) for p in payments] == [
        (g.seat(1), g.banker, 30), (g.banker, "house", 1)
    ]
    assert g.table.bank == 30 + 30 - 1 and g.table.phase == "stakes"
    assert {"command": "pass_bank", "player": g.banker} in g.expects
    g.do("pass", g.seat(1))
    assert {"command": "pass_bank", "player": g.banker} not in g.expects


def test_a_losing_banker_pays_every_stake_and_loses_the_bank_to_the_next_seat():
    with stacked_shoe(["4s", "Th", "5d", "Jc"]):  # punter 9 natural vs banker 0
        g = play_to_deal(None)
        banker = g.banker
        events = g.do("deal", banker)
    assert [e.type for e in events][-2:] == ["PaymentMade", "BankPassed"]
    assert events[-1].from_banker == banker and events[-1].to_banker == g.seat(0) != banker
    assert g.expects == [{"command": "post_bank", "player": g.banker}]


def test_a_tie_pays_nothing_and_the_coup_is_dealt_again_with_the_same_stakes_and_bank():
    with stacked_shoe(["4s", "5h", "4d", "3c"]):  # 8 against 8, both natural
        g = play_to_deal(None)
        events = g.do("deal", g.banker)
    assert g.types(events)[-1] == "CoupTied"
    assert not any(e.type == "PaymentMade" for e in events)
    assert g.table.stakes == {g.seat(1): 30} and g.table.bank == 30
    assert g.expects == [{"command": "deal", "player": g.banker}]
    round_before = g.table.coup
    g.do("deal", g.banker)
    assert g.table.coup == round_before + 1  # a re-dealt tie is a round of its own


# --- A.2 stop card -----------------------------------------------------------------------------------

def test_a_coup_into_the_stop_zone_finishes_the_shoe_reveals_it_and_play_resumes_after_a_new_shuffle():
    g = Game(players=("anna", "boris"), decks=2, stop_card=6).ready(bank=1000, cut=1)
    shoe = g.table.shoe
    while g.table.phase != "shuffle":
        if g.table.phase == "stakes":
            g.do("place_stake", g.seat(1), amount=1)
        elif g.table.phase == "bank":
            g.do("post_bank", g.banker, amount=1000)
        else:
            e = g.expects[0]
            g.do(e["command"], e["player"])
    finished = [e for e in g.events if e.type == "ShoeFinished"][-1]
    revealed = g.events[-1]
    assert revealed.type == "ShoeRevealed" and revealed.seed == shoe["seed"]
    assert finished.dealt >= 104 - 6 + 1
    resume = g.table.resume
    g.do("shuffle", g.banker)
    g.do("cut", g.seat(-1), position=50)
    assert g.table.phase == resume


# --- commands and arguments --------------------------------------------------------------------------

def test_unknown_commands_and_malformed_fields_are_refused_before_any_rule():
    g = Game().ready()
    with pytest.raises(UnknownCommand, match="commands are"):
        g.do("lead", g.seat(1))
    with pytest.raises(BadArgument, match="whole number above 0"):
        g.do("place_stake", g.seat(1), amount=0)
    with pytest.raises(BadArgument, match="needs the field 'amount'"):
        g.do("place_stake", g.seat(1))
    with pytest.raises(BadArgument, match="unexpected field 'position'"):
        g.do("pass", g.seat(1), position=3)
    assert g.table.pending_events == []


def test_refused_commands_record_nothing():
    g = Game().ready()
    version = g.table.version
    for command, player, args in [
        ("place_stake", g.seat(1), {"amount": 1000}),
        ("deal", g.banker, {}),
        ("place_stake", g.banker, {"amount": 5}),
    ]:
        with pytest.raises(Exception):
            g.do(command, player, **args)
    assert g.table.version == version and g.table.pending_events == []
