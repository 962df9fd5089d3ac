"""The reference vectors of docs/design.md, computed by an independent implementation, reproduced exactly."""

import hashlib
import json
from pathlib import Path

import pytest

from domain.chain import binding_problem, chain_rule, digest, format_timestamp
from domain.shuffle import commitment, shoe_order, shuffled

VECTORS = Path(__file__).parent.parent / "vectors"
SHUFFLES = json.loads((VECTORS / "shuffle.json").read_text())["vectors"]
CHAIN = json.loads((VECTORS / "chain.json").read_text())["events"]


@pytest.mark.parametrize("vector", SHUFFLES, ids=lambda v: f"{v['decks']}decks-cut{v['cut']}")
def test_a_known_seed_gives_the_known_order_after_the_cut(vector):
    seed = bytes.fromhex(vector["seed"])
    order = shoe_order(seed, vector["decks"], vector["cut"])
    assert commitment(seed) == vector["commitment"]
    assert order[:10] == vector["first_10"]
    assert order[-3:] == vector["last_3"]
    assert hashlib.sha256(",".join(order).encode()).hexdigest() == vector["order_sha256"]


def test_a_shuffle_holds_every_card_of_every_deck_exactly_once():
    order = shuffled(bytes(32), 6)
    assert len(order) == 312
    assert all(order.count(c) == 6 for c in set(order)) and len(set(order)) == 52


def test_a_seed_of_the_wrong_length_is_refused():
    with pytest.raises(ValueError, match="32 bytes"):
        shuffled(b"short", 1)


def test_the_chain_vectors_are_reproduced_with_seeds_left_out_and_non_ascii_kept():
    prev = ""
    for event in CHAIN:
        prev_digest = digest(prev, event["version"], event["type"], event["timestamp"], event["actor"], event["data"])
        assert prev_digest == event["digest"], event["version"]
        prev = prev_digest


def test_changing_any_field_of_an_event_changes_its_digest():
    e = CHAIN[2]
    base = digest("x", e["version"], e["type"], e["timestamp"], e["actor"], e["data"])
    assert digest("y", e["version"], e["type"], e["timestamp"], e["actor"], e["data"]) != base
    assert digest("x", e["version"], e["type"], e["timestamp"], "vera", e["data"]) != base
    assert digest("x", e["version"], e["type"], e["timestamp"], e["actor"], {**e["data"], "amount": 51}) != base


def test_timestamps_are_written_in_utc_with_six_microsecond_digits():
    from datetime import datetime, timedelta, timezone

    moment = datetime(2026, 11, 29, 23, 15, 3, tzinfo=timezone(timedelta(hours=3)))
    assert format_timestamp(moment) == "2026-11-29T20:15:03.000000+00:00"


BOUND = json.loads((VECTORS / "chain-bound.json").read_text())


def test_the_old_chain_vectors_are_under_rule_1_and_bind_no_table():
    assert chain_rule(CHAIN[0]["data"]) == 1
    assert binding_problem("any table at all", CHAIN[0]["data"]) is None


def test_the_rule_2_vectors_are_reproduced_and_bind_their_table():
    prev = ""
    for event in BOUND["events"]:
        prev = digest(prev, event["version"], event["type"], event["timestamp"], event["actor"], event["data"])
        assert prev == event["digest"], event["version"]
    opening = BOUND["events"][0]["data"]
    assert chain_rule(opening) == 2
    assert binding_problem(BOUND["table_id"], opening) is None
    moved = binding_problem(BOUND["moved_to"], opening)
    assert moved is not None and BOUND["table_id"] in moved and BOUND["moved_to"] in moved


CONCEALED = json.loads((VECTORS / "chain-concealed.json").read_text())


def test_the_rule_3_vectors_are_reproduced_from_the_stored_events_and_from_each_players_view():
    assert chain_rule(CONCEALED["stored"][0]["data"]) == 3
    for view in ("stored", "anna", "boris"):
        prev = ""
        for event in CONCEALED[view]:
            prev = digest(prev, event["version"], event["type"], event["timestamp"], event["actor"], event["data"],
                          event.get("salts"), event.get("concealed"))
            assert prev == event["digest"], (view, event["version"])


def test_each_players_view_of_the_rule_3_vectors_is_what_the_sight_shows_him():
    """The stored events shown to anna (her own card, total and pile) and to boris (commitments in their place),
    by the service's own mechanism: every game's declarations (domain/games.py) and a Sight mid-coup."""
    from domain.games import SECRETS
    from domain.sight import PLAYER, Viewer, sight

    ledger = [{"version": 2, "shoe": 1, "deck": "shoe", "card": "9h", "to": "anna", "over": False},
              *({"version": 1, "shoe": 9, "deck": "dealer", "card": c, "to": "anna", "over": True} for c in ("2s", "Kd"))]
    for name in ("anna", "boris"):
        seen = sight(Viewer(PLAYER, name), ledger, None, SECRETS)
        shown = [seen.shown_event({k: v for k, v in e.items()}) for e in CONCEALED["stored"]]
        assert shown == CONCEALED[name], name


def test_a_commitment_is_salted_so_the_52_cards_tried_in_its_place_find_nothing():
    from domain.chain import commit
    from tests.hidden_parts import CARDS

    opened, hidden = CONCEALED["boris"][0], CONCEALED["boris"][1]
    assert hidden["data"]["card"] == "??"
    tried = [digest(opened["digest"], 2, hidden["type"], hidden["timestamp"], hidden["actor"], {**hidden["data"], "card": card})
             for card in CARDS]  # what found the card under rules 1 and 2
    assert hidden["digest"] not in tried
    assert commit("00112233445566778899aabbccddeeff", "9h") == hidden["concealed"]["/card"]  # the owner's salt
    assert all(commit("", card) != hidden["concealed"]["/card"] for card in CARDS)
