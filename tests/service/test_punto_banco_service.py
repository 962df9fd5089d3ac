"""Punto banco tables through the service, on memory, SQLite and PostgreSQL: whole shoes played, every version
replayed, the table verified and its rounds audited."""

from __future__ import annotations

import random

import pytest

from domain.errors import BadArgument, NotAllowedNow
from domain.punto_banco.rules import StakeRefused
from tests.unit.test_punto_banco_table import fields_within

PLAYERS = ["marta", "anna", "boris", "vera"]


def open_punto_banco(service, **rules):
    return service.open_table("punto-banco", PLAYERS, rules, croupier="marta")


def play_shoes(service, table_id, shoes, seed=1):
    """Random legal play from expects (closing and dealing favoured) until ``shoes`` shoes are revealed;
    the state after every command, by version."""
    rng = random.Random(seed)
    state = service.current_state(table_id)
    states = {state["version"]: state}
    revealed = 0
    while revealed < shoes:
        expects = state["expects"]
        entry = rng.choices(expects, [1 if e["command"] == "place_stake" else 3 for e in expects])[0]
        result = service.execute(table_id, entry["command"], entry["player"], fields_within(entry, rng))
        state = states[result["version"]] = result["state"]
        revealed += sum(e["type"] == "ShoeRevealed" for e in result["events"])
    return states


def test_whole_shoes_are_played_and_every_version_replays_to_the_state_the_table_showed(service):
    opened = open_punto_banco(service, decks=6, stop_card=52)
    assert opened["version"] == 2 and opened["croupier"] == "marta" and opened["phase"] == "shuffle"
    table_id = opened["table_id"]
    states = play_shoes(service, table_id, 2)
    head = max(states)
    for version in range(1, head + 1):
        replayed = service.state_at_version(table_id, version)
        assert replayed.pop("as_of")["version"] == version
        assert sum(replayed["balances"].values()) + replayed["house"] == 0
        if version in states:
            assert replayed == states[version]
        else:
            assert replayed["expects"] == []  # between two events of one command
    final = states[head]
    assert final["phase"] == "shuffle" and final["shoe"]["number"] == 2 and final["balances"]["marta"] == 0
    events = list(service.iter_events(table_id))
    assert sum(e["type"] == "CoupDecided" for e in events) == final["round"] > 60


def test_a_played_table_verifies_and_each_coup_is_a_round_whose_audit_passes_every_check(service):
    table_id = open_punto_banco(service, decks=6, stop_card=52, commission_percent=4, tie_pays=9)["table_id"]
    states = play_shoes(service, table_id, 1, seed=3)
    final = states[max(states)]
    report = service.verify(table_id)
    assert report["ok"] is True, report["problems"]
    assert report["rounds_checked"] == final["round"]
    rounds = service.list_rounds(table_id, limit=1000)["rounds"]
    assert len(rounds) == final["round"]
    for number in (1, len(rounds) // 2, len(rounds)):
        audit = service.round_audit(table_id, number)
        assert audit["checks"] == {"chain": True, "cards": True, "rules": True, "money": True, "read_model": True}, \
            audit["problems"]
        assert audit["payments"] and all("house" in (p["payer"], p["payee"]) for p in audit["payments"])
    last = service.round_audit(table_id, len(rounds))
    assert [e["type"] for e in last["events"]][-2:] == ["ShoeFinished", "ShoeRevealed"]


def test_refused_commands_append_nothing_and_say_what_is_allowed(service):
    table_id = open_punto_banco(service)["table_id"]
    with pytest.raises(NotAllowedNow) as refused:
        service.execute(table_id, "shuffle", "anna", {})
    assert refused.value.expects == [{"command": "shuffle", "player": "marta", "fields": {}}]
    service.execute(table_id, "shuffle", "marta", {})
    service.execute(table_id, "cut", "vera", {"position": 200})
    version = service.current_state(table_id)["version"]
    with pytest.raises(StakeRefused) as refused:
        service.execute(table_id, "place_stake", "anna", {"spot": "banker", "amount": 50})
    assert refused.value.details["multiple_of"] == 20
    with pytest.raises(BadArgument):
        service.execute(table_id, "place_stake", "anna", {"spot": "both", "amount": 40})
    with pytest.raises(NotAllowedNow):
        service.execute(table_id, "close_stakes", "marta", {})
    assert service.current_state(table_id)["version"] == version


@pytest.mark.parametrize("roles", [{}, {"croupier": "zoya"}])
def test_a_table_without_its_croupier_among_the_players_is_refused(service, roles):
    with pytest.raises(BadArgument) as refused:
        service.open_table("punto-banco", PLAYERS, {}, **roles)
    assert refused.value.field == "croupier"
