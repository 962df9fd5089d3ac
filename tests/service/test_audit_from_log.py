"""Audits from the log: the read model's rows edited behind the service's back, and two tables' ids exchanged
in the store, are named by /verify and the round audit, which derive rounds, shoes and the table from the
events themselves. On SQLite and PostgreSQL (the read model of memory cannot be edited from outside)."""

from __future__ import annotations

import pytest

from tests.service.test_audit import PLAYERS, all_rounds, played, stored  # noqa: F401 - stored is a fixture
from tests.tampering import ReadModel, swap_table_ids


def named(problems, field, round_=None):
    return [p for p in problems if p["check"] == "read_model" and p["field"] == field and p.get("round") == round_]


@pytest.fixture
def honest(make_service, stored):  # noqa: F811
    """A played table, its rounds, a round in the middle with stakes and payments, and its honest audit."""
    service = make_service()
    table_id = played(service)
    rounds = all_rounds(service, table_id)
    number = next(r["round"] for r in rounds[len(rounds) // 2:] if "paid" in r["summary"] or "won" in r["summary"])
    return table_id, rounds, number, service.round_audit(table_id, number)


@pytest.mark.parametrize("field,by", [("first_version", 2), ("last_version", -2)])
def test_a_round_whose_bounds_were_moved_in_the_read_model_is_audited_from_the_log_and_the_move_named(
        make_service, stored, honest, field, by):  # noqa: F811
    table_id, rounds, number, truth = honest
    ReadModel(stored).set_round(table_id, number, **{field: truth[field] + by})
    fresh = make_service()
    audit = fresh.round_audit(table_id, number)
    assert audit["checks"]["read_model"] is False
    assert named(audit["problems"], field, number)
    # what the audit shows is the round the log gives: no stake or payment dropped
    assert audit["events"] == truth["events"] and audit["payments"] == truth["payments"]
    assert audit[field] == truth[field]
    report = fresh.verify(table_id)
    assert report["ok"] is False and named(report["problems"], field, number)


def test_a_forged_round_summary_is_named_and_the_log_s_summary_shown(make_service, stored, honest):  # noqa: F811
    table_id, rounds, number, truth = honest
    ReadModel(stored).set_round(table_id, number, summary="tie; house paid 0, took 0")
    fresh = make_service()
    audit = fresh.round_audit(table_id, number)
    assert audit["summary"] == truth["summary"] and audit["checks"]["read_model"] is False
    assert named(audit["problems"], "summary", number)
    assert named(fresh.verify(table_id)["problems"], "summary", number)


def test_two_rounds_sealed_summaries_exchanged_are_both_named(make_service, stored, honest):  # noqa: F811
    table_id, rounds, number, truth = honest
    other = next(r["round"] for r in rounds if r["summary"] != truth["summary"])
    model = ReadModel(stored)
    a, b = model.round(table_id, number)["sealed"], model.round(table_id, other)["sealed"]
    model.set_round(table_id, number, sealed=b)
    model.set_round(table_id, other, sealed=a)
    fresh = make_service()
    for n in (number, other):
        audit = fresh.round_audit(table_id, n)
        assert audit["checks"]["read_model"] is False and named(audit["problems"], "summary", n)
    problems = fresh.verify(table_id)["problems"]
    assert named(problems, "summary", number) and named(problems, "summary", other)


def test_a_round_deleted_from_the_read_model_is_still_audited_from_the_log_and_named(make_service, stored, honest):  # noqa: F811
    table_id, rounds, number, truth = honest
    ReadModel(stored).delete_round(table_id, number)
    fresh = make_service()
    audit = fresh.round_audit(table_id, number)
    assert audit["events"] == truth["events"] and named(audit["problems"], "round", number)
    report = fresh.verify(table_id)
    assert report["ok"] is False and named(report["problems"], "round", number)
    assert report["rounds_checked"] == len(rounds)  # counted from the log


def test_the_table_row_forged_in_the_read_model_is_named_field_by_field(make_service, stored, honest):  # noqa: F811
    table_id, rounds, number, truth = honest
    ReadModel(stored).set_table(table_id, rounds=len(rounds) - 3, players=["anna", "boris", "mallory"])
    report = make_service().verify(table_id)
    assert report["ok"] is False
    assert named(report["problems"], "rounds") and named(report["problems"], "players")


def test_a_shoe_row_forged_in_the_read_model_is_named_field_by_field(make_service, stored, honest):  # noqa: F811
    table_id, rounds, number, truth = honest
    service = make_service()
    revealed = next(s for s in service.verify(table_id)["shoes"] if s["revealed"])
    model = ReadModel(stored)
    model.set_shoe(table_id, revealed["shoe"], revealed_version=None, commitment="00" * 32)
    report = make_service().verify(table_id)
    assert report["ok"] is False
    assert named(report["problems"], "revealed_version") and named(report["problems"], "commitment")


def test_an_honest_table_verifies_under_the_chain_rule_that_binds_its_id_and_commits_its_hidden_parts(service):
    table_id = played(service, commands=40)
    report = service.verify(table_id)
    assert report["ok"] is True and report["chain"]["rule"] == 3
    assert service.events_page(table_id, after=0, limit=1)["events"][0]["data"]["table_id"] == table_id


def test_two_tables_ids_exchanged_in_the_store_are_named_at_version_1_without_kept_heads(make_service, stored):  # noqa: F811
    service = make_service()
    a, b = played(service, commands=60, seed=1), played(service, commands=60, seed=2)
    service.close()
    swap_table_ids(stored, a, b)
    fresh = make_service()
    for table_id in (a, b):
        report = fresh.verify(table_id)
        assert report["ok"] is False and report["chain"]["first_broken_version"] == 1, report["problems"]
        moved = [p for p in report["problems"] if p["check"] == "chain" and p["version"] == 1]
        assert moved and "moved from another table" in moved[0]["message"]


def test_a_round_audit_reads_the_log_from_the_nearest_checkpoint_and_from_the_start_once_it_changed(
        make_service, stored, monkeypatch):  # noqa: F811
    from service.audit import checkpoints

    monkeypatch.setattr(checkpoints, "EVERY", 25)
    service = make_service()
    table_id = played(service)
    rounds = all_rounds(service, table_id)
    last = rounds[-1]
    reads = []
    fresh = make_service()
    real = fresh.stored_rows
    monkeypatch.setattr(fresh, "stored_rows", lambda t, after, upto=None, limit=None: reads.append((after, limit))
                        or real(t, after, upto, limit))

    def from_the_start():  # more than the first row (which says the table exists) read from the log's start
        return any(after == 0 and (limit is None or limit > 1) for after, limit in reads)

    first = fresh.round_audit(table_id, last["round"])
    assert from_the_start()  # the first audit reads the log from its start
    reads.clear()
    again = fresh.round_audit(table_id, last["round"])
    assert again == first and not from_the_start()  # the next one from a checkpoint before the round
    assert again["first_version"] == last["first_version"] and again["problems"] == []
    # a checkpoint whose event no longer has the digest it was made at (the log changed): not trusted
    version, digest, game, state = checkpoints.before_round(table_id, last["round"])[0]
    checkpoints.keep(table_id, version, "0" * 64, game, {**state, "rounds": 0})
    reads.clear()
    assert fresh.round_audit(table_id, last["round"]) == first and from_the_start()
