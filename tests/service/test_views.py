"""Views per viewer in the service (memory, SQLite, PostgreSQL): every read made for a viewer hides what the
rules hide from him at its reading moment, states at every version included (rebuilt from snapshots, which
keep the ledger of hidden cards); the service's own reads (the audits' checks) see the events as recorded."""

from __future__ import annotations

import random

from domain.sight import AUDITOR, EVERYTHING, OPERATOR, PLAYER, Viewer
from tests.helpers import pick
from tests.viewing import HIDDEN, Oracle, check_events

PLAYERS = ["anna", "boris", "vera"]
VIEWERS = {"anna": Viewer(PLAYER, "anna"), "boris": Viewer(PLAYER, "boris"), "vera": Viewer(PLAYER, "vera"),
           "operator": Viewer(OPERATOR)}


def play_until(service, table_id, done, seed=3, most=2000):
    rng = random.Random(seed)
    answers = []
    for _ in range(most):
        state = service.current_state(table_id)
        if done(state):
            return answers
        command, player, args = pick(state, rng)
        answers.append((player, service.execute(table_id, command, player, args, viewer=VIEWERS[player])))
    raise AssertionError("the table never got where the test needs")


def all_events(service, table_id, viewer=EVERYTHING):
    return list(service.iter_events(table_id, viewer=viewer))


def test_a_live_coup_shows_each_player_his_own_cards_and_the_croupier_none(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2, "auto_forced": False})["table_id"]
    play_until(service, table_id, lambda s: s["phase"] == "punter_draw")
    full = all_events(service, table_id)
    oracle, by_version, head = Oracle(full), {e["version"]: e for e in full}, full[-1]["version"]
    hidden = 0
    for name, viewer in VIEWERS.items():
        hidden += check_events(oracle, service.events_page(table_id, limit=1000, viewer=viewer)["events"], by_version,
                               name, head)
        check_events(oracle, all_events(service, table_id, viewer), by_version, name, head)
        state = service.current_state(table_id, viewer)
        cards = state["hands"]["punter"] + state["hands"]["banker"]
        assert cards.count(HIDDEN) == (4 if name == "operator" else 2 if name in (state["punter"], state["banker"])
                                       else 4)
        assert all(e["player"] == name for e in state["expects"]) or name == "operator"
    assert hidden > 0
    everything = service.current_state(table_id)
    assert HIDDEN not in everything["hands"]["punter"] + everything["hands"]["banker"]
    auditor = service.current_state(table_id, Viewer(AUDITOR))
    assert (auditor["hands"]["punter"] + auditor["hands"]["banker"]).count(HIDDEN) == 4  # a live round


def test_states_at_every_version_hide_what_was_hidden_then_across_snapshots(service):
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
    play_until(service, table_id, lambda s: s["version"] > 140 and s["phase"] == "stakes")
    full = all_events(service, table_id)
    oracle = Oracle(full)
    for version in range(1, full[-1]["version"] + 1):
        for name in ("anna", "operator"):
            state = service.state_at_version(table_id, version, VIEWERS[name])
            hands = state["hands"]["punter"] + state["hands"]["banker"]
            assert hands.count(HIDDEN) == sum(1 for v in oracle.cards if v <= version
                                              and oracle.hidden_from(name, v, version)), (name, version)


def test_command_answers_and_a_lottery_round_audit_are_each_readers_own(service):
    table_id = service.open_table("card-lottery", PLAYERS, {"banker_plays": True, "dealer_plays": True},
                                  banker="anna", dealer="boris")["table_id"]
    answers = play_until(service, table_id, lambda s: s["round"] == 2 and s["phase"] == "reveal")
    full = all_events(service, table_id)
    oracle, by_version, head = Oracle(full), {e["version"]: e for e in full}, full[-1]["version"]
    for player, answer in answers:
        check_events(oracle, answer["events"], by_version, player, answer["version"])
    for name, viewer in VIEWERS.items():
        audit = service.round_audit(table_id, 1, viewer)
        check_events(oracle, audit["events"], by_version, name, head)
        assert audit["checks"] == {"chain": True, "cards": None, "rules": True, "money": True, "read_model": True}
    # the auditor sees the first round's set-aside cards, over now, and not the live round's hands
    auditor = service.round_audit(table_id, 1, Viewer(AUDITOR))
    check_events(oracle, auditor["events"], by_version, "auditor", head, auditor_now=head)
    assert HIDDEN not in str(auditor["events"])
    state = service.current_state(table_id, Viewer(AUDITOR))
    assert all(HIDDEN in cards for cards in state["hands"].values())
    assert HIDDEN not in str(state["set_aside"])
    assert service.verify(table_id, Viewer(PLAYER, "vera"))["ok"] is True
