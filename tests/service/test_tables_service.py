"""The service on every persistence module: memory, SQLite and PostgreSQL (same tests, fixture-driven)."""

from __future__ import annotations

import random
import uuid
from datetime import datetime, timedelta

import pytest

from domain.errors import BadArgument, IllegalDraw, NotAllowedNow, StakeAboveBank, UnknownCommand
from service.errors import (
    ConcurrentWrite,
    DamagedLog,
    IdempotencyKeyReused,
    IndexIncomplete,
    IndexUnreadable,
    NotFoundInHistory,
    StoreUnavailable,
    TableNotFound,
    VersionMismatch,
)
from tests.helpers import pick, stacked_shoe

PLAYERS = ["anna", "boris", "vera"]


@pytest.fixture(params=[False, True], ids=["one-by-one", "group-commit"])
def group_commit(request: pytest.FixtureRequest) -> bool:
    """Every test here runs with and without group commit (service/groupcommit.py)."""
    return request.param


def open_table(service, **rules):
    return service.open_table("chemin-de-fer", PLAYERS, rules)["table_id"]


def play(service, table_id, commands, seed=1):
    """Random legal play; returns the state after every command, by version."""
    rng = random.Random(seed)
    states = {1: service.current_state(table_id)}
    for _ in range(commands):
        command, player, args = pick(service.current_state(table_id), rng)
        result = service.execute(table_id, command, player, args)
        states[result["version"]] = result["state"]
    return states


def to_stakes(service, table_id):
    """Seats drawn, shoe shuffled and cut, bank of 100 posted: the table waits for the first stake."""
    s = service.current_state(table_id)
    service.execute(table_id, "draw_seats", "anna", {})
    s = service.current_state(table_id)
    service.execute(table_id, "shuffle", s["banker"], {})
    s = service.current_state(table_id)
    service.execute(table_id, s["expects"][0]["command"], s["expects"][0]["player"], {"position": 30})
    s = service.current_state(table_id)
    return service.execute(table_id, "post_bank", s["banker"], {"amount": 100})["state"]


def test_a_table_opens_with_its_rules_recorded_and_waits_for_seating(service):
    state = service.open_table("chemin-de-fer", PLAYERS, {"commission_percent": 5})
    assert state["version"] == 1 and state["phase"] == "seating"
    assert state["rules"] == {"decks": 3, "stop_card": 7, "draw_rule": "classic", "auto_forced": True, "commission_percent": 5}
    (opened,) = service.events_page(state["table_id"])["events"]
    assert opened["type"] == "TableOpened" and opened["actor"] == "service"
    # table_id: the chain bound to the table (docs/design.md "The table in the chain"); chain 3: its concealed
    # parts committed with salts (docs/design.md "Concealed parts (chain rule 3)")
    assert opened["data"] == {"game": "chemin-de-fer", "players": PLAYERS, "rules": state["rules"],
                              "table_id": state["table_id"], "chain": 3}


def test_replaying_to_any_version_returns_exactly_the_state_the_table_showed_then(service):
    table_id = open_table(service, decks=2)
    states = play(service, table_id, 150)
    for version, state in states.items():
        replayed = service.state_at_version(table_id, version)
        as_of = replayed.pop("as_of")
        assert as_of["version"] == version
        assert replayed == state


def test_replaying_to_a_moment_returns_the_state_after_the_last_event_at_or_before_it(service):
    table_id = open_table(service, decks=2)
    states = play(service, table_id, 60)
    events = {e["version"]: e for e in service.events_page(table_id, limit=1000)["events"]}
    for version, state in states.items():
        moment = datetime.fromisoformat(events[version]["timestamp"])
        replayed = service.state_at_moment(table_id, moment)
        assert replayed.pop("as_of") == {"version": version, "timestamp": events[version]["timestamp"]}
        assert replayed == state
        # a moment just before the next event still names this version
        later = service.state_at_moment(table_id, moment + timedelta(microseconds=0))
        assert later["version"] == version


def test_a_state_between_two_events_of_one_command_expects_nothing(service):
    table_id = open_table(service)
    result = service.execute(table_id, "draw_seats", "anna", {})
    first, last = result["events"][0]["version"], result["version"]
    assert service.state_at_version(table_id, first)["expects"] == []
    assert service.state_at_version(table_id, last)["expects"] == result["state"]["expects"] != []


def test_a_version_past_the_end_or_a_moment_before_the_table_is_not_found(service):
    table_id = open_table(service)
    with pytest.raises(NotFoundInHistory, match="has only version 1; there is no version 2"):
        service.state_at_version(table_id, 2)
    opened = datetime.fromisoformat(service.events_page(table_id)["events"][0]["timestamp"])
    with pytest.raises(NotFoundInHistory, match="did not exist"):
        service.state_at_moment(table_id, opened - timedelta(microseconds=1))


def test_the_event_log_pages_in_version_order_and_streams_whole(service):
    table_id = open_table(service)
    play(service, table_id, 40)
    head = service.current_state(table_id)["version"]
    seen, after = [], 0
    while after is not None:
        page = service.events_page(table_id, after=after, limit=7)
        seen += page["events"]
        after = page["next_after"]
    assert [e["version"] for e in seen] == list(range(1, head + 1))
    assert list(service.iter_events(table_id, batch=5)) == seen
    assert list(service.iter_events(table_id, after=head - 3))[0]["version"] == head - 2


def test_a_page_of_events_reads_the_log_once_and_a_page_past_its_head_is_empty_but_an_unknown_table_is_not_found(
        service, monkeypatch):
    table_id = open_table(service)
    play(service, table_id, 10)
    head = service.current_state(table_id)["version"]
    reads = []
    select = service.recorder.select_events
    monkeypatch.setattr(service.recorder, "select_events", lambda *a, **k: reads.append(k) or select(*a, **k))
    assert [e["version"] for e in service.events_page(table_id, after=2, limit=3)["events"]] == [3, 4, 5]
    assert len(reads) == 1
    assert service.events_page(table_id, after=head) == {"events": [], "next_after": None}
    with pytest.raises(TableNotFound):
        service.events_page(str(uuid.uuid4()))


def test_no_event_in_the_log_shows_a_seed_before_its_shoe_is_revealed(service):
    table_id = open_table(service, decks=2)
    play(service, table_id, 200)
    events = service.events_page(table_id, limit=1000)["events"]
    revealed = {e["data"]["shoe"] for e in events if e["type"] == "ShoeRevealed"}
    for e in events:
        if e["type"] == "ShoeShuffled":
            assert "seed" not in e["data"]
    state = service.current_state(table_id)
    assert state["shoe"]["number"] not in revealed or state["phase"] == "shuffle"


@pytest.mark.parametrize(
    "command,who,args,error",
    [
        ("place_stake", "banker", {"amount": 10}, NotAllowedNow),
        ("place_stake", "second", {"amount": 10}, NotAllowedNow),
        ("deal", "banker", {}, NotAllowedNow),
        ("place_stake", "first", {"amount": 101}, StakeAboveBank),
        ("place_stake", "first", {"amount": -5}, BadArgument),
        ("place_stake", "first", {"amount": "ten"}, BadArgument),
        ("place_stake", "first", {}, BadArgument),
        ("lead", "first", {"cards": ["Ts"]}, UnknownCommand),
        ("place_stake", "nobody", {"amount": 1}, NotAllowedNow),
    ],
)
def test_illegal_commands_are_refused_and_append_nothing(service, command, who, args, error):
    table_id = open_table(service)
    state = to_stakes(service, table_id)
    seats, banker = state["seats"], state["banker"]
    player = {"banker": banker, "first": seats[1], "second": seats[2], "nobody": "zoya"}[who]
    with pytest.raises(error):
        service.execute(table_id, command, player, args)
    assert service.current_state(table_id) == state


def test_a_forbidden_draw_is_refused_with_the_rule_and_appends_nothing(make_service):
    service = make_service()
    table_id = open_table(service, auto_forced=False)
    with stacked_shoe(["Ts", "2h", "7d", "5c"]):  # punter 7 must stand
        state = to_stakes(service, table_id)
        service.execute(table_id, "place_stake", state["seats"][1], {"amount": 50})
        service.execute(table_id, "pass", state["seats"][2], {})
        service.execute(table_id, "close_stakes", state["banker"], {})
        dealt = service.execute(table_id, "deal", state["banker"], {})
        with pytest.raises(IllegalDraw, match="must stand on 7"):
            service.execute(table_id, "draw", dealt["state"]["punter"], {})
    assert service.current_state(table_id) == dealt["state"]


def test_an_unknown_table_is_not_found(service):
    for table_id in (str(uuid.uuid4()), "not-a-uuid"):
        with pytest.raises(TableNotFound):
            service.current_state(table_id)
        with pytest.raises(TableNotFound):
            service.execute(table_id, "draw_seats", "anna", {})


def test_an_expected_version_refuses_a_stale_table_and_accepts_the_head(service):
    table_id = open_table(service)
    with pytest.raises(VersionMismatch, match="expected version 0 of the table, but the table is at version 1"):
        service.execute(table_id, "draw_seats", "anna", {}, expected_version=0)
    result = service.execute(table_id, "draw_seats", "anna", {}, expected_version=1)
    assert result["version"] > 1


def test_a_repeated_idempotency_key_returns_the_first_response_and_appends_nothing(make_service, shared_store):
    first_process, second_process = make_service(), make_service()
    table_id = open_table(first_process)
    first = first_process.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k-1")
    again = second_process.execute(table_id, "draw_seats", "anna", {}, idempotency_key="k-1")
    assert again == first
    assert second_process.current_state(table_id)["version"] == first["version"]
    with pytest.raises(IdempotencyKeyReused):
        first_process.execute(table_id, "draw_seats", "boris", {}, idempotency_key="k-1")


def test_a_command_that_loses_a_race_is_decided_again_on_the_fresh_table(make_service, shared_store):
    """Two server processes on one store: the loser's version check fails, it re-reads the table and the
    rules decide again; here they refuse, because the same player already spoke. One stake, never two."""
    winner = make_service()
    table_id = open_table(winner)
    state = to_stakes(winner, table_id)
    first = state["seats"][1]

    def racing_clock():
        racing_clock.calls += 1
        if racing_clock.calls == 1:  # read, then someone else writes before the save
            winner.execute(table_id, "place_stake", first, {"amount": 60})
        return datetime.now().astimezone()

    racing_clock.calls = 0
    loser = make_service(clock=racing_clock)
    with pytest.raises(NotAllowedNow, match=f"not {first}'s turn"):
        loser.execute(table_id, "place_stake", first, {"amount": 50})
    assert racing_clock.calls == 2  # decided twice
    events = loser.events_page(table_id, limit=1000)["events"]
    assert [e["data"] for e in events if e["type"] == "StakePlaced"] == [{"player": first, "amount": 60}]


def test_a_race_lost_while_expecting_a_version_is_a_conflict(make_service, shared_store):
    winner = make_service()
    table_id = open_table(winner)

    def racing_clock():
        racing_clock.calls += 1
        if racing_clock.calls == 1:
            winner.execute(table_id, "draw_seats", "boris", {})
        return datetime.now().astimezone()

    racing_clock.calls = 0
    loser = make_service(clock=racing_clock)
    with pytest.raises(ConcurrentWrite):
        loser.execute(table_id, "draw_seats", "anna", {}, expected_version=1)
    events = winner.events_page(table_id, limit=1000)["events"]
    assert sum(e["type"] == "SeatsDrawn" for e in events) == 1


def test_snapshots_are_taken_so_reading_does_not_replay_the_whole_history(service):
    table_id = open_table(service, decks=2)
    play(service, table_id, 150)
    head = service.current_state(table_id)["version"]
    snapshots = list(service.snapshots.get(uuid.UUID(table_id)))
    assert head >= 100 and len(snapshots) >= head // 50 - 1
    assert service.state_at_version(table_id, head)["version"] == head


def test_a_table_survives_a_restart_of_the_service(make_service, shared_store):
    first = make_service()
    table_id = open_table(first)
    states = play(first, table_id, 30)
    first.close()
    second = make_service()
    assert second.current_state(table_id) == states[max(states)]


def test_the_service_speaks_of_versions_keys_and_checks_never_of_headers_or_urls():
    errors = [
        VersionMismatch(7, 9),
        IdempotencyKeyReused(),
        DamagedLog("t-1", "version 3 is missing", 3),
        IndexIncomplete("t-1", {"version": 3, "message": "m"}, "Round 1"),
        IndexUnreadable("t-1", "r"),
        StoreUnavailable("down"),
    ]
    assert "expected version 7 of the table, but the table is at version 9" in errors[0].message
    for error in errors:
        assert not any(word in error.message for word in ("If-Match", "Idempotency-Key", "/tables", "GET ")), error


def test_a_command_works_on_its_own_copy_of_the_cached_table_and_a_refused_one_leaves_the_cache_as_the_log_has_it(
        service):
    import copy

    from service import present

    table_id = open_table(service)
    play(service, table_id, 30)
    mine = service.table(table_id)
    cached = service.repository.cache.get(service._uuid(table_id))
    assert mine is not cached and present.state(mine) == present.state(copy.deepcopy(cached))
    mine.handle(*pick(service.current_state(table_id), random.Random(3)), service.clock(), service.new_seed,
                      new_salt=service.new_salt)
    assert mine.version > cached.version  # changed, never saved
    with pytest.raises(UnknownCommand):
        service.execute(table_id, "no_such_command", "anna", {})
    state = service.current_state(table_id)  # from the cache
    rebuilt = service.state_at_version(table_id, state["version"])  # from the snapshot and the log
    assert state == {k: v for k, v in rebuilt.items() if k != "as_of"}
