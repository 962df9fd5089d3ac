"""The read model: whatever one table's events hold, every other table still lists, its rounds and audits still
answer, and the failed table is named with where and why; with a cipher, the read model shows nothing in clear."""

from __future__ import annotations

import base64
import dataclasses
import json
import random
import re
import sqlite3
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest
from eventsourcing.cipher import AESCipher

from service.application import TablesService
from service.config import load
from service.errors import IndexIncomplete
from tests.conftest import PG
from tests.helpers import Seeds, StepClock, pick
from tests.tampering import store_cipher

PLAYERS = ["anna", "boris", "vera"]
Change = Callable[[object, bytes], bytes]


@contextmanager
def stored_as(service: TablesService, change: Change) -> Iterator[None]:
    """What the service saves inside the block reaches the store altered by ``change(event, state)``, as if
    someone had written it there behind the service's back (someone holding the cipher key of an encrypted
    store: ``change`` sees and makes the state in clear)."""
    original = service.mapper.to_stored_event
    cipher = service.mapper.cipher

    def to_stored(event):  # type: ignore[no-untyped-def]
        stored = original(event)
        state = change(event, cipher.decrypt(stored.state) if cipher else stored.state)
        return dataclasses.replace(stored, state=cipher.encrypt(state) if cipher else state)

    service.mapper.to_stored_event = to_stored  # type: ignore[method-assign]
    try:
        yield
    finally:
        del service.mapper.to_stored_event


def every_player_renamed(names: list[str]) -> Change:
    """Each of PLAYERS stored under the name at the same place in ``names`` (in JSON, as the store keeps it)."""
    pairs = [(json.dumps(old).encode(), json.dumps(new).encode()) for old, new in zip(PLAYERS, names)]

    def change(event, state):  # type: ignore[no-untyped-def]
        for old, new in pairs:
            state = state.replace(old, new)
        return state

    return change


def first_of(kind: str | None, new_state: Callable[[bytes], bytes], versions: list[int]) -> Change:
    """Alters only the first stored event of type ``kind`` (of any type with None); its version is appended
    to ``versions``."""

    def change(event, state):  # type: ignore[no-untyped-def]
        if kind not in (None, type(event).__name__) or versions:
            return state
        versions.append(event.originator_version)
        return new_state(state)

    return change


def play_rounds(service: TablesService, table_id: str, finished: int = 1, seed: int = 5) -> None:
    """Random legal play until ``finished`` rounds are over."""
    rng = random.Random(seed)
    for _ in range(400):
        state = service.current_state(table_id)
        if state["round"] > finished:
            return
        service.execute(table_id, *pick(state, rng))
    raise AssertionError("no round finished in 400 commands")


def table_with_a_round(service: TablesService) -> str:
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_rounds(service, table_id)
    return table_id


def assert_answers_in_full(service: TablesService, table_id: str) -> None:
    """Listed without failure, its rounds listed, its first round audited, the whole table verified."""
    row = next(t for t in service.list_tables(limit=1000)["tables"] if t["table_id"] == table_id)
    assert row["index_error"] is None and row["rounds"] >= 1
    page = service.list_rounds(table_id)
    assert page["index_error"] is None and page["rounds"][0]["round"] == 1
    audit = service.round_audit(table_id, 1)
    assert audit["problems"] == [] and audit["checks"]["chain"] is True
    assert service.verify(table_id)["ok"] is True


def test_a_nul_in_a_name_written_to_the_store_is_kept_and_stops_no_listing(service):
    before = table_with_a_round(service)
    with_nul = [name[:2] + "\x00" + name[2:] for name in PLAYERS]
    with stored_as(service, every_player_renamed(with_nul)):
        bad = table_with_a_round(service)
    after = table_with_a_round(service)

    listing = service.list_tables(limit=100)["tables"]
    assert [t["table_id"] for t in listing] == [before, bad, after]
    assert listing[1]["players"] == with_nul and listing[1]["index_error"] is None
    for table_id in (before, after):
        assert_answers_in_full(service, table_id)
    page = service.list_rounds(bad)
    assert page["index_error"] is None and "\x00" in page["rounds"][0]["summary"]  # "punter bo\x00ris"...
    assert service.round_audit(bad, 1)["round"] == 1
    report = service.verify(bad)  # the digests were made for "anna": the chain names the altered event
    assert report["ok"] is False and report["chain"]["first_broken_version"] == 1


def assert_failed_alone(service, before, bad, after, version, message):
    """The bad table is listed with where and why it failed and what it held before; the others answer in full."""
    rows = {t["table_id"]: t for t in service.list_tables(limit=100)["tables"]}
    assert list(rows) == [before, bad, after]
    failed = rows[bad]
    assert failed["index_error"]["version"] == version and message in failed["index_error"]["message"]
    assert failed["version"] == 1 and failed["players"] == PLAYERS  # what it held before, nothing half-written
    for table_id in (before, after):
        assert_answers_in_full(service, table_id)
    page = service.list_rounds(bad)
    assert page["rounds"] == [] and page["index_error"] == failed["index_error"]
    with pytest.raises(IndexIncomplete, match=f"Round 1 is not in the read model.*at version {version}"):
        service.round_audit(bad, 1)
    report = service.verify(bad)
    assert report["ok"] is False and ("index", version) in {(p["check"], p["version"]) for p in report["problems"]}
    return failed, report


def test_an_event_that_cannot_be_read_stops_only_its_own_table_and_is_named(service):
    before = table_with_a_round(service)
    bad = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.list_tables()  # the read model holds the bad table's opening
    play_rounds(service, bad)
    damaged: list[int] = []
    with stored_as(service, first_of(None, lambda state: b"\x00 not an event", damaged)):
        # the table's last command: the service itself cannot read its table back after it
        service.execute(bad, *pick(service.current_state(bad), random.Random(1)))
    after = table_with_a_round(service)

    _, report = assert_failed_alone(service, before, bad, after, damaged[0], "the stored event cannot be read")
    assert ("chain", damaged[0]) in {(p["check"], p["version"]) for p in report["problems"]}


def test_an_event_that_cannot_be_indexed_stops_its_table_for_good_and_no_other(service):
    before = table_with_a_round(service)
    bad = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.list_tables()
    damaged: list[int] = []
    # Readable, and the table replays, but the event has lost a field every event must show.
    with stored_as(service, first_of("StakePlaced", lambda state: state.replace(b'"actor":', b'"act0r":'), damaged)):
        play_rounds(service, bad)
    after = table_with_a_round(service)

    failed, _ = assert_failed_alone(service, before, bad, after, damaged[0], "AttributeError")
    service.execute(bad, *pick(service.current_state(bad), random.Random(1)))
    assert service.list_tables(limit=100)["tables"][1] == failed  # a failed table is not indexed further


def test_a_value_the_database_refuses_fails_its_table_alone_within_one_batch(service, persistence_env):
    before = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    bad = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    service.list_tables()
    play_rounds(service, before)
    service.execute(bad, "draw_seats", "anna", {})
    huge: list[int] = []
    too_large = b'"shoe":1' + b"0" * 30  # a whole number, but past any database integer
    with stored_as(service, first_of("ShoeShuffled", lambda s: re.sub(rb'"shoe":\d+', too_large, s), huge)):
        # the table's last command: the service itself cannot replay a shoe it never shuffled
        service.execute(bad, "shuffle", service.current_state(bad)["banker"], {})
    after = table_with_a_round(service)

    # All three tables' new events are indexed in one batch: the other two are written, the bad one is not.
    rows = {t["table_id"]: t for t in service.list_tables(limit=100)["tables"]}
    for table_id in (before, after):
        assert_answers_in_full(service, table_id)
    if persistence_env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        assert rows[bad]["index_error"] is None  # memory holds any number
        return
    error = rows[bad]["index_error"]
    head = service.current_state(bad)["version"]
    assert error["version"] == 2 and error["message"].startswith(f"versions 2 to {head} could not be written")
    assert rows[bad]["version"] == 1 and rows[bad]["rounds"] == 0
    assert service.index.view.get_shoes(bad) == [] and service.index.view.list_rounds(bad, 0, 10) == []
    assert service.list_rounds(bad)["index_error"] == error
    assert service.verify(bad)["ok"] is False


# --- nothing readable that the events hide ------------------------------------------------------------

NAMES = ["anastasia", "borislav", "valentina"]


def raw_text_of_sqlite(path: str) -> bytes:
    return b"".join(p.read_bytes() for p in Path(path).parent.iterdir() if p.name.startswith(Path(path).name))


def raw_text_of_postgres(schema: str) -> bytes:
    import psycopg

    text = []
    with psycopg.connect(**PG) as db:
        tables = [r[0] for r in db.execute(
            "SELECT table_name FROM information_schema.tables WHERE table_schema = %s", (schema,))]
        for table in tables:
            text += [r[0] for r in db.execute(f'SELECT t::text FROM "{schema}"."{table}" t')]
    return "\n".join(text).encode()


@pytest.mark.parametrize("module", ["sqlite", "postgres"])
def test_with_a_cipher_the_read_model_holds_no_name_or_summary_in_clear(module, tmp_path, request):
    if module == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "sealed.sqlite")}
    else:
        env = dict(request.getfixturevalue("postgres_env"))
    env["CIPHER_KEY"] = AESCipher.create_key(num_bytes=32)
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        table_id = service.open_table("chemin-de-fer", NAMES, {})["table_id"]
        play_rounds(service, table_id, finished=2)
        listing = service.list_tables()["tables"]
        rounds = service.list_rounds(table_id)["rounds"]
        assert listing[0]["players"] == NAMES and any(name in r["summary"] for r in rounds for name in NAMES)
        assert service.verify(table_id)["shoes"]
        histories = {name: service.player_rounds(name)["rounds"] for name in NAMES}
        assert any(histories.values())
    finally:
        service.close()
    raw = raw_text_of_sqlite(env["SQLITE_DBNAME"]) if module == "sqlite" else raw_text_of_postgres(env["POSTGRES_SCHEMA"])
    assert table_id.encode() in raw  # the read model's rows are there, only not readable
    for secret in [*NAMES, "players", "summary", "commitment", "staked"]:
        assert secret.encode() not in raw and secret.encode().hex().encode() not in raw, secret
    reopened = TablesService(load(env))
    try:
        assert reopened.list_tables()["tables"] == listing and reopened.list_rounds(table_id)["rounds"] == rounds
        assert {name: reopened.player_rounds(name)["rounds"] for name in NAMES} == histories
    finally:
        reopened.close()


def test_a_name_is_sealed_as_escaped_json_text_encrypted_with_the_events_cipher(tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "plain.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path)}
    service = TablesService(load(env), clock=StepClock(), new_seed=Seeds())
    try:
        service.open_table("chemin-de-fer", ["anna", "бoris", "vera"], {})
        service.list_tables()
    finally:
        service.close()
    with sqlite3.connect(env["SQLITE_DBNAME"]) as db:
        (sealed,) = db.execute("SELECT sealed FROM zametano_tables_v3").fetchone()
    assert sealed.isascii() and "anna" not in sealed  # encrypted by default, like the events
    text = store_cipher(env).decrypt(base64.b64decode(sealed)).decode("ascii")
    assert '"players":["anna","\\u0431oris","vera"]' in text


@pytest.mark.parametrize("size", [2, 3, 5, 8])
def test_lists_that_end_inside_a_command_are_indexed_a_whole_command_at_a_time(service, size):
    """The follower reads the log in lists of its select limit, which may end anywhere inside a command. A
    round is finished at the end of the command that settles it, so a command cut off must wait for the rest
    of its events, even when the cut-off part is all a list holds."""
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_rounds(service, table_id, finished=3)
    assert service.index.position() == 0
    notes = list(service.recorder.select_notifications(0, 10_000, inclusive_of_start=False))
    held: list = []
    for start in range(0, len(notes), size):
        held = service.index.take(held + notes[start:start + size], whole=False)
    assert service.index.take(held, whole=True) == []  # the log's head: its last command is whole
    assert service.index.position() == notes[-1].id

    rounds = service.list_rounds(table_id)["rounds"]
    assert [r["round"] for r in rounds] == [1, 2, 3]
    report = service.verify(table_id)
    assert report["ok"] is True, report["problems"]


def test_the_indexer_decodes_every_table_event_and_no_commands_identity_record(service):
    """The read model is made of tables' events alone: the record every command saves with them (and any other
    aggregate's event) is never decrypted or decoded by the indexer, and the rounds come out the same."""
    table_id = service.open_table("chemin-de-fer", PLAYERS, {})["table_id"]
    play_rounds(service, table_id, finished=2)
    notes = list(service.recorder.select_notifications(0, 10_000, inclusive_of_start=False))
    service.index.take([], whole=True)  # its first take reads one stored event, whatever it is, to check the key
    decoded: list[str] = []
    original = service.mapper.to_domain_event

    def to_domain_event(stored):  # type: ignore[no-untyped-def]
        decoded.append(stored.topic)
        return original(stored)

    service.mapper.to_domain_event = to_domain_event  # type: ignore[method-assign]
    try:
        assert service.index.take(notes, whole=True) == []
    finally:
        del service.mapper.to_domain_event

    records = [n.topic for n in notes if n.topic.startswith("service.idempotency:")]
    assert len(records) >= 10 and not any(t.startswith("service.") for t in decoded)
    assert len(decoded) == len(notes) - len(records)
    assert [r["round"] for r in service.list_rounds(table_id)["rounds"]] == [1, 2]
    assert service.round_audit(table_id, 1)["problems"] == []
