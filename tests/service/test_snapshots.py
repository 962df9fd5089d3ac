"""Snapshots are taken from the table in hand after its save (service/application.py ``_take_snapshots``), on
every persistence module: each one holds exactly the state the log gives at its version, and none costs a read
of the log."""

from __future__ import annotations

import random

import pytest

from tests.helpers import play_service

GAMES = {  # players, rules, roles
    "chemin-de-fer": (["anna", "boris", "vera"], {"decks": 2}, {}),
    "card-lottery": (["anna", "boris", "vera"], {}, {"banker": "anna", "dealer": "boris"}),
    "punto-banco": (["croupier", "anna", "boris"], {}, {"croupier": "croupier"}),
}


def play(service, table_id, commands, seed):
    return play_service(service, table_id, commands, random.Random(seed))


def replayed(service, table_id, version):
    """The table at ``version`` from its events alone, no snapshot, no cache."""
    table = None
    for event in service.events.get(service._uuid(table_id), lte=version):
        table = event.mutate(table)
    return table


def commands_after(service, table_id, version):
    after = list(service.events.get(service._uuid(table_id), gt=version, limit=1))
    return after[0].command if after else None


@pytest.mark.parametrize("game", sorted(GAMES))
def test_every_snapshot_holds_the_state_the_log_gives_at_its_version(make_service, game):
    service = make_service()
    players, rules, roles = GAMES[game]
    opened = service.open_table(game, players, rules, **roles)
    table_id = opened["table_id"]
    state = play(service, table_id, 160, seed=3)
    snapshots = list(service.snapshots.get(service._uuid(table_id)))
    assert len(snapshots) >= state["version"] // 50 >= 2
    for snapshot in snapshots:
        from_log = type(snapshot).take(replayed(service, table_id, snapshot.originator_version))
        stored_again = service.mapper.to_domain_event(service.mapper.to_stored_event(from_log))
        assert stored_again.state == snapshot.state, snapshot.originator_version
        # taken at the end of the command that crossed a multiple of the interval
        version = snapshot.originator_version
        crossing, end = (list(service.events.get(service._uuid(table_id), gt=v - 1, lte=v))[0]
                         for v in (version // 50 * 50, version))
        assert crossing.command == end.command and end.command != commands_after(service, table_id, version)


def test_a_snapshot_is_taken_without_reading_the_log(make_service, monkeypatch):
    service = make_service()
    table_id = service.open_table("chemin-de-fer", ["anna", "boris", "vera"], {"decks": 2})["table_id"]
    state = play(service, table_id, 20, seed=4)
    snapshotting, reads = [], []
    select, take = service.recorder.select_events, service._take_snapshots

    def watched_select(*args, **kwargs):
        if snapshotting:
            reads.append(args)
        return select(*args, **kwargs)

    def watched_take(processing_event):
        snapshotting.append(True)
        try:
            take(processing_event)
        finally:
            snapshotting.clear()

    monkeypatch.setattr(service.recorder, "select_events", watched_select)
    monkeypatch.setattr(service, "_take_snapshots", watched_take)
    before = len(list(service.snapshots.get(service._uuid(table_id))))
    while len(list(service.snapshots.get(service._uuid(table_id)))) == before:
        state = play(service, table_id, 1, seed=state["version"])
    assert reads == []
