"""Card lottery tables through the service, on memory, SQLite and PostgreSQL."""

from __future__ import annotations

import random

import pytest

from domain.errors import BadArgument, IllegalPlay, InvalidPlayers, InvalidRules, NotAllowedNow
from domain.sight import OPERATOR, Viewer
from tests.helpers import pick

PLAYERS = ["olga", "ivan", "anna", "boris", "vera"]


def open_lottery(service, **rules):
    return service.open_table("card-lottery", PLAYERS, rules, banker="olga", dealer="ivan")


def play_games(service, table_id, games, seed=1):
    rng = random.Random(seed)
    states, played = {}, 0
    while played < games:
        command, player, args = pick(service.current_state(table_id), rng)
        result = service.execute(table_id, command, player, args)
        states[result["version"]] = result["state"]
        played += sum(e["type"] == "GameEnded" for e in result["events"])
    return states


@pytest.mark.parametrize("variant", ["beating", "tricks"])
def test_whole_games_of_both_variants_are_played_and_replay_exactly(service, variant):
    opened = open_lottery(service, stage2=variant, unclaimed="to_banker" if variant == "tricks" else "carry")
    assert opened["version"] == 2 and opened["holders"] == ["anna", "boris", "vera"]
    table_id = opened["table_id"]
    states = play_games(service, table_id, 2)
    events = service.events_page(table_id, limit=1000)["events"]
    types = [e["type"] for e in events]
    assert types.count("GameEnded") == 2 and types.count("Stage2Began") == 2
    assert types.count("ShoeRevealed") == 4
    for version in list(states)[::7]:
        replayed = service.state_at_version(table_id, version)
        replayed.pop("as_of")
        assert replayed == states[version]
    final = states[max(states)]
    assert sum(final["balances"].values()) + final["pot"] + final["kitty"] == 0


def test_the_table_state_shows_lottery_cards_face_down_until_revealed(service):
    table_id = open_lottery(service)["table_id"]
    for deck, who in (("banker", "olga"), ("dealer", "ivan")):
        service.execute(table_id, "shuffle", who, {"deck": deck})
    service.execute(table_id, "collect", "olga", {})
    laid = service.execute(table_id, "lay_out", "olga", {}, viewer=Viewer(OPERATOR))
    assert laid["state"]["lottery_cards"] == ["??"] * 4
    assert {e["data"]["card"] for e in laid["events"] if e["type"] == "CardDealt"} == {"??"}
    laid = service.current_state(table_id)  # as the service itself (and surveillance) sees it
    assert "??" not in laid["lottery_cards"]
    laid = service.events_page(table_id)
    dealt = [e["data"] for e in laid["events"] if e["type"] == "CardDealt"]
    assert len(dealt) == 4 and all(d["to"] == "olga" and not d["face_up"] for d in dealt)  # the record holds them


@pytest.mark.parametrize(
    "players,roles,error",
    [
        (PLAYERS, {"banker": "olga"}, BadArgument),
        (PLAYERS, {"banker": "olga", "dealer": "zoya"}, BadArgument),
        (PLAYERS, {"banker": "olga", "dealer": "olga"}, BadArgument),
        (["olga", "ivan"], {"banker": "olga", "dealer": "ivan"}, InvalidPlayers),
        (["olga", "ivan"] + [f"h{i}" for i in range(18)], {"banker": "olga", "dealer": "ivan"}, InvalidPlayers),
    ],
)
def test_a_lottery_table_with_wrong_roles_or_holders_is_refused(service, players, roles, error):
    with pytest.raises(error):
        service.open_table("card-lottery", players, {}, **roles)


def test_a_contribution_too_small_to_spread_over_four_cards_is_refused_at_opening(service):
    with pytest.raises(InvalidRules, match="at least 2"):
        service.open_table("card-lottery", PLAYERS, {"contribution": 1}, banker="olga", dealer="ivan")


def test_illegal_lottery_commands_are_refused_and_append_nothing(service):
    table_id = open_lottery(service)["table_id"]
    state = service.current_state(table_id)
    for command, player, args, error in [
        ("shuffle", "olga", {"deck": "dealer"}, IllegalPlay),
        ("shuffle", "anna", {"deck": "banker"}, NotAllowedNow),
        ("shuffle", "olga", {"deck": "both"}, BadArgument),
        ("collect", "olga", {}, NotAllowedNow),
        ("draw", "olga", {}, Exception),
    ]:
        with pytest.raises(error):
            service.execute(table_id, command, player, args)
    assert service.current_state(table_id) == state
    service.execute(table_id, "shuffle", "olga", {"deck": "banker"})
    service.execute(table_id, "shuffle", "ivan", {"deck": "dealer"})
    service.execute(table_id, "collect", "olga", {"amount": 5})
    service.execute(table_id, "lay_out", "olga", {})
    state = service.current_state(table_id)
    with pytest.raises(IllegalPlay, match="sum to the pot, 15"):
        service.execute(table_id, "distribute", "olga", {"amounts": [1, 1, 1, 1]})
    with pytest.raises(IllegalPlay, match="at least 1"):
        service.execute(table_id, "distribute", "olga", {"amounts": [15, 0, 0, 0]})
    assert service.current_state(table_id) == state
