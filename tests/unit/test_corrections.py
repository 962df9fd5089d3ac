"""Corrections in the domain (domain/corrections.py): the table's own count of rounds is the read model's, a void
needs two different supervisors, no event recorded before it changes, a replay of the log gives the voided
table again, and every game says what its void does."""

from __future__ import annotations

import dataclasses
import random

import pytest

from domain.errors import BadArgument, NotYourSeat
from domain.game import FieldSpec, Game
from domain.games import GAMES, ROUND_MARKS
from domain.sight import EVERYTHING
from domain.rounds import RoundTracker
from tests.helpers import Seeds, StepClock, pick
from tests.voiding import TABLES, money

WEIGHTS = {"place_stake": 1, "pass": 1, "pass_bank": 1}


class Played:
    """A table of a game played through the domain with random legal commands, its every event kept."""

    def __init__(self, game: str, seed: int = 3) -> None:
        self.rng, self.clock, self.seeds = random.Random(seed), StepClock(), Seeds(seed)
        body = dict(TABLES[game])
        roles = {k: body.pop(k) for k in ("croupier", "banker", "dealer") if k in body}
        self.table = GAMES[game].open(body["players"], body.get("rules", {}), self.clock(), **roles)
        self.events = list(self.table.collect_events())

    def run(self, command: str, player: str, **fields) -> list:
        self.table.handle(command, player, fields, self.clock(), self.seeds, new_salt=self.seeds.salt)
        new = list(self.table.collect_events())
        self.events += new
        return new

    def step(self) -> list:
        state = self.table.view(self.table.sight(EVERYTHING))
        command, player, fields = pick(state, self.rng)
        return self.run(command, player, **fields)

    def until(self, done, limit: int = 600) -> None:
        for _ in range(limit):
            if done(self):
                return
            self.step()
        raise AssertionError("never reached")


@pytest.mark.parametrize("game", sorted(GAMES))
def test_the_tables_latest_round_is_numbered_as_the_rounds_list_numbers_it(game):
    played = Played(game)
    tracker, finished = RoundTracker(ROUND_MARKS[game]), 0
    for e in played.events:
        finished += len(tracker.feed(e.public()))
    for _ in range(300):
        for e in played.step():
            finished += len(tracker.feed(e.public()))
        finished += len(tracker.flush())
        book = played.table.round_book
        assert book["number"] == finished + book["open"]


def test_a_void_needs_a_second_supervisor_and_leaves_every_earlier_event_as_it_was():
    played = Played("punto-banco")
    played.until(lambda p: p.table.phase == "deal")
    earlier = [(e.originator_version, e.digest) for e in played.events]
    number = played.table.round_book["number"]
    played.run("request_correction", "sara", kind="void_round", round=number, reason="misdeal", note="")
    with pytest.raises(NotYourSeat, match="second supervisor"):
        played.run("approve_correction", "sara", request=1)
    with pytest.raises(NotYourSeat, match="take no part"):
        played.run("approve_correction", "anna", request=1)
    effects = played.run("approve_correction", "simon", request=1)
    assert [e.type for e in effects][0] == "CorrectionApproved" and effects[-1].type == "RoundVoided"
    with pytest.raises(BadArgument, match="decided once"):
        played.run("approve_correction", "simon", request=1)
    assert [(e.originator_version, e.digest) for e in played.events[:len(earlier)]] == earlier
    replayed = None
    for e in played.events:
        replayed = e.mutate(replayed)
    assert replayed.view() == played.table.view() and replayed.voided == played.table.voided


@pytest.mark.parametrize("game", ["punto-banco", "chemin-de-fer"])
def test_a_settled_coup_voided_puts_every_balance_back_and_the_game_plays_on(game):
    played = Played(game, seed=11)
    settles = {"punto-banco": "CoupDecided", "chemin-de-fer": "CoupSettled"}[game]
    before = {}

    def settled(p):
        before.update(money(p.table.view()))
        return False

    for _ in range(600):
        settled(played)
        if any(e.type == settles for e in played.step()) and played.table.round_book["payments"]:
            break
    number = played.table.round_book["number"]
    played.run("request_correction", "sara", kind="void_round", round=number, reason="card-exposed")
    effects = played.run("approve_correction", "simon", request=1)
    assert {e.type for e in effects} >= {"PaymentReversed", "RoundVoided"} and effects[-1].settled
    assert money(played.table.view()) == before
    played.until(lambda p: p.table.round_book["number"] == number + 1 and not p.table.round_book["open"])


def test_a_refused_request_moves_nothing_and_the_round_may_be_asked_again():
    played = Played("punto-banco")
    played.until(lambda p: p.table.phase == "deal")
    number, before = played.table.round_book["number"], money(played.table.view())
    played.run("request_correction", "sara", kind="void_round", round=number, reason="other", note="not sure")
    [refused] = played.run("refuse_correction", "simon", request=1, note="it was fine")
    assert refused.type == "CorrectionRefused" and refused.why == "it was fine"
    assert money(played.table.view()) == before and played.table.phase == "deal" and "corrections" not in played.table.view()
    played.run("request_correction", "simon", kind="void_round", round=number, reason="misdeal")
    assert played.table.view()["corrections"][0]["request"] == 2


def test_a_note_is_text_of_up_to_five_hundred_characters():
    note = FieldSpec("text", optional=True)
    assert note.fits("a" * 500) and not note.fits("a" * 501) and not note.fits(5)
    assert note.json_schema() == {"type": "string", "maxLength": 500}


def test_every_game_says_what_its_void_does_and_a_game_without_one_is_refused():
    assert all(game.void.doc for game in GAMES.values())
    fields = {f.name for f in dataclasses.fields(Game) if f.default is dataclasses.MISSING
              and f.default_factory is dataclasses.MISSING and f.init}
    assert "void" in fields


def test_a_stake_recorded_for_the_wrong_player_is_moved_and_the_original_stays_in_the_log():
    played = Played("punto-banco")
    played.until(lambda p: p.table.phase == "stakes")
    [placed] = played.run("place_stake", "anna", spot="player", amount=50)
    number = played.table.round_book["number"]
    played.run("request_correction", "sara", kind="correct_stake", round=number, reason="wrong-stake",
               stake_player="anna", stake_spot="player", stake_amount=50, stake_to="boris")
    effects = played.run("approve_correction", "simon", request=1)
    assert [(e.type, getattr(e, "player", None), getattr(e, "amount", None)) for e in effects] == [
        ("CorrectionApproved", None, None), ("StakeCorrected", "anna", 0), ("StakeCorrected", "boris", 50)]
    assert effects[0].before == effects[0].after and played.table.stakes == {"boris": {"player": 50}}
    assert played.events[played.events.index(placed)].data == placed.data  # the original, as it was
    played.run("close_stakes", "marta")
    played.run("deal", "marta")
    assert played.table.result["coup"] == number


@pytest.mark.parametrize("stake, refused", [
    ({"stake_player": "anna", "stake_spot": "banker", "stake_amount": 40}, "no stake on the banker"),
    ({"stake_player": "anna", "stake_spot": "player", "stake_amount": 5000}, "limit|at most|above"),
    ({"stake_player": "anna", "stake_spot": "player", "stake_amount": 0}, "no stake in the coup"),
    ({"stake_player": "anna", "stake_spot": "player"}, "needs 'stake_amount'"),
    ({"stake_player": "marta", "stake_spot": "player", "stake_amount": 40}, "croupier"),
    ({"stake_player": "anna", "stake_spot": "player", "stake_amount": 40, "stake_to": "gleb"}, "not a player"),
])
def test_a_stake_correction_the_rules_would_not_take_is_refused_when_asked(stake, refused):
    played = Played("punto-banco")
    played.until(lambda p: p.table.phase == "stakes")
    played.run("place_stake", "anna", spot="player", amount=50)
    with pytest.raises(Exception, match=refused):
        played.run("request_correction", "sara", kind="correct_stake", round=played.table.round_book["number"],
                   reason="wrong-stake", **stake)


def test_a_chemin_de_fer_stake_is_corrected_in_amount_only_and_the_bank_decides_whose_turn_it_is():
    played = Played("chemin-de-fer")
    played.until(lambda p: p.table.phase == "stakes" and not p.table.stakes and p.table.next_speaker())
    speaker, bank = played.table.next_speaker(), played.table.bank
    played.run("place_stake", speaker, amount=bank)  # covers the bank: stakes close
    assert played.table.phase == "close" and bank > 1
    number = played.table.round_book["number"]
    with pytest.raises(BadArgument, match="wrong player"):
        played.run("request_correction", "sara", kind="correct_stake", round=number, reason="wrong-stake",
                   stake_player=speaker, stake_spot="bank", stake_amount=1, stake_to="vera" if speaker != "vera" else "anna")
    played.run("request_correction", "sara", kind="correct_stake", round=number, reason="wrong-stake",
               stake_player=speaker, stake_spot="bank", stake_amount=1)
    played.run("approve_correction", "simon", request=1)
    assert played.table.stakes == {speaker: 1} and played.table.phase == "stakes"  # the rest of the bank is open again


def test_a_card_lottery_stage_voided_before_its_reveal_returns_its_contributions_and_the_banker_collects_again():
    played = Played("card-lottery")
    before = {}
    while played.table.phase != "lay_out":
        before = money(played.table.view())
        played.step()
    assert money(played.table.view()) != before  # the contributions are in the pot
    number = played.table.round_book["number"]
    played.run("request_correction", "sara", kind="void_round", round=number, reason="shoe-fault")
    effects = played.run("approve_correction", "simon", request=1)
    assert {e.type for e in effects} == {"CorrectionApproved", "PaymentReversed", "RoundVoided"}
    assert money(played.table.view()) == before and played.table.phase == "collect"
    with pytest.raises(BadArgument, match="contributions are collected at once"):
        played.until(lambda p: p.table.phase == "lay_out")
        played.run("request_correction", "sara", kind="correct_stake", round=played.table.round_book["number"],
                   reason="wrong-stake", stake_player="vera", stake_spot="pot", stake_amount=1)


def test_a_voided_coups_face_down_cards_stay_hidden_past_the_next_showdown_until_the_shoe_is_revealed():
    played = Played("chemin-de-fer", seed=4)
    played.until(lambda p: p.table.phase == "punter_draw")  # four cards dealt face down
    down = {h["version"] for h in played.table.hidden}
    assert len(down) >= 4
    number = played.table.round_book["number"]
    played.run("request_correction", "sara", kind="void_round", round=number, reason="card-exposed")
    played.run("approve_correction", "simon", request=1)
    assert all(h["void"] and h["over"] for h in played.table.hidden if h["version"] in down)
    shown = []
    for _ in range(600):
        events = played.step()
        if any(e.type == "HandsShown" for e in events):
            shown.append(True)
        if any(e.type == "ShoeRevealed" and e.shoe == played.table.shoe["number"] for e in events):
            break
        assert down <= {h["version"] for h in played.table.hidden}, "a voided coup's card was shown"
    assert shown and not down & {h["version"] for h in played.table.hidden}


def test_a_corrected_stake_counts_in_the_exposure_at_its_corrected_amount_and_may_not_pass_the_limit(monkeypatch):
    rules = {**TABLES["punto-banco"]["rules"], "max_exposure": 300}
    monkeypatch.setitem(TABLES, "punto-banco", {**TABLES["punto-banco"], "rules": rules})
    played = Played("punto-banco")
    played.until(lambda p: p.table.phase == "stakes")
    played.run("place_stake", "anna", spot="player", amount=200)
    number = played.table.round_book["number"]
    correct = {"kind": "correct_stake", "round": number, "reason": "wrong-stake", "stake_player": "anna",
               "stake_spot": "player"}
    with pytest.raises(Exception, match="above the table's limit of 300"):
        played.run("request_correction", "sara", **correct, stake_amount=400)
    played.run("request_correction", "sara", **correct, stake_amount=100)
    played.run("approve_correction", "simon", request=1)
    assert played.table.totals_now["player"] == 100
    assert played.table.view()["exposure"]["now"] == 100  # counted from the stake as corrected, not as placed
    played.run("place_stake", "boris", spot="player", amount=200)  # room the correction freed
    with pytest.raises(Exception, match="above the table's limit of 300"):
        played.run("place_stake", "boris", spot="player", amount=10)
