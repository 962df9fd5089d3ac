"""End to end: rounds voided over real HTTP on the real server (gunicorn, two workers), on SQLite and PostgreSQL,
one server per store. On each game a round voided before its payments and one after them (the Card lottery: two
stage-1 rounds before their reveal) put every balance back as it stood before the round, house included; the
player's own history shows them void; GET /adjustments lists each; and from the outside scripts/audit --all
--rounds --adjustments and scripts/verify-shoe pass. Then the server is killed outright (SIGKILL) between a
request and its approval: the request is pending, nothing of the void recorded, and another server approves it."""

from __future__ import annotations

import subprocess
import sys

import pytest
import requests

from tests.e2e.conftest import ROOT, server_env
from tests.e2e.servers import running_server, signal_group
from tests.voiding import TABLES, Driver, money, void

OPERATOR, AUDITOR = "cage-operator-token-0042", "audrey-auditor-token-0042"
SUPERVISORS = {"sara": "sara-supervisor-token-0042", "simon": "simon-supervisor-token-0042"}
TOKENS = (f"operator@cage:{OPERATOR},auditor@audrey:{AUDITOR},"
          + ",".join(f"supervisor@{name}:{token}" for name, token in SUPERVISORS.items()))


def session(token):
    http = requests.Session()
    http.headers["Authorization"] = f"Bearer {token}"
    return http


def script(name, *args):
    return subprocess.run([sys.executable, str(ROOT / "scripts" / name), *args, "--token", AUDITOR],
                          capture_output=True, text=True, timeout=300)


@pytest.fixture(params=["sqlite", "postgres"])
def store_env(request, tmp_path):
    """A store of the test's own: a SQLite file, or a PostgreSQL schema dropped afterwards."""
    return server_env(request, tmp_path, ZAMETANO_TOKENS=TOKENS)


class Remote:
    """A table played over HTTP: the operator's commands, the supervisors' corrections."""

    def __init__(self, base, game):
        self.base, self.game, self.http = base, game, session(OPERATOR)
        opened = self.http.post(f"{base}/tables", json=TABLES[game], timeout=10)
        assert opened.status_code == 201, opened.text
        self.id = opened.json()["table_id"]
        self.driver = Driver(self.send, opened.json())

    def send(self, command, player, fields):
        answer = self.http.post(f"{self.base}/tables/{self.id}/commands",
                                json={"command": command, "player": player, **fields}, timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()["state"], answer.json()["events"]

    def send_as(self, supervisor, command, fields):
        answer = session(SUPERVISORS[supervisor]).post(f"{self.base}/tables/{self.id}/commands",
                                                       json={"command": command, "player": supervisor, **fields},
                                                       timeout=10)
        assert answer.status_code == 200, answer.text
        return answer.json()

    def rounds(self):
        return self.http.get(f"{self.base}/tables/{self.id}/rounds", params={"limit": 1000}, timeout=10).json()["rounds"]

    def void_checked(self, number, reason):
        """Voids round ``number`` and checks the money is back as before the round; the approval."""
        before = self.driver.money_before_round
        approved = void(self.send_as, number, reason)
        assert money(approved["state"]) == before, (self.game, number)
        self.driver.state = approved["state"]
        return approved


def play_and_void(base, game):
    """A void before payment and one after (the Card lottery: two before its reveal); the voided rounds."""
    table = Remote(base, game)
    table.driver.to_open_round(game)
    first = len(table.rounds()) + 1
    table.void_checked(first, "misdeal")
    if game == "card-lottery":
        table.driver.to_settled_round(game)
        table.driver.to_open_round(game)
        second = len(table.rounds()) + 1
    else:
        table.driver.to_settled_round(game)
        second = len(table.rounds())
    table.void_checked(second, "card-exposed")
    if game == "chemin-de-fer":
        table.driver.to_shoe_revealed()  # every card of the shoe, the voided coups' too, checked against its seed
    return table, {first: "misdeal", second: "card-exposed"}


def test_voids_on_every_game_over_http_pass_every_outside_check_and_survive_a_kill(store_env, tmp_path):
    with running_server(store_env, tmp_path / "server.log") as base:
        voided = {game: play_and_void(base, game) for game in TABLES}
        audit = session(AUDITOR)
        listed = audit.get(f"{base}/adjustments", params={"limit": 1000}, timeout=10).json()["adjustments"]
        assert {(a["table_id"], a["round"]): a["reason"] for a in listed} == {
            (table.id, number): reason for table, rounds in voided.values() for number, reason in rounds.items()}
        assert all(a["requested_by"] == "sara" and a["decided_by"] == "simon" for a in listed)
        punto, rounds = voided["punto-banco"]
        shown = {}
        for player in ("anna", "boris"):  # each staked in one of the voided coups at least, whoever the dice chose
            token = punto.http.post(f"{base}/players/{player}/tokens", json={}, timeout=10).json()["token"]
            history = session(token).get(f"{base}/players/{player}/rounds", params={"limit": 1000}, timeout=10).json()
            shown |= {r["round"]: r["void"]["reason"] for r in history["rounds"] if r["table_id"] == punto.id
                      and "void" in r}
        assert shown == rounds  # his own history shows each voided coup he took part in as void
        for table, _ in voided.values():
            verified = script("verify-shoe", f"{base}/tables/{table.id}")
            assert verified.returncode == 0, verified.stdout + verified.stderr
        outside = script("audit", base, "--all", "--rounds", "--adjustments")
        assert outside.returncode == 0, outside.stdout + outside.stderr
        assert "3 of 3 tables ok" in outside.stdout and "6 adjustments, all ok" in outside.stdout
        chemin = voided["chemin-de-fer"][0]
        chemin.driver.to_open_round("chemin-de-fer")
        number, before = len(chemin.rounds()) + 1, money(chemin.driver.state)
        asked = chemin.send_as("sara", "request_correction", {"kind": "void_round", "round": number,
                                                              "reason": "equipment-failure"})
        signal_group(base.process.pid, 9)  # SIGKILL, the master and its workers: no shutdown at all
        base.process.wait()
    with running_server(store_env, tmp_path / "again.log") as again:
        chemin.base = again
        state = audit.get(f"{again}/tables/{chemin.id}", timeout=10).json()
        assert state["corrections"][0]["request"] == asked["state"]["corrections"][0]["request"]
        assert money(state) == before and state["version"] == asked["version"] and "voided" in state
        assert len(state["voided"]) == 2  # the two voids before, not the pending one
        approved = chemin.send_as("simon", "approve_correction", {"request": state["corrections"][0]["request"]})
        assert approved["events"][-1]["type"] == "RoundVoided" and money(approved["state"]) == before
        assert audit.get(f"{again}/tables/{chemin.id}/verify", timeout=10).json()["ok"]
