"""Over HTTP, on SQLite and PostgreSQL: the read model edited behind the service's back, and two tables' ids
exchanged in the store, named by GET /tables/<id>/verify, the round audit, `scripts/audit` and (for the ids)
`scripts/verify-shoe`, with no kept heads."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.api.test_what_catches_what import stores  # noqa: F401 - a fixture: an honest store and fresh copies
from tests.helpers import load_script
from tests.served import audit, call, problem_lines, serving
from tests.tampering import ReadModel, swap_table_ids

verify_shoe = load_script("verify-shoe", "zametano_verify_shoe_for_ids")


def read_model_findings(report: dict) -> set[tuple]:
    return {(p.get("round"), p.get("field")) for p in report["problems"] if p["check"] == "read_model"}


def test_each_read_model_edit_is_named_by_verify_the_round_audit_and_scripts_audit(
    stores, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    store, table_id, other = stores
    with serving(store.honest) as base:
        rounds = call("GET", f"{base}/tables/{table_id}/rounds?limit=1000")["rounds"]
        shoe = next(s for s in call("GET", f"{base}/tables/{table_id}/verify")["shoes"] if s["revealed"])
    moved, forged, a, b = (rounds[i]["round"] for i in (1, 2, 3, 4))
    with store.copy(100) as env:
        model = ReadModel(env)
        model.set_round(table_id, moved, first_version=rounds[1]["first_version"] + 2)
        model.set_round(table_id, forged, summary="tie; house paid 0, took 0")
        sealed_a, sealed_b = model.round(table_id, a)["sealed"], model.round(table_id, b)["sealed"]
        model.set_round(table_id, a, sealed=sealed_b)
        model.set_round(table_id, b, sealed=sealed_a)
        model.set_shoe(table_id, shoe["shoe"], revealed_version=None)
        model.set_table(table_id, rounds=len(rounds) - 1)
        with serving(env) as base:
            report = call("GET", f"{base}/tables/{table_id}/verify")
            expected = {(moved, "first_version"), (forged, "summary"), (a, "summary"), (b, "summary"),
                        (None, "revealed_version"), (None, "rounds")}
            assert report["ok"] is False and expected <= read_model_findings(report), report["problems"]
            for number, name in ((moved, "first_version"), (forged, "summary"), (a, "summary")):
                audited = call("GET", f"{base}/tables/{table_id}/rounds/{number}")
                assert audited["checks"]["read_model"] is False and (number, name) in read_model_findings(audited)
            assert audited["first_version"] == rounds[3]["first_version"]
            capsys.readouterr()
            assert audit.main([base, "--all", "--rounds"]) == 1
            out = capsys.readouterr().out
    lines = problem_lines(out, table_id)
    for number, name in ((moved, "first_version"), (forged, "summary"), (a, "summary"), (b, "summary")):
        assert any(line.startswith("server read_model") and f"round {number}: the read model's {name}" in line
                   for line in lines), out
    assert any("revealed_version" in line for line in lines) and any("the read model's rounds" in line for line in lines)


def test_two_tables_ids_exchanged_are_named_by_verify_scripts_audit_and_verify_shoe_without_kept_heads(
    stores, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,  # noqa: F811
) -> None:
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    store, table_id, other = stores
    with store.copy(101) as env:
        swap_table_ids(env, table_id, other)
        with serving(env) as base:
            for moved in (table_id, other):
                report = call("GET", f"{base}/tables/{moved}/verify")
                assert report["ok"] is False and report["chain"]["first_broken_version"] == 1
                assert report["chain"]["rule"] == 3
                audited = call("GET", f"{base}/tables/{moved}/rounds/1")
                assert audited["checks"]["chain"] is False and audited["problems"][0]["version"] == 1
            capsys.readouterr()
            assert audit.main([base, "--all"]) == 1
            out = capsys.readouterr().out
            assert verify_shoe.main([f"{base}/tables/{table_id}"]) == 1
            shoe_out = capsys.readouterr().out
    for moved in (table_id, other):
        lines = problem_lines(out, moved)
        assert any(line.startswith("chain") and "moved from another table" in line for line in lines), out
        assert any(line.startswith("server chain") and "moved from another table" in line for line in lines), out
    assert "broken at version 1" in shoe_out and "moved from another table" in shoe_out, shoe_out


def test_the_table_id_checked_is_the_one_in_the_url_so_an_honest_copy_passes(tmp_path: Path) -> None:
    events = [{"version": 1, "type": "TableOpened", "timestamp": "2026-01-01T00:00:00.000000+00:00",
               "actor": "service", "data": {"game": "punto-banco", "table_id": "t-1"}}]
    events[0]["digest"] = verify_shoe.event_digest("", events[0])
    assert verify_shoe.check_chain(events, "t-1").ok
    assert verify_shoe.check_chain(events, None).ok  # no table named: nothing to bind to
    report = verify_shoe.check_chain(events, "t-2")
    assert not report.ok and report.broken_at == 1 and "moved from another table" in report.problem
    assert verify_shoe.chain_rule(events) == 2
    assert verify_shoe.chain_rule([{**events[0], "data": {"game": "punto-banco"}}]) == 1
