"""A log damaged behind the service's back (rows deleted, exchanged, rewritten or unreadable; a snapshot ahead
of the log) is named at its version by the audits, and refused clearly by the table: never a crash."""

from __future__ import annotations

import hashlib
import random
from datetime import timedelta

import pytest

from service.application import TablesService
from service.config import load
from service.errors import DamagedLog, IndexIncomplete
from tests.helpers import Seeds, StepClock, pick
from tests.tampering import Rows

PLAYERS = ["anna", "boris", "vera"]
# A snapshot every 10 events: the last one is always less than 20 events behind the head.
INTERVAL = 10


@pytest.fixture
def make(persistence_env):
    if persistence_env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        pytest.skip("tampering needs rows in a database")
    made: list[TablesService] = []

    def build() -> TablesService:
        service = TablesService(load({**persistence_env, "SNAPSHOT_INTERVAL": str(INTERVAL)}), clock=StepClock(),
                                new_seed=Seeds())
        made.append(service)
        return service

    yield build
    for service in made:
        service.close()


def played(service: TablesService, commands: int = 100) -> str:
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
    rng = random.Random(3)
    for _ in range(commands):
        service.execute(table_id, *pick(service.current_state(table_id), rng))
    service.list_rounds(table_id)  # the read model caught up, as a server that lists its tables keeps it
    return table_id


def rounds(service: TablesService, table_id: str) -> list[dict]:
    return service.list_rounds(table_id, limit=1000)["rounds"]


def round_with(service: TablesService, table_id: str, version: int) -> int:
    return next(r["round"] for r in rounds(service, table_id) if r["first_version"] <= version <= r["last_version"])


def a_middle_version(service: TablesService, table_id: str) -> int:
    """A version inside a finished round, between two snapshots (replays cross it)."""
    row = rounds(service, table_id)[len(rounds(service, table_id)) // 2]
    version = row["first_version"] + 2
    while version % INTERVAL in (0, 1) or version >= row["last_version"]:
        version -= 1
    return version


def named(report: dict) -> set[tuple[str, int | None]]:
    return {(p["check"], p["version"]) for p in report["problems"]}


def test_a_log_cut_short_behind_its_snapshot_is_refused_clearly_and_named_by_verify(make, persistence_env):
    service = make()
    table_id = played(service)
    rows = Rows(persistence_env, table_id)
    head = rows.versions()[-1]
    rows.delete(head - 19)
    end, snapshot = head - 20, rows.snapshot_versions()[-1]
    assert snapshot > end
    fresh = make()
    ahead = f"the snapshot at version {snapshot} is ahead of the log, which ends at {end}"

    for attempt in range(2):  # the table rebuilt from the snapshot is not kept in the cache either
        with pytest.raises(DamagedLog, match=ahead) as refused:
            fresh.current_state(table_id)
        assert refused.value.version == end + 1
    with pytest.raises(DamagedLog, match=ahead):  # the command path refuses before the rules are asked
        fresh.execute(table_id, "pass", "anna", {})
    with pytest.raises(DamagedLog, match=ahead):
        fresh.state_at_version(table_id, end - 5)
    assert rows.versions()[-1] == end  # nothing was appended over the hole
    # the process that played the table still holds it, past the new end, in its cache: it notices too
    with pytest.raises(DamagedLog, match=rf"this server's copy of the table is at version \d+, but the log now ends at {end}"):
        service.execute(table_id, "pass", "anna", {})

    report = fresh.verify(table_id)
    assert report["ok"] is False
    assert report["chain"]["first_broken_version"] == end + 1 and report["chain"]["last_version"] == end
    assert any(p["version"] == end + 1 and ahead in p["message"] for p in report["problems"])
    audit = fresh.round_audit(table_id, rounds(fresh, table_id)[-1]["round"])
    assert audit["checks"]["chain"] is False
    assert any(p["check"] == "chain" and p["version"] > end and "missing" in p["message"] for p in audit["problems"])


def test_a_log_cut_short_with_its_snapshots_dropped_is_named_by_verify_from_the_read_model(make, persistence_env):
    service = make()
    table_id = played(service)
    rows = Rows(persistence_env, table_id)
    head = rows.versions()[-1]
    rows.delete(head - 19)
    rows.drop_snapshots()
    fresh = make()

    assert fresh.current_state(table_id)["version"] == head - 20  # the table alone cannot tell
    report = fresh.verify(table_id)
    assert report["ok"] is False
    assert (f"the read model counted the table up to version {head}, but the log ends at {head - 20}"
            in report["problems"][0]["message"])
    assert report["problems"][0]["version"] == head - 19
    last_round = rounds(fresh, table_id)[-1]
    if last_round["last_version"] > head - 20:
        assert fresh.round_audit(table_id, last_round["round"])["checks"]["chain"] is False


def test_a_deleted_row_in_the_middle_is_named_at_its_version_everywhere(make, persistence_env):
    service = make()
    table_id = played(service)
    victim = a_middle_version(service, table_id)
    number = round_with(service, table_id, victim)
    Rows(persistence_env, table_id).delete(victim, victim)
    fresh = make()

    report = fresh.verify(table_id)
    assert report["ok"] is False and report["chain"]["first_broken_version"] == victim
    gap = f"version {victim} is missing: the log goes from {victim - 1} to {victim + 1}"
    assert report["problems"][0] == {"check": "chain", "version": victim, "type": None, "message": gap}
    # the rules cannot run across the hole: said once, then resumed past the next snapshot
    stalled = [p for p in report["problems"] if p["check"] == "rules" and "cannot be rebuilt" in p["message"]]
    assert len(stalled) == 1 and gap in stalled[0]["message"]
    assert report["commands_checked"] > 0

    audit = fresh.round_audit(table_id, number)
    assert audit["checks"]["chain"] is False and ("chain", victim) in named(audit)
    assert victim not in [e["version"] for e in audit["events"]]
    with pytest.raises(DamagedLog, match=gap):
        fresh.state_at_version(table_id, victim + 1)
    assert fresh.current_state(table_id)["version"] > victim  # a snapshot past the hole still serves the head


def test_two_rows_with_exchanged_contents_are_named_at_both_versions(make, persistence_env):
    service = make()
    table_id = played(service)
    victim = a_middle_version(service, table_id)
    number = round_with(service, table_id, victim)
    Rows(persistence_env, table_id).exchange(victim, victim + 1)
    fresh = make()

    report = fresh.verify(table_id)
    assert report["ok"] is False and report["chain"]["first_broken_version"] == victim
    chain = {p["version"]: p["message"] for p in report["problems"] if p["check"] == "chain"}
    # the row after them links to the digest now stored before it, which is the wrong one too
    assert set(chain) == {victim, victim + 1, victim + 2}
    assert "recorded" in chain[victim] and "recomputed" in chain[victim]
    assert "out of order" in chain[victim + 1]
    assert ("chain", victim) in named(fresh.round_audit(table_id, number))


def revealed_shoe(service: TablesService, table_id: str) -> dict:
    return next(s for s in service.index.view.get_shoes(table_id) if s["deck"] == "shoe" and s["seed"] is not None)


def test_a_revealed_seed_changed_in_the_log_is_named_against_the_commitment_the_log_records(make, persistence_env):
    service = make()
    table_id = played(service, commands=150)
    shoe = revealed_shoe(service, table_id)
    rows = Rows(persistence_env, table_id)
    forged = "ab" * 32
    state = rows.state(shoe["revealed_version"])
    state["seed"] = forged
    rows.write(shoe["revealed_version"], state)
    fresh = make()  # its read model still holds the honest seed: the checks must read the log

    report = fresh.verify(table_id)
    assert report["ok"] is False
    cards = next(p for p in report["problems"] if p["check"] == "cards")
    assert cards["version"] == shoe["revealed_version"] and cards["type"] == "ShoeRevealed"
    assert cards["message"] == (
        f"shoe {shoe['shoe']}: the seed revealed at version {shoe['revealed_version']} hashes to "
        f"{hashlib.sha256(bytes.fromhex(forged)).hexdigest()}, the commitment recorded at version "
        f"{shoe['shuffled_version']} is {shoe['commitment']}"
    )
    assert next(s for s in report["shoes"] if s["shoe"] == shoe["shoe"])["ok"] is False
    rules = next(p for p in report["problems"] if p["check"] == "rules")
    assert rules["version"] == shoe["revealed_version"]
    assert forged in rules["message"] and shoe["seed"] in rules["message"]  # the two sides differ visibly

    first_card = next(r for r in rounds(fresh, table_id) if r["first_version"] > shoe["shuffled_version"])
    audit = fresh.round_audit(table_id, first_card["round"])
    assert audit["checks"]["cards"] is False and ("cards", shoe["revealed_version"]) in named(audit)


def test_a_seed_changed_in_both_the_shuffle_and_the_reveal_is_named(make, persistence_env):
    service = make()
    table_id = played(service, commands=150)
    shoe = revealed_shoe(service, table_id)
    rows = Rows(persistence_env, table_id)
    forged = "cd" * 32
    for version in (shoe["shuffled_version"], shoe["revealed_version"]):
        state = rows.state(version)
        assert "seed" in state  # the shuffle stores its seed, hidden until the reveal
        state["seed"] = forged
        rows.write(version, state)
    fresh = make()

    report = fresh.verify(table_id)
    assert report["ok"] is False
    assert ("cards", shoe["revealed_version"]) in named(report)  # the commitment in the log still binds the seed
    assert ("rules", shoe["shuffled_version"]) in named(report)  # the shuffle, run again, commits to another seed
    assert report["chain"]["ok"] is True  # the seed is outside the chain


def test_timestamps_moved_back_with_digests_recomputed_leave_every_answer_standing(make, persistence_env):
    service = make()
    table_id = played(service)
    Rows(persistence_env, table_id).shift_time(timedelta(hours=-1))
    fresh = make()

    # A consistent rewrite of the whole log is beyond what the server alone can see (a receipt kept
    # outside it can): here it must only answer.
    report = fresh.verify(table_id)
    assert report["chain"]["ok"] is True
    assert fresh.round_audit(table_id, 2)["checks"]["chain"] is True
    state = fresh.current_state(table_id)
    assert fresh.state_at_version(table_id, state["version"] - 3)["version"] == state["version"] - 3


def test_a_row_that_cannot_be_decoded_is_named_and_refused_where_it_is_needed(make, persistence_env):
    service = make()
    table_id = played(service)
    victim = a_middle_version(service, table_id)
    number = round_with(service, table_id, victim)
    Rows(persistence_env, table_id).write(victim, b"{not json at all")
    fresh = make()

    report = fresh.verify(table_id)
    assert report["ok"] is False and report["chain"]["first_broken_version"] == victim
    assert report["problems"][0]["message"] == (
        f"the stored event at version {victim} cannot be read: it was altered or damaged"
    )
    audit = fresh.round_audit(table_id, number)
    assert audit["checks"]["chain"] is False and ("chain", victim) in named(audit)
    with pytest.raises(DamagedLog, match=f"the stored event at version {victim} cannot be read"):
        fresh.state_at_version(table_id, victim + 1)
    with pytest.raises(DamagedLog, match=f"version {victim} cannot be read"):
        fresh.events_page(table_id, after=victim - 3)
    assert len(fresh.events_page(table_id, after=0, limit=victim - 1)["events"]) == victim - 1


def test_a_row_damaged_before_the_read_model_saw_it_still_lets_the_audits_answer(make, persistence_env):
    service = make()
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
    rng = random.Random(5)
    for _ in range(30):
        service.execute(table_id, *pick(service.current_state(table_id), rng))
    Rows(persistence_env, table_id).write(12, b"\x00")
    fresh = make()

    report = fresh.verify(table_id)
    assert report["ok"] is False and report["problems"][0]["version"] == 12
    (row,) = [t for t in fresh.list_tables()["tables"] if t["table_id"] == table_id]
    assert row["index_error"]["version"] == 12  # the listing names it for this table alone
    with pytest.raises(IndexIncomplete, match="version 12"):  # its rounds were never indexed
        fresh.round_audit(table_id, 1)
