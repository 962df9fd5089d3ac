"""A command decides on the cached table itself (service/replay.py HeadLease): no copy of it is made, a refused
command leaves it as it was, a failed save forgets it, and no reader of the table sees a command half decided."""

from __future__ import annotations

import pickle
import random
import threading

import pytest
from eventsourcing.persistence import IntegrityError

from domain.errors import DomainError
from service import replay
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, pick, play_service

OPENING = ("chemin-de-fer", ["anna", "boris", "vera"], {"decks": 4})


@pytest.fixture(params=[False, True], ids=["alone", "group-commit"])
def service(request, postgres_env):
    service = TablesService(load(postgres_env), clock=StepClock(), new_seed=Seeds(), group_commit=request.param)
    yield service
    service.close()


def cached(service, table_id):
    return service.repository.cache.get(service._uuid(table_id))


def copies(monkeypatch):
    made = []
    copy = replay.copy_of
    monkeypatch.setattr(replay, "copy_of", lambda table: made.append(table.version) or copy(table))
    return made


@pytest.fixture
def on_any_store(make_service):
    """A service on memory, SQLite and PostgreSQL (where the cached table is lent unread)."""
    return make_service()


def test_a_command_on_a_cached_table_is_decided_on_that_table_without_a_copy(on_any_store, monkeypatch):
    service = on_any_store
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 3, random.Random(1))
    before = cached(service, table_id)
    made = copies(monkeypatch)
    state = play_service(service, table_id, 5, random.Random(2))
    assert made == []  # neither the five commands nor play's read of the state copies the table
    assert cached(service, table_id) is before and before.version == state["version"]
    assert service.verify(table_id)["ok"]


def test_a_refused_command_leaves_the_cached_table_as_it_was(service):
    table_id = service.open_table(*OPENING)["table_id"]
    play_service(service, table_id, 4, random.Random(3))
    table = cached(service, table_id)
    before = pickle.dumps(table)
    with pytest.raises(DomainError):
        service.execute(table_id, "no-such-command", "anna", {})
    with pytest.raises(DomainError):
        service.execute(table_id, "cut", "nobody", {"position": 1})
    assert cached(service, table_id) is table and pickle.dumps(table) == before


def test_a_save_that_fails_forgets_the_cached_table_and_nothing_unsaved_is_ever_shown(service, monkeypatch):
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 4, random.Random(4))
    save = service.save

    def failing(*aggregates):
        raise RuntimeError("the disk is full")

    monkeypatch.setattr(service, "save", failing)
    command, player, args = pick(state, random.Random(5))
    with pytest.raises(RuntimeError):
        service.execute(table_id, command, player, args)
    monkeypatch.setattr(service, "save", save)
    with pytest.raises(KeyError):
        cached(service, table_id)  # it had taken the command's events, which the log does not hold
    assert service.current_state(table_id) == state
    after = service.execute(table_id, command, player, args)
    assert after["version"] > state["version"] and service.verify(table_id)["ok"]


def test_a_stale_cached_table_is_forgotten_and_the_command_decided_again_on_the_log(service, postgres_env):
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 4, random.Random(6))
    other = TablesService(load(postgres_env), clock=StepClock(), new_seed=Seeds(9), group_commit=False)
    try:
        moved = play_service(other, table_id, 3, random.Random(7))  # another process moves the table on
    finally:
        other.close()
    stale = cached(service, table_id)
    assert stale.version == state["version"] < moved["version"]
    command, player, args = pick(moved, random.Random(8))
    service.turns = None  # not told by the node's turns that another process moved the table (below: told)
    try:
        answer = service.execute(table_id, command, player, args)
    except DomainError:
        pytest.fail("a command legal on the log's table was refused on the stale cached one")
    assert answer["version"] > moved["version"]
    assert cached(service, table_id) is not stale and service.verify(table_id)["ok"]


def test_a_cached_table_the_turns_say_is_behind_is_read_from_the_log_before_deciding(service, postgres_env):
    table_id = service.open_table(*OPENING)["table_id"]
    play_service(service, table_id, 4, random.Random(6))
    other = TablesService(load(postgres_env), clock=StepClock(), new_seed=Seeds(9), group_commit=False)
    try:
        moved = play_service(other, table_id, 3, random.Random(7))  # another process of the node moves it on
    finally:
        other.close()
    saves, save = [], service.save
    service.save = lambda *aggregates: (saves.append(aggregates[0].version), save(*aggregates))[1]
    if service.committer is not None:
        service.committer._save = service.save_together
    answer = service.execute(table_id, *pick(moved, random.Random(8)))
    assert answer["version"] > moved["version"] and len(saves) == 1  # no save lost to a stale table
    assert service.verify(table_id)["ok"]


def test_an_integrity_error_on_the_cached_table_is_decided_again_and_saved_once(service, monkeypatch):
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 4, random.Random(10))
    save, calls = service.save, []

    def first_refused(*aggregates):
        calls.append(aggregates[0].version)
        if len(calls) == 1:
            for aggregate in aggregates:
                aggregate.collect_events()  # what a refused save does to the aggregates handed to it
            raise IntegrityError("version taken")
        return save(*aggregates)

    monkeypatch.setattr(service, "save", first_refused)
    command, player, args = pick(state, random.Random(11))
    answer = service.execute(table_id, command, player, args)
    assert len(calls) == 2 and answer["version"] == calls[1]
    assert service.current_state(table_id)["version"] == answer["version"] and service.verify(table_id)["ok"]


def test_readers_of_a_table_see_only_the_states_its_commands_answered_with(service):
    """A reader copies the table under the lock a command holds while it decides on the cached table: any state
    read is one a command ended on, never a command's events half applied."""
    table_id = service.open_table(*OPENING)["table_id"]
    state = play_service(service, table_id, 2, random.Random(12))
    heads = {state["version"]}
    seen: list[int] = []
    done = threading.Event()
    failures: list[BaseException] = []

    def read() -> None:
        try:
            while not done.is_set():
                seen.append(service.current_state(table_id)["version"])
        except BaseException as exc:  # noqa: BLE001 - reported below
            failures.append(exc)

    readers = [threading.Thread(target=read) for _ in range(3)]
    for reader in readers:
        reader.start()
    try:
        rng = random.Random(13)
        for _ in range(40):
            command, player, args = pick(state, rng)
            answer = service.execute(table_id, command, player, args)
            state = answer["state"]
            heads.add(answer["version"])
    finally:
        done.set()
        for reader in readers:
            reader.join()
    assert not failures
    assert seen and set(seen) <= heads, sorted(set(seen) - heads)


@pytest.mark.parametrize("game, players, roles", [
    ("chemin-de-fer", ["anna", "boris", "vera"], {}),
    ("card-lottery", ["anna", "boris", "vera"], {"banker": "anna", "dealer": "boris"}),
    ("punto-banco", ["croupier", "anna", "boris"], {"croupier": "croupier"}),
])
def test_an_answer_keeps_nothing_of_the_table_that_a_later_command_changes(on_any_store, game, players, roles):
    """Commands and state reads use the cached table itself, and the answer is written out after the table's
    lock is let go: an answer that shared a list or a dict with the table would change under the writer."""
    import copy

    service = on_any_store
    table_id = service.open_table(game, players, {}, **roles)["table_id"]
    rng, kept = random.Random(14), []
    state = service.current_state(table_id)
    for _ in range(120):
        if not state["expects"]:
            break
        command, player, args = pick(state, rng)
        answer = service.execute(table_id, command, player, args)
        read = service.current_state(table_id)
        kept += [(answer, copy.deepcopy(answer)), (read, copy.deepcopy(read))]
        state = answer["state"]
    assert len(kept) > 40
    assert all(given == as_given for given, as_given in kept)
