"""Rounds, round audits, whole-table verification and the table listing, on every persistence module."""

from __future__ import annotations

import dataclasses
import random
import threading
import uuid

import pytest

from domain.chain import digest
from domain.games import ROUND_MARKS
from tests.helpers import pick, rounds_of, stacked_shoe
from tests.tampering import Rows

PLAYERS = ["anna", "boris", "vera"]
LOTTERY = ["olga", "ivan", "anna", "boris", "vera"]


def played(service, game="chemin-de-fer", commands=250, seed=3, **rules):
    if game == "chemin-de-fer":
        table_id = service.open_table(game, PLAYERS, {"decks": 2, **rules})["table_id"]
    else:
        table_id = service.open_table(game, LOTTERY, rules, banker="olga", dealer="ivan")["table_id"]
    rng = random.Random(seed)
    for _ in range(commands):
        service.execute(table_id, *pick(service.current_state(table_id), rng))
    return table_id


def all_rounds(service, table_id):
    rounds, after = [], 0
    while True:
        page = service.list_rounds(table_id, after, limit=7)
        rounds += page["rounds"]
        after = page["next_after"]
        if after is None:
            return rounds


@pytest.mark.parametrize("game", ["chemin-de-fer", "card-lottery"])
def test_the_round_index_lists_every_finished_round_in_order_without_gaps_or_overlaps(service, game):
    table_id = played(service, game)
    rounds = all_rounds(service, table_id)
    state = service.current_state(table_id)
    assert [r["round"] for r in rounds] == list(range(1, len(rounds) + 1))
    assert len(rounds) in (state["round"], state["round"] - 1)  # the round in play is not listed
    for a, b in zip(rounds, rounds[1:]):
        assert a["last_version"] < b["first_version"] and a["ended_at"] < b["started_at"]
    assert all(r["summary"] for r in rounds)


@pytest.mark.parametrize("game", ["chemin-de-fer", "card-lottery"])
def test_an_honest_round_passes_every_check_and_shows_its_record(service, game):
    table_id = played(service, game)
    for number in (1, 2, len(all_rounds(service, table_id))):
        audit = service.round_audit(table_id, number)
        assert audit["problems"] == []
        assert audit["checks"]["chain"] and audit["checks"]["rules"] and audit["checks"]["money"]
        assert audit["checks"]["cards"] in (True, None)
        versions = [e["version"] for e in audit["events"]]
        assert versions == list(range(audit["first_version"], audit["last_version"] + 1))
        assert audit["state_after"]["as_of"]["version"] == audit["last_version"]
        assert all(p["amount"] > 0 for p in audit["payments"])
    assert service.verify(table_id)["ok"] is True


def test_cards_are_checked_once_the_shoe_is_revealed_and_null_before(service):
    table_id = played(service, commands=300)
    audits = [service.round_audit(table_id, n) for n in range(1, len(all_rounds(service, table_id)) + 1)]
    assert audits[0]["checks"]["cards"] is True  # the first shoe of 2 decks is long revealed
    last = audits[-1]
    shoe = service.current_state(table_id)["shoe"]["number"]
    if any(c["shoe"] == shoe for c in last["cards"]):
        assert last["checks"]["cards"] is None


def test_an_unknown_round_or_table_is_not_found(service):
    from service.errors import NotFoundInHistory, TableNotFound

    table_id = played(service, commands=60)
    with pytest.raises(NotFoundInHistory, match="no finished round 500"):
        service.round_audit(table_id, 500)
    with pytest.raises(TableNotFound):
        service.round_audit(str(uuid.uuid4()), 1)
    with pytest.raises(TableNotFound):
        service.list_rounds(str(uuid.uuid4()))


# --- tampering with the store ----------------------------------------------------------------------

def tamper(env, table_id, version, old: bytes, new: bytes):
    """Edits one stored event in place, as someone with database access (and the cipher key) might."""
    rows = Rows(env, table_id)
    state = next(raw for v, _, raw in rows.rows() if v == version)
    assert old in state
    rows.write(version, state.replace(old, new, 1))


@pytest.fixture
def stored(persistence_env):
    if persistence_env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        pytest.skip("tampering needs rows in a database")
    return persistence_env


def test_an_altered_stored_payment_is_named_by_the_round_audit_and_by_verify(make_service, stored):
    service = make_service()
    table_id = played(service)
    number = next(r["round"] for r in all_rounds(service, table_id) if "paid" in r["summary"])
    payment = service.round_audit(table_id, number)["payments"][0]
    tamper(stored, table_id, payment["version"], f'"amount":{payment["amount"]}'.encode(),
           f'"amount":{payment["amount"] + 1}'.encode())
    fresh = make_service()  # another process, nothing cached
    audit = fresh.round_audit(table_id, number)
    assert audit["checks"]["chain"] is False
    assert audit["problems"][0]["check"] == "chain" and audit["problems"][0]["version"] == payment["version"]
    report = fresh.verify(table_id)
    assert report["ok"] is False and report["chain"]["first_broken_version"] == payment["version"]


def test_an_altered_stored_card_is_named_by_the_round_audit(make_service, stored):
    service = make_service()
    table_id = played(service)
    audit = service.round_audit(table_id, 1)
    card = audit["cards"][0]
    other = "2c" if card["card"] != "2c" else "3c"
    tamper(stored, table_id, card["version"], f'"card":"{card["card"]}"'.encode(), f'"card":"{other}"'.encode())
    audit = make_service().round_audit(table_id, 1)
    named = {(p["check"], p["version"]) for p in audit["problems"]}
    assert ("chain", card["version"]) in named and ("cards", card["version"]) in named
    assert audit["checks"]["cards"] is False and audit["checks"]["rules"] is False


def test_a_stored_event_damaged_beyond_reading_is_named_not_crashed_on(make_service, stored):
    service = make_service()
    table_id = played(service)
    rounds = all_rounds(service, table_id)
    victim = rounds[1]["first_version"] + 1
    tamper(stored, table_id, victim, b'"actor":', b'"act0r":')
    fresh = make_service()
    audit = fresh.round_audit(table_id, 2)
    assert audit["checks"]["chain"] is False
    assert audit["problems"][0]["version"] == victim and "cannot be read" in audit["problems"][0]["message"]
    report = fresh.verify(table_id)
    assert report["ok"] is False and report["chain"]["first_broken_version"] == victim
    assert fresh.round_audit(table_id, 1)["checks"]["chain"] is True  # the rounds before it still audit


# --- what a round's audit reads ------------------------------------------------------------------------

def reading_every_row_again(monkeypatch):
    """Round audits from now on keep nothing they read: every read goes to the store, every state is rebuilt."""
    from service.audit import one_round

    monkeypatch.setattr(one_round, "_versions", lambda *args: None)
    monkeypatch.setattr(one_round._Rebuilt, "_replayed", lambda self, version: None)
    monkeypatch.setattr(one_round._Rebuilt, "_from_snapshot", lambda self, table_id, version: None)


@pytest.mark.parametrize("game", ["chemin-de-fer", "card-lottery"])
def test_a_round_audit_answers_as_one_that_reads_every_row_again_and_rebuilds_every_state(service, game, monkeypatch):
    table_id = played(service, game)
    numbers = [r["round"] for r in all_rounds(service, table_id)]
    kept = [service.round_audit(table_id, n) for n in numbers]
    reading_every_row_again(monkeypatch)
    assert [service.round_audit(table_id, n) for n in numbers] == kept


def test_a_damaged_round_audit_names_what_one_that_reads_every_row_again_names(make_service, stored, monkeypatch):
    service = make_service()
    table_id = played(service)
    rounds = all_rounds(service, table_id)
    card = service.round_audit(table_id, 1)["cards"][0]
    other = "2c" if card["card"] != "2c" else "3c"
    tamper(stored, table_id, card["version"], f'"card":"{card["card"]}"'.encode(), f'"card":"{other}"'.encode())
    tamper(stored, table_id, rounds[2]["first_version"] + 1, b'"actor":', b'"act0r":')
    tamper(stored, table_id, rounds[4]["last_version"], b'"actor":', b'"act0r":')  # the state after, unreadable
    numbers = [r["round"] for r in rounds[:6]]  # the damaged rounds and their neighbours
    first_reader = make_service()  # another process, nothing cached
    kept = [first_reader.round_audit(table_id, n) for n in numbers]
    assert {n for n, audit in zip(numbers, kept) if audit["problems"]} >= {1, 3, 5}
    reading_every_row_again(monkeypatch)
    second_reader = make_service()
    assert [second_reader.round_audit(table_id, n) for n in numbers] == kept


def test_a_round_audit_over_a_snapshot_that_cannot_be_read_names_what_one_that_reads_every_row_again_names(
        make_service, stored, monkeypatch):
    service = make_service()
    table_id = played(service)
    rows = Rows(stored, table_id)
    snapshot = rows.snapshot_versions()[1]
    rows.damage_snapshot(snapshot)
    rounds = [r for r in all_rounds(service, table_id) if r["first_version"] - 1 >= snapshot]
    numbers = [r["round"] for r in rounds[:2]]  # the states before them stand on that snapshot
    first_reader = make_service()  # another process, nothing cached
    kept = [first_reader.round_audit(table_id, n) for n in numbers]
    reading_every_row_again(monkeypatch)
    second_reader = make_service()
    assert [second_reader.round_audit(table_id, n) for n in numbers] == kept


def test_a_round_audit_reads_each_row_it_needs_once_and_the_states_around_the_round_from_one_snapshot(
        service, monkeypatch):
    table_id = played(service)
    rounds = all_rounds(service, table_id)
    middle = rounds[len(rounds) // 2]
    reads, snapshot_reads = [], []
    events, snapshots = service.recorder.select_events, service.snapshots.recorder.select_events

    def read_events(*args, **kwargs):
        rows = events(*args, **kwargs)
        reads.append({row.originator_version for row in rows})
        return rows

    monkeypatch.setattr(service.recorder, "select_events", read_events)
    monkeypatch.setattr(service.snapshots.recorder, "select_events",
                        lambda *args, **kwargs: snapshot_reads.append(1) or snapshots(*args, **kwargs))
    audit = service.round_audit(table_id, middle["round"])
    assert audit["problems"] == [] and audit["state_after"]["as_of"]["version"] == middle["last_version"]
    # from the snapshot of the state before the round to the event after it: the rows read to find the round
    every = max(service.snapshotting_intervals.values())
    for version in range((middle["first_version"] - 1) // every * every or 1, middle["last_version"] + 2):
        assert sum(version in read for read in reads) == 1, (version, reads)
    assert len(snapshot_reads) <= 1  # the state before the round; the state after is replayed from it


# --- a payout the rules forbid, recorded behind the service's back -------------------------------------

def test_a_payout_the_rules_forbid_fails_the_rules_check_even_with_an_intact_chain(make_service):
    service = make_service()
    table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
    with stacked_shoe(["Ts", "4h", "Jd", "5c"]):  # the banker's natural 9 against 0
        service.execute(table_id, "draw_seats", "anna", {})
        s = service.current_state(table_id)
        service.execute(table_id, "shuffle", s["banker"], {})
        s = service.current_state(table_id)
        service.execute(table_id, "cut", s["expects"][0]["player"], {"position": 10})
        service.execute(table_id, "post_bank", s["banker"], {"amount": 100})
        s = service.current_state(table_id)
        service.execute(table_id, "place_stake", s["seats"][1], {"amount": 40})
        service.execute(table_id, "pass", s["seats"][2], {})
        service.execute(table_id, "close_stakes", s["banker"], {})
        table = service.table(table_id)
        table.handle("deal", s["banker"], {}, service.clock(), service.new_seed,
                      new_salt=service.new_salt)
        events = list(table.collect_events())
        # The banker takes 400 instead of the 40 staked; every digest is recomputed so the chain holds.
        prev, forged = table_head_before(service, table_id), []
        for e in events:
            if e.type == "PaymentMade":
                e = dataclasses.replace(e, amount=e.amount * 10)
            e = dataclasses.replace(e, digest=digest(prev, e.originator_version, e.type, e.timestamp_text, e.actor, e.data,
                                                     e.salts))
            prev = e.digest
            forged.append(e)
        service.events.put(forged)
        audit = service.round_audit(table_id, 1)
    assert audit["checks"]["chain"] is True and audit["checks"]["money"] is True
    assert audit["checks"]["rules"] is False
    bad = next(p for p in audit["problems"] if p["check"] == "rules")
    assert bad["type"] == "PaymentMade" and "400" in bad["message"] and "40" in bad["message"]
    assert service.verify(table_id)["ok"] is False


def table_head_before(service, table_id):
    return service.events_page(table_id, after=0, limit=1000)["events"][-1]["digest"]


# --- the listing -------------------------------------------------------------------------------------

def test_the_listing_pages_tables_in_opening_order_and_filters_by_game(service):
    opened = []
    for i in range(5):
        opened.append(service.open_table("chemin-de-fer", PLAYERS, {})["table_id"])
        opened.append(service.open_table("card-lottery", LOTTERY, {}, banker="olga", dealer="ivan")["table_id"])
    seen, after = [], 0
    while True:
        page = service.list_tables(after=after, limit=3)
        seen += [t["table_id"] for t in page["tables"]]
        after = page["next_after"]
        if after is None:
            break
    assert seen == opened
    lottery = service.list_tables(game="card-lottery", limit=100)["tables"]
    assert [t["table_id"] for t in lottery] == opened[1::2]
    assert all(t["version"] == 2 and t["rounds"] == 0 for t in lottery)


@pytest.mark.parametrize("follow", [False, True], ids=["queries-index", "followers-index"])
def test_the_listing_stays_correct_while_several_processes_write_at_once(make_service, shared_store, follow):
    """Four server processes (services on one store) open and play tables and list them, all at once; the read
    model indexed by the queries themselves, or by each process's follower (and the queries that find it
    behind)."""
    services = [make_service(follow=follow) for _ in range(4)]
    opened: list[str] = []
    lock = threading.Lock()
    errors: list[BaseException] = []

    def work(service, seed):
        try:
            rng = random.Random(seed)
            for _ in range(4):
                table_id = service.open_table("chemin-de-fer", PLAYERS, {"decks": 2})["table_id"]
                with lock:
                    opened.append(table_id)
                for _ in range(40):
                    service.execute(table_id, *pick(service.current_state(table_id), rng))
                    if rng.random() < 0.2:
                        service.list_tables(limit=5)
        except BaseException as exc:  # noqa: BLE001 - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work, args=(s, i)) for i, s in enumerate(services)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    reader = make_service()
    listing = reader.list_tables(limit=1000)["tables"]
    assert sorted(t["table_id"] for t in listing) == sorted(opened)
    for row in listing:
        assert row["version"] == services[0].current_state(row["table_id"])["version"]
        # every event counted once: the index holds exactly the rounds the whole log shows
        expected = rounds_of(ROUND_MARKS["chemin-de-fer"], list(reader.iter_events(row["table_id"])))
        assert all_rounds(reader, row["table_id"]) == [{k: v for k, v in r.items()} for r in expected]
        assert row["rounds"] == len(expected)
