"""Commands of one table that arrive together are decided one after another and saved together (service/combining.py):
every command answered is in the log once, in the order decided; fewer transactions than commands; a command the
rules refuse in a batch is refused alone and records nothing; two services on one store (two processes) never both
take a version, and a command without If-Match is never answered 409 for a race it lost."""

from __future__ import annotations

import threading
import time
from collections import Counter

import pytest

from domain.punto_banco.rules import StakeRefused
from service.combining import Combiner, Job

OPEN = {"open_seats": True, "min_stake": 1, "max_stake": 10**9, "commission_percent": 0}
BETTORS = [f"bettor{i:02d}" for i in range(24)]


def studio(service):
    table_id = service.open_table("punto-banco", ["marta"], dict(OPEN), croupier="marta")["table_id"]
    service.execute(table_id, "shuffle", "marta", {})
    service.execute(table_id, "cut", "marta", {"position": 40})
    return table_id


def at_once(services, table_id, stakes):
    """Each (bettor, amount) staked on the player by its own thread, all released together; the answers and
    failures by bettor."""
    answers, failures, gate = {}, {}, threading.Barrier(len(stakes))

    def stake(n, bettor, amount):
        gate.wait()
        try:
            answers[bettor] = services[n % len(services)].execute(table_id, "place_stake", bettor,
                                                                  {"spot": "player", "amount": amount})
        except Exception as exc:  # noqa: BLE001 - checked by the test
            failures[bettor] = exc

    threads = [threading.Thread(target=stake, args=(n, b, a)) for n, (b, a) in enumerate(stakes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    return answers, failures


def stakes_in_log(service, table_id):
    return Counter(e["data"]["player"] for e in service.iter_events(table_id) if e["type"] == "StakePlaced")


def test_stakes_sent_together_are_each_recorded_once_in_fewer_transactions_than_stakes(make_service):
    service = make_service()
    table_id = studio(service)
    saves = []
    original = service.save_together

    def save_together(*aggregates):  # a save that takes a while, as a store's does: the stakes meanwhile queue
        saves.append(len(aggregates))
        time.sleep(0.05)
        return original(*aggregates)

    service.save_together = save_together
    if service.committer is not None:
        service.committer._save = service.save_together
    answers, failures = at_once([service], table_id, [(b, 1) for b in BETTORS])
    assert not failures and set(answers) == set(BETTORS)
    assert stakes_in_log(service, table_id) == Counter(BETTORS)
    versions = sorted(a["version"] for a in answers.values())
    assert len(set(versions)) == len(BETTORS)  # each answer names its own version: the table after its command
    for bettor, answer in answers.items():
        assert [e["type"] for e in answer["events"]] == ["BettorJoined", "StakePlaced"]
        assert answer["state"]["stakes"][bettor] == {"player": 1}
    if service.repository.cache is not None:
        assert len(saves) < len(BETTORS)


def test_a_stake_refused_in_a_batch_is_refused_alone_and_the_others_are_taken(make_service):
    service = make_service()
    table_id = studio(service)
    stakes = [(b, 1) for b in BETTORS[:12]] + [("toolarge0", 10**10)]
    answers, failures = at_once([service], table_id, stakes)
    assert set(answers) == set(BETTORS[:12])
    assert isinstance(failures["toolarge0"], StakeRefused)
    assert "toolarge0" not in stakes_in_log(service, table_id)


def test_two_processes_on_one_table_never_both_take_a_version_and_never_answer_409_without_if_match(
        make_service, shared_store):
    services = [make_service(), make_service()]
    table_id = studio(services[0])
    answers, failures = at_once(services, table_id, [(b, 1) for b in BETTORS])
    assert not failures, failures
    assert stakes_in_log(services[0], table_id) == Counter(BETTORS)
    versions = [e["version"] for e in services[1].iter_events(table_id)]
    assert versions == list(range(1, len(versions) + 1))


def test_a_follower_that_finds_the_leader_gone_leads_the_next_batch():
    combiner = Combiner()
    job = Job("place_stake", "anna", {}, None, None, None, None, "", None, True)
    assert combiner.lead_or_wait("table", Job("x", "y", {}, None, None, None, None, "", None, True))
    led = []
    waiting = threading.Thread(target=lambda: led.append(combiner.lead_or_wait("table", job)))
    waiting.start()
    while not combiner._waiting["table"]:
        pass
    combiner.hand_over("table")
    waiting.join()
    assert led == [True]
    combiner.hand_over("table")
    assert "table" not in combiner._waiting


@pytest.mark.parametrize("mark, version, stale", [("", 5, False), ("T 5", 5, False), ("T 7", 5, True), ("U 7", 5, False)])
def test_a_leader_reads_the_log_first_only_when_the_turns_say_another_process_saved_its_table_later(
        tmp_path, mark, version, stale):
    from service.combining import Turns
    turns = Turns(tmp_path)
    if mark:
        name, saved = mark.split()
        turns.saved(name, int(saved))
    assert turns.stale("T", version) is stale
    turns.close()


def test_a_service_closed_by_the_garbage_collector_while_its_thread_opens_a_turn_file_does_not_deadlock(tmp_path):
    from service import combining

    live, dropped = combining.Turns(tmp_path), combining.Turns(tmp_path)
    done = threading.Event()

    def open_a_turn_while_another_closes():  # as Application.__del__ may run inside Turns._file
        with combining._OPEN_LOCK:
            dropped.close()
            live._file("a table")
        done.set()

    threading.Thread(target=open_a_turn_while_another_closes, daemon=True).start()
    assert done.wait(5), "closing a service inside a turn file's lock deadlocked"
    assert live._file("a table") >= 0
    live.close()
