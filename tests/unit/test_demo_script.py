"""scripts/demo's exit status: 1 only for what the demo checks (the server refusing a command the table
listed in its `expects`), 2 for usage, network and server errors. It runs in this process against the real
app served over a real socket (tests/served.py); the URL, token and network cases of every client script are
in tests/unit/test_script_conventions.py."""

from __future__ import annotations

import random

import requests
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import DEMO
from tests.served import serving

SHORT_GAME = ["--rounds", "1", "--seed", "1", "--players", "anna,boris"]


@pytest.fixture(autouse=True)
def no_tokens_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ZAMETANO_TOKEN", "ZAMETANO_TOKENS", "ZAMETANO_URL"):
        monkeypatch.delenv(name, raising=False)


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    try:
        code = DEMO.main(list(argv))
    except SystemExit as exit_:
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


def test_a_short_game_plays_to_its_end_and_exits_0(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    with serving(store) as base:
        code, out, err = run(capsys, "--url", base, *SHORT_GAME)

    assert code == 0, out + err
    assert f"./scripts/verify-shoe {base}/tables/" in out


def test_a_command_from_expects_that_the_server_refuses_exits_1_naming_the_command(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    def wrong_player(state: dict[str, Any], rng: random.Random) -> tuple[str, str, dict[str, Any]]:
        return state["expects"][0]["command"], "nobody", {}

    monkeypatch.setattr(DEMO, "choose", wrong_player)
    with serving(store) as base:
        code, out, err = run(capsys, "--url", base, *SHORT_GAME)

    assert code == 1, out + err
    assert "demo: problem:" in err and "answered HTTP 422" in err and "by nobody" in err
    assert "taken from the table's expects at version 1" in err


def test_an_opening_the_server_refuses_is_a_usage_error_exiting_2(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store) as base:
        code, out, err = run(capsys, "--url", base, "--rule", "decks=99", *SHORT_GAME)

    assert code == 2
    assert "demo: error: POST" in err and "/tables answered HTTP 422" in err and "'decks'" in err


def test_a_server_error_on_a_command_exits_2_not_1(store: Path, capsys: pytest.CaptureFixture[str]) -> None:
    def failing(app: Any) -> Any:
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"].endswith("/commands"):
                start_response("500 Internal Server Error", [("Content-Type", "application/json")])
                return [b'{"code": 500, "status": "Internal Server Error", "message": "broke"}']
            return app(environ, start_response)
        return wrapped

    with serving(store, wrap=failing) as base:
        code, out, err = run(capsys, "--url", base, *SHORT_GAME)

    assert code == 2
    assert "HTTP 500" in err and "demo: error:" in err


def test_a_service_whose_openapi_document_names_no_games_is_not_taken_for_zametano(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    def other_api(app: Any) -> Any:
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"] == "/openapi.json":
                start_response("200 OK", [("Content-Type", "application/json")])
                return [b'{"openapi": "3.0.2", "info": {"title": "something else"}}']
            return app(environ, start_response)
        return wrapped

    with serving(store, wrap=other_api) as base:
        code, out, err = run(capsys, "--url", base, *SHORT_GAME)

    assert code == 2
    assert err.strip() == (f"demo: error: {base} is not a Zametano service (its /openapi.json names no games): "
                           "expected the service's URL, such as http://127.0.0.1:8000")


def test_a_receipts_file_that_cannot_be_written_is_a_usage_error_exiting_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, err = run(capsys, "--receipts", str(tmp_path / "no-such-dir" / "r.jsonl"), *SHORT_GAME)

    assert code == 2
    assert "cannot write --receipts" in err and "Traceback" not in err


def test_the_url_can_come_from_zametano_url_without_http(
    store: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    with serving(store) as base:
        monkeypatch.setenv("ZAMETANO_URL", base.removeprefix("http://"))
        code, out, err = run(capsys, *SHORT_GAME)

    assert code == 0, out + err


@pytest.mark.parametrize("game, players", [("punto-banco", "marta,anna,boris"), ("chemin-de-fer", "anna,boris,vera"),
                                           ("card-lottery", "olga,ivan,anna,boris")])
def test_with_seats_self_each_players_commands_are_posted_with_his_own_minted_token(
    store: Path, capsys: pytest.CaptureFixture[str], game: str, players: str
) -> None:
    with serving(store, tokens="operator@cage:op-secret-0f3a9c2e") as base:
        code, out, err = run(capsys, "--url", base, "--token", "op-secret-0f3a9c2e", "--game", game, "--players", players,
                             "--rounds", "2", "--seed", "4", "--seats", "self")
        assert code == 0, out + err
        table_id = next(line.split()[-1] for line in out.splitlines() if line.split()[:1] == ["table"])
        events = requests.get(f"{base}/tables/{table_id}/events", params={"limit": 1000},
                              headers={"Authorization": "Bearer op-secret-0f3a9c2e"}, timeout=10).json()["events"]
    assert any(line.split() == ["players", "act", "self"] for line in out.splitlines())
    assert events[0]["data"]["players_act"] == "self"
    seated = players.split(",")
    house = {"marta"} if game == "punto-banco" else set()  # punto banco's croupier holds the house's seat
    first = {}  # each command's first event: its actor is the player the command was issued for
    for e in events:
        first.setdefault(e["command"], e)
    issued = {(e["actor"], e["data"].get("by")) for e in first.values() if e["actor"] in seated}
    for actor, by in issued:
        assert by == ("cage" if actor in house else actor), (actor, by)
    assert {actor for actor, _ in issued} - house, "no player's own command recorded"
