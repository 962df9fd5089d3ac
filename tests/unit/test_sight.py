"""The masking rules of domain/sight.py, case by case: what each event hides from whom, when the ledger lets it
go, and what each kind of viewer sees at a reading moment (every game's declarations together, domain/games.py)."""

from __future__ import annotations

import pytest

from domain import sight as S
from domain.games import SECRETS
from domain.sight import AUDITOR, EVERYTHING, HIDDEN, OPERATOR, PLAYER, Viewer

track, conceals = SECRETS.track, SECRETS.spots


def sight(viewer, at, now=None):
    return S.sight(viewer, at, now, SECRETS)


ANNA, BORIS = Viewer(PLAYER, "anna"), Viewer(PLAYER, "boris")
OPERATOR_, AUDITOR_ = Viewer(OPERATOR), Viewer(AUDITOR)


def dealt(card, to, version, deck="shoe", shoe=2, face_up=False):
    return {"version": version, "type": "CardDealt",
            "data": {"shoe": shoe, "position": version, "card": card, "to": to, "face_up": face_up}}, deck


def ledger_of(*steps):
    """The ledger after each (event, deck) in turn."""
    ledger = []
    for e, deck in steps:
        ledger = track(ledger, e["type"], e["data"], e["version"], deck)
    return ledger


def event(kind, version, **data):
    return {"version": version, "type": kind, "data": data, "digest": f"d{version}"}


# --- the ledger ----------------------------------------------------------------------------------------------

def test_a_face_down_card_enters_the_ledger_and_a_face_up_one_does_not():
    ledger = ledger_of(dealt("5c", "anna", 10), dealt("9h", "anna", 11, face_up=True))
    assert [(e["card"], e["to"], e["version"], e["over"]) for e in ledger] == [("5c", "anna", 10, False)]


@pytest.mark.parametrize(("kind", "data", "deck", "card", "left"), [
    ("HandsShown", {}, "shoe", "5c", False),  # Chemin de fer: both hands shown
    ("ShoeRevealed", {"shoe": 2}, "shoe", "5c", False),  # its deck's seed revealed
    ("ShoeRevealed", {"shoe": 3}, "shoe", "5c", True),  # another deck's
    ("LotteryCardsRevealed", {"cards": ["5c"]}, "banker", "5c", False),
    ("LotteryCardsRevealed", {"cards": ["5c"]}, "dealer", "5c", True),  # a holder's card of the same name
    ("PrizeWon", {"card": "5c"}, "dealer", "5c", False),
    ("PrizeWon", {"card": "6c"}, "dealer", "5c", True),
    ("CardsLed", {"cards": ["5c", "5d"]}, "dealer", "5c", False),
    ("CardsBeaten", {"cards": ["5c"]}, "dealer", "5c", False),
    ("CardPlayed", {"card": "5c"}, "dealer", "5c", False),
    ("CardPlayed", {"card": "5c"}, "banker", "5c", True),
    ("StakePlaced", {"player": "anna", "amount": 5}, "shoe", "5c", True),  # tells nothing of any card
])
def test_what_shows_a_card_to_all_takes_it_out_of_the_ledger(kind, data, deck, card, left):
    ledger = ledger_of(dealt(card, "anna", 10, deck=deck), (event(kind, 20, **data), None))
    assert bool(ledger) == left


@pytest.mark.parametrize(("kind", "deck", "over"), [
    ("CardsSetAside", "dealer", True),  # the round is over; the piles stay face down
    ("CardsSetAside", "banker", False),
    ("Stage2Ended", "dealer", True),
])
def test_the_end_of_a_round_marks_its_cards_over_without_showing_them(kind, deck, over):
    ledger = ledger_of(dealt("5c", "anna", 10, deck=deck), (event(kind, 20, piles={}), None))
    assert ledger[0]["over"] is over


# --- what an event hides, from whom, at a reading moment -----------------------------------------------------

HEAD_MID_COUP = ledger_of(dealt("5c", "anna", 10), dealt("9h", "boris", 11))
SHOWN_SINCE: list = []


@pytest.mark.parametrize(("viewer", "at", "now", "card"), [
    (ANNA, HEAD_MID_COUP, None, "5c"),  # his own card
    (BORIS, HEAD_MID_COUP, None, HIDDEN),  # another's, not shown yet
    (OPERATOR_, HEAD_MID_COUP, None, HIDDEN),  # the croupier does not see it either
    (AUDITOR_, HEAD_MID_COUP, None, HIDDEN),  # the round is live
    (EVERYTHING, HEAD_MID_COUP, None, "5c"),  # surveillance
    (BORIS, SHOWN_SINCE, None, "5c"),  # shown to all by the reading moment
    (OPERATOR_, SHOWN_SINCE, None, "5c"),
    (BORIS, None, None, HIDDEN),  # a live stream: each event at its own moment
    (ANNA, None, None, "5c"),
    (AUDITOR_, HEAD_MID_COUP, SHOWN_SINCE, "5c"),  # a state from before: the auditor sees what is public now
    (BORIS, HEAD_MID_COUP, SHOWN_SINCE, HIDDEN),  # ...a player does not: the state is as it was
])
def test_a_face_down_card_dealt_is_shown_to_whom_the_rules_say(viewer, at, now, card):
    shown = sight(viewer, at, now).shown_event(event("CardDealt", 10, shoe=2, position=3, card="5c", to="anna",
                                                     face_up=False))
    assert shown["data"]["card"] == card
    assert shown["digest"] == "d10"  # the digest is the recorded event's, whatever is hidden


def test_a_face_up_card_and_an_event_with_no_card_are_shown_as_recorded():
    for e in (event("CardDealt", 12, shoe=2, position=4, card="7d", to="anna", face_up=True),
              event("StakePlaced", 13, player="anna", amount=5)):
        assert sight(BORIS, HEAD_MID_COUP).shown_event(e) == e


def test_a_hand_stood_hides_its_total_from_all_but_its_player_until_the_hands_are_shown():
    stood = event("HandStood", 12, player="anna", hand="punter", total=6)
    assert sight(BORIS, HEAD_MID_COUP).shown_event(stood)["data"]["total"] is None
    assert sight(OPERATOR_, HEAD_MID_COUP).shown_event(stood)["data"]["total"] is None
    assert sight(ANNA, HEAD_MID_COUP).shown_event(stood)["data"]["total"] == 6
    assert sight(BORIS, SHOWN_SINCE).shown_event(stood)["data"]["total"] == 6


LOTTERY = ledger_of(dealt("5c", "anna", 10, deck="dealer", shoe=1), dealt("Kd", "anna", 11, deck="dealer", shoe=1),
                    dealt("2h", "boris", 12, deck="dealer", shoe=1), (event("CardsSetAside", 20, piles={}), None))


@pytest.mark.parametrize(("kind", "field"), [("CardsSetAside", "piles"), ("Stage2Began", "hands")])
@pytest.mark.parametrize(("viewer", "anna_sees", "boris_sees"), [
    (ANNA, ["5c", "Kd"], [HIDDEN]),
    (BORIS, [HIDDEN, HIDDEN], ["2h"]),
    (OPERATOR_, [HIDDEN, HIDDEN], [HIDDEN]),
    (AUDITOR_, ["5c", "Kd"], ["2h"]),  # the round is over: the auditor sees the piles
    (EVERYTHING, ["5c", "Kd"], ["2h"]),
])
def test_a_holders_pile_or_hand_is_his_own(kind, field, viewer, anna_sees, boris_sees):
    e = event(kind, 20, **{field: {"anna": ["5c", "Kd"], "boris": ["2h"]}})
    shown = sight(viewer, LOTTERY).shown_event(e)
    assert shown["data"][field] == {"anna": anna_sees, "boris": boris_sees}
    assert e["data"][field]["anna"] == ["5c", "Kd"]  # the recorded event is left as it is


def test_a_pile_card_shown_since_is_shown_and_a_card_of_the_same_name_from_a_later_game_does_not_hide_it():
    later = ledger_of(dealt("5c", "anna", 90, deck="dealer", shoe=3))  # a new game's deck, dealt after the event
    e = event("CardsSetAside", 20, piles={"anna": ["5c"]})
    assert sight(BORIS, later).shown_event(e)["data"]["piles"]["anna"] == ["5c"]


def test_what_each_event_type_conceals():
    assert conceals("StakePlaced", {"player": "anna", "amount": 3}, 5) == []
    assert [s.path for s in conceals("CardDealt", {"card": "5c", "to": "anna", "face_up": False}, 5)] == [("card",)]
    assert [s.path for s in conceals("HandStood", {"player": "anna", "hand": "punter", "total": 6}, 5)] == [("total",)]
    assert [(s.path, s.owner) for s in conceals("CardsSetAside", {"piles": {"anna": ["5c"], "vera": ["2h"]}}, 5)] \
        == [(("piles", "anna", 0), "anna"), (("piles", "vera", 0), "vera")]


def test_a_viewer_names_a_player_exactly_when_it_is_a_players():
    with pytest.raises(ValueError):
        Viewer(PLAYER)
    with pytest.raises(ValueError):
        Viewer(OPERATOR, "anna")
    with pytest.raises(ValueError):
        Viewer("croupier")


# --- a state's cards ---------------------------------------------------------------------------------------

def test_a_states_cards_and_the_count_of_a_hands_hidden_cards():
    boris = sight(BORIS, HEAD_MID_COUP)
    assert boris.card("5c", "anna", "shoe") == HIDDEN and boris.card("9h", "boris", "shoe") == "9h"
    assert boris.hidden_count("anna", "shoe") == 1 and boris.hidden_count("boris", "shoe") == 0
    assert boris.hides_hand_of("anna") and not boris.hides_hand_of("boris")
    assert sight(EVERYTHING, HEAD_MID_COUP).hidden_count("anna", "shoe") == 0
