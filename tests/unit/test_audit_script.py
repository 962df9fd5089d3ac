"""scripts/audit: the stand-alone auditor of one table or of every table, run against the real service.

The real app runs in this process on the standard library's WSGI server, over SQLite (tests/served.py).
One Chemin de fer table and one card lottery table are played once with random legal moves; every test
then audits a copy of that store of its own, some after editing a stored event in the SQLite file as
someone with database access might.
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import uuid
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from tests.served import (Played, a_shoe_was_revealed, audit, call, events_of, play, problem_lines, row_of, rows,
                          run, serving, sqlite_env)
from tests.tampering import Rows

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "audit"


def tamper(db: Path, table_id: str, version: int, old: bytes, new: bytes) -> None:
    """Edits one stored event in place, where it holds ``old`` once."""
    rows = Rows(sqlite_env(db), table_id)
    state = next(raw for v, _, raw in rows.rows() if v == version)
    assert state.count(old) == 1, (old, state)
    rows.write(version, state.replace(old, new))


def expected_row(base: str, table_id: str, game: str, rounds: str) -> dict[str, str]:
    """What an honest table's row must say, counted here from the events API and the rounds index."""
    events = events_of(base, table_id)
    shuffled = {e["data"]["shoe"] for e in events if e["type"] == "ShoeShuffled"}
    revealed = {e["data"]["shoe"] for e in events if e["type"] == "ShoeRevealed"}
    return {
        "game": game, "events": str(len(events)), "revealed": f"{len(revealed)}/{len(shuffled)}", "rounds": rounds,
        "chain": "ok", "shoes": "ok", "server": "ok", "heads": "-", "result": "ok",
    }


def finished_rounds(base: str, table_id: str) -> list[dict[str, Any]]:
    return call("GET", f"{base}/tables/{table_id}/rounds?limit=1000")["rounds"]


# --- honest tables ---------------------------------------------------------------------------------


def test_every_table_and_every_round_of_an_honest_service_audits_ok(
    played: Played, store: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "PAGE_SIZE", 1)  # every listing, of tables and of rounds, over many pages
    with serving(store) as base:
        code, out, err = run(capsys, base, "--all", "--rounds")
        cdf_rounds = len(finished_rounds(base, played.chemin_de_fer))
        lottery_rounds = len(finished_rounds(base, played.lottery))
        expected = {
            played.chemin_de_fer: expected_row(base, played.chemin_de_fer, "chemin-de-fer", str(cdf_rounds)),
            played.lottery: expected_row(base, played.lottery, "card-lottery", str(lottery_rounds)),
        }

    assert code == 0, out + err
    assert len(rows(out)) == 2
    for table_id, row in expected.items():
        assert {k: v for k, v in row_of(out, table_id).items() if k != "table"} == row
    assert int(expected[played.chemin_de_fer]["revealed"].split("/")[0]) >= 2  # lots and a whole shoe
    assert "problems:" not in out
    assert "2 of 2 tables ok" in out
    assert "2 tables listed" in err
    assert f"[2/2 tables, {cdf_rounds + lottery_rounds} rounds done]" in err


def test_one_table_url_audits_that_table_alone(played: Played, store: Path, capsys: Any) -> None:
    with serving(store) as base:
        code, out, err = run(capsys, f"{base}/tables/{played.lottery}")

    assert code == 0, out + err
    assert list(rows(out)) == [played.lottery[:8]]
    assert row_of(out, played.lottery)["rounds"] == "-"  # round audits only with --rounds
    assert row_of(out, played.lottery)["result"] == "ok"


def test_the_game_option_audits_only_the_tables_of_that_game(played: Played, store: Path, capsys: Any) -> None:
    with serving(store) as base:
        code, out, _ = run(capsys, base, "--all", "--game", "chemin-de-fer")

    assert code == 0, out
    assert list(rows(out)) == [played.chemin_de_fer[:8]]


def test_the_script_runs_as_an_executable_from_any_directory(played: Played, store: Path, tmp_path: Path) -> None:
    assert SCRIPT.read_text(encoding="utf-8").startswith("#!/usr/bin/env python3\n")
    assert os.access(SCRIPT, os.X_OK)
    env = {k: v for k, v in os.environ.items() if k not in ("ZAMETANO_TOKEN", "PYTHONPATH")}
    with serving(store) as base:
        done = subprocess.run([str(SCRIPT), base, "--all"], cwd=tmp_path, env=env, capture_output=True,
                              text=True, timeout=120)

    assert done.returncode == 0, done.stdout + done.stderr
    assert row_of(done.stdout, played.chemin_de_fer)["result"] == "ok"
    assert row_of(done.stdout, played.lottery)["result"] == "ok"


# --- tampered stores -------------------------------------------------------------------------------


def a_paid_round(base: str, table_id: str) -> tuple[int, dict[str, Any]]:
    """The number of the first round with a payment, and that payment."""
    for row in finished_rounds(base, table_id):
        payments = call("GET", f"{base}/tables/{table_id}/rounds/{row['round']}")["payments"]
        if payments:
            return row["round"], payments[0]
    raise AssertionError("no round paid anything")


def test_an_altered_stored_payment_is_named_by_the_own_chain_check_and_by_the_server(
    played: Played, store: Path, capsys: Any
) -> None:
    with serving(store) as base:
        number, payment = a_paid_round(base, played.chemin_de_fer)
    version, amount = payment["version"], payment["amount"]
    tamper(store, played.chemin_de_fer, version, f'"amount":{amount}'.encode(), f'"amount":{amount + 1}'.encode())

    with serving(store) as base:
        code, out, _ = run(capsys, base, "--all", "--rounds")

    assert code == 1, out
    row = row_of(out, played.chemin_de_fer)
    assert row["chain"] == f"broken at {version}"
    assert row["shoes"] == "ok"  # no card was touched
    assert re.fullmatch(r"\d+ problems?", row["server"]) and row["server"] != "0 problems"
    assert "failed" in row["rounds"]
    assert row["result"] == "problem"
    assert row_of(out, played.lottery)["result"] == "ok"
    listed = problem_lines(out, played.chemin_de_fer)
    own = [line for line in listed if line.startswith("chain ")]
    assert own and own[0].split()[1:3] == ["version", str(version)] and "digest" in own[0]
    assert any(line.split()[:4] == ["server", "chain", "version", str(version)] for line in listed), listed
    assert any(line.split()[:5] == ["round", str(number), "chain", "version", str(version)] for line in listed), listed
    assert played.lottery not in out.split("problems:")[1]  # the honest table has nothing listed
    assert "1 of 2 tables ok" in out


def test_an_altered_card_of_a_revealed_shoe_breaks_the_chain_and_the_shoe(
    played: Played, store: Path, capsys: Any
) -> None:
    with serving(store) as base:
        events = events_of(base, played.lottery)
    revealed = {e["data"]["shoe"] for e in events if e["type"] == "ShoeRevealed"}
    dealt = next(e for e in events if e["type"] == "CardDealt" and e["data"]["shoe"] in revealed)
    card = dealt["data"]["card"]
    other = "2h" if card != "2h" else "3h"
    tamper(store, played.lottery, dealt["version"], f'"card":"{card}"'.encode(), f'"card":"{other}"'.encode())

    with serving(store) as base:
        code, out, _ = run(capsys, f"{base}/tables/{played.lottery}")

    assert code == 1, out
    row = row_of(out, played.lottery)
    assert (row["chain"], row["shoes"], row["result"]) == (f"broken at {dealt['version']}", "problem", "problem")
    position = dealt["data"]["position"]
    expected = f"card at position {position} (version {dealt['version']}) is '{other}', the revealed shoe has {card}"
    assert any(line.startswith(f"shoe {dealt['data']['shoe']}") and expected in line
               for line in problem_lines(out, played.lottery)), out


def test_a_server_that_calls_a_tampered_table_sound_is_contradicted(played: Played, store: Path, capsys: Any) -> None:
    with serving(store) as base:
        _, payment = a_paid_round(base, played.chemin_de_fer)
    version, amount = payment["version"], payment["amount"]
    tamper(store, played.chemin_de_fer, version, f'"amount":{amount}'.encode(), f'"amount":{amount + 1}'.encode())

    def whitewash(app: Any) -> Any:
        """Every verify answers that all is well: the script must not take the server's word for it."""
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"].endswith("/verify"):
                body = json.dumps({"ok": True, "chain": {"events": 1, "ok": True, "first_broken_version": None},
                                   "shoes": [], "commands_checked": 0, "rounds_checked": 0, "problems": []})
                start_response("200 OK", [("Content-Type", "application/json")])
                return [body.encode()]
            return app(environ, start_response)
        return wrapped

    with serving(store, wrap=whitewash) as base:
        code, out, _ = run(capsys, f"{base}/tables/{played.chemin_de_fer}")

    assert code == 1, out
    row = row_of(out, played.chemin_de_fer)
    assert (row["chain"], row["server"], row["result"]) == (f"broken at {version}", "ok", "problem")
    assert any(line.startswith(f"disagreement   version {version}") and "the server finds the chain intact" in line
               for line in problem_lines(out, played.chemin_de_fer)), out


def cut_short(db: Path, table_id: str, keep: int) -> None:
    """Deletes a table's stored events after version `keep`: what is left still chains perfectly."""
    rows = Rows(sqlite_env(db), table_id)
    assert rows.versions()[-1] > keep
    rows.delete(keep + 1)


def test_a_log_cut_short_in_the_store_keeps_its_chain_but_fails_the_saved_heads(
    played: Played, store: Path, tmp_path: Path, capsys: Any
) -> None:
    heads = tmp_path / "heads.jsonl"
    with serving(store) as base:
        saved = run(capsys, base, "--all", "--save-heads", str(heads))
        last = events_of(base, played.lottery)[-1]
    cut_short(store, played.lottery, last["version"] - 3)

    with serving(store) as base:
        code, out, err = run(capsys, base, "--all", "--heads", str(heads))

    assert saved[0] == 0, saved[1] + saved[2]
    assert code == 1, out + err
    row = row_of(out, played.lottery)
    assert (row["events"], row["chain"], row["heads"], row["result"]) == (
        str(last["version"] - 3), "ok", "FAILED", "problem")
    expected = (f"the house signed version {last['version']} (digest {last['digest']}, {last['timestamp']}), "
                f"but the log ends at version {last['version'] - 3}")
    assert any(line.startswith(f"heads          version {last['version']}") and expected in line
               for line in problem_lines(out, played.lottery)), out
    assert row_of(out, played.chemin_de_fer)["heads"] == "ok"
    assert "Traceback" not in err


# --- tokens, network and usage errors -------------------------------------------------------------


def test_a_table_the_server_cannot_verify_is_an_error_and_the_other_tables_are_still_audited(
    played: Played, store: Path, capsys: Any
) -> None:
    def failing(app: Any) -> Any:
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"] == f"/tables/{played.lottery}/verify":
                start_response("500 Internal Server Error", [("Content-Type", "application/json")])
                return [b'{"code": 500, "status": "Internal Server Error", "message": "verify broke"}']
            return app(environ, start_response)
        return wrapped

    with serving(store, wrap=failing) as base:
        code, out, err = run(capsys, base, "--all")

    assert code == 2, out
    assert (row_of(out, played.lottery)["server"], row_of(out, played.lottery)["result"]) == ("error", "error")
    assert row_of(out, played.lottery)["chain"] == "ok"  # its own checks still ran
    assert row_of(out, played.chemin_de_fer)["result"] == "ok"
    assert any(line.startswith("error") and "HTTP 500" in line and "verify broke" in line
               for line in problem_lines(out, played.lottery)), out
    assert "Traceback" not in err


def test_a_wrong_token_exits_2_with_the_servers_message(played: Played, store: Path, capsys: Any) -> None:
    with serving(store, tokens="auditor:r34d-0123456789ab") as base:
        code, out, err = run(capsys, base, "--all", "--token", "wrong")
        refused_table = run(capsys, f"{base}/tables/{played.lottery}", "--token", "wrong")
        accepted = run(capsys, base, "--all", "--token", "r34d-0123456789ab")

    assert code == 2
    assert out == ""
    assert "HTTP 401" in err and "Traceback" not in err
    assert refused_table[0] == 2 and refused_table[1] == "" and "HTTP 401" in refused_table[2]
    assert accepted[0] == 0, accepted[1] + accepted[2]


def test_the_token_can_come_from_the_environment(
    played: Played, store: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ZAMETANO_TOKEN", "r34d-0123456789ab")
    with serving(store, tokens="auditor:r34d-0123456789ab") as base:
        code, out, err = run(capsys, base, "--all")

    assert code == 0, out + err


def test_an_unreachable_server_exits_2_with_a_message(capsys: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens on the port any more

    for argv in ([f"http://127.0.0.1:{port}", "--all"], [f"http://127.0.0.1:{port}/tables/{uuid.uuid4()}"]):
        code, out, err = run(capsys, *argv)
        assert code == 2
        assert out == ""
        assert "cannot reach" in err and "Traceback" not in err


def test_an_unknown_table_exits_2_with_the_servers_message(store: Path, capsys: Any) -> None:
    with serving(store) as base:
        code, out, err = run(capsys, f"{base}/tables/{uuid.uuid4()}")

    assert code == 2
    assert out == ""
    assert "HTTP 404" in err


@pytest.mark.parametrize(
    "argv, message",
    [
        (["ftp://example/tables/t-1"], "is not an http(s) URL"),
        (["http://127.0.0.1:8000"], "names no table"),
        (["http://127.0.0.1:8000/tables/t-1", "--game", "card-lottery"], "--game only goes with --all"),
        (["http://127.0.0.1:8000/tables/t-1", "--all"], "with --all give the service's URL"),
        (["http://127.0.0.1:8000/tables/t-1", "--flag-above", "5"], "--flag-above only goes with --decisions"),
        (["http://127.0.0.1:8000/tables/t-1", "--decisions", "--flag-above", "-1"], "0 or more"),
    ],
    ids=["not-http", "no-table-without-all", "game-without-all", "table-url-with-all", "flag-without-decisions",
         "negative-flag"],
)
def test_usage_errors_exit_2_with_a_message(argv: list[str], message: str, capsys: Any) -> None:
    with pytest.raises(SystemExit) as exit_:
        audit.main(argv)

    assert exit_.value.code == 2
    assert message in capsys.readouterr().err


# --- decisions ----------------------------------------------------------------------------------------


def printed_section(out: str, title: str, table_id: str) -> list[list[str]]:
    """The rows (cells split on two spaces or more) of one table's section of the decisions output, from
    ``title`` to the next blank line."""
    lines = out.splitlines()
    start = lines.index(next(line for line in lines if line.strip().startswith(table_id)))
    block = lines[start:]
    at = next(i for i, line in enumerate(block) if line.strip() == title) if title else 0
    found = []
    for line in block[at + 1:]:
        if not line.strip():
            break
        found.append(re.split(r"\s{2,}", line.strip()))
    return found


def test_decisions_prints_every_players_cost_and_the_pairs_above_the_threshold_with_their_rounds(
    store: Path, capsys: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(audit, "PAGE_SIZE", 3)  # the decisions over many pages
    with serving(store) as base:
        table_id = play(base, {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"],
                               "rules": {"draw_rule": "free", "decks": 2}}, a_shoe_was_revealed, seed=4)
        answer = call("GET", f"{base}/tables/{table_id}/decisions?limit=1000")
        pairs: dict[tuple[str, str], tuple[float, set[int]]] = {}
        for d in answer["decisions"]:
            for receiver, amount in d["to"].items():
                total, rounds = pairs.get((d["player"], receiver), (0.0, set()))
                pairs[d["player"], receiver] = (total + amount, rounds | {d["round"]})
        # The shuffle is random, so the threshold is taken between the pairs' totals: some above, some not.
        totals = sorted(total for total, _ in pairs.values())
        threshold = (totals[len(totals) // 2 - 1] + totals[len(totals) // 2]) / 2
        code, out, _ = run(capsys, f"{base}/tables/{table_id}", "--decisions", "--flag-above", f"{threshold:.6f}")

    assert code == 0, out
    players = printed_section(out, "", table_id)
    assert players[0] == ["player", "decisions", "costly", "cost", "theoretical loss", "result"]
    assert players[1:] == [[name, str(p["decisions"]), str(p["costly"]), f"{p['cost_amount']:.4f}",
                            f"{p['theoretical_loss']:.4f}", str(p["result"])] for name, p in answer["players"].items()]
    above = sorted(((pair, total, rounds) for pair, (total, rounds) in pairs.items() if total > float(f"{threshold:.6f}")),
                   key=lambda x: -x[1])
    assert above and len(above) < len(pairs)  # the threshold leaves some out
    assert printed_section(out, "flagged:", table_id) == [["giver", "receiver", "given away", "rounds"]] + [
        [giver, receiver, f"{total:.4f}", ", ".join(map(str, sorted(rounds)))] for (giver, receiver), total, rounds in above]
