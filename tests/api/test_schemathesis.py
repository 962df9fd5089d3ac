"""Schemathesis over the app's own /openapi.json, against the WSGI app (no network), on SQLite and on
PostgreSQL: every operation, with valid and invalid inputs the schema suggests, is never a server error.

Real tables with finished rounds are opened first, and part of the cases aim at them, so that the
operations under /tables/{table_id}/... reach a table instead of stopping at a 404. Hypothesis runs
derandomized: the same cases on every run. (Schemathesis's Python API drives Hypothesis here; its pytest
plugin is off, see pyproject.toml.)"""

from __future__ import annotations

import random

import pytest
import schemathesis
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from schemathesis import GenerationMode
from schemathesis.checks import not_a_server_error

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, pick

# 12 operations, valid and invalid cases, two stores: about 10 s of the suite on two cores.
CASES_PER_OPERATION = 40


def seeded_tables(client) -> tuple[list[str], int]:  # type: ignore[no-untyped-def]
    """A Chemin de fer table a few coups in and a fresh Card lottery table; their ids and the rounds."""
    state = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris", "vera"]}).json
    rng = random.Random(7)
    for _ in range(80):
        name, player, fields = pick(state, rng)
        state = client.post(f"/tables/{state['table_id']}/commands", json={"command": name, "player": player, **fields}).json["state"]
    lottery = client.post(
        "/tables", json={"game": "card-lottery", "players": ["olga", "ivan", "h0"], "banker": "olga", "dealer": "ivan"}
    ).json
    rounds = client.get(f"/tables/{state['table_id']}/rounds").json["rounds"]
    assert rounds, "the seeded table has finished rounds"
    return [state["table_id"], lottery["table_id"]], len(rounds)


@pytest.fixture(params=["sqlite", "postgres"])
def seeded_app(request, tmp_path):  # type: ignore[no-untyped-def]
    """The app on this store, with its seeded tables."""
    if request.param == "sqlite":
        env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "schemathesis.sqlite")}
    else:
        env = request.getfixturevalue("postgres_env")
    settings_ = load(env)
    service = TablesService(settings_, clock=StepClock(), new_seed=Seeds())
    try:
        app = create_app(settings_, service=service)
        yield app, *seeded_tables(app.test_client())
    finally:
        service.close()


def test_no_operation_answers_with_a_server_error(seeded_app):  # type: ignore[no-untyped-def]
    app, table_ids, rounds = seeded_app
    schema = schemathesis.openapi.from_wsgi("/openapi.json", app)
    operations = [result.ok() for result in schema.get_all_operations()]
    assert len(operations) >= 12, [op.label for op in operations]
    for operation in operations:
        cases = st.one_of(operation.as_strategy(mode) for mode in (GenerationMode.POSITIVE, GenerationMode.NEGATIVE))

        @settings(
            max_examples=CASES_PER_OPERATION,
            derandomize=True,  # the same cases on every run: CI never flakes on a case found by chance
            deadline=None,
            database=None,
            suppress_health_check=list(HealthCheck),
        )
        @given(case=cases, aim=st.sampled_from(["real", "real", "generated"]), table=st.sampled_from(table_ids),
               number=st.integers(min_value=0, max_value=rounds + 1))
        def call(case, aim, table, number):  # type: ignore[no-untyped-def]
            # Most cases name a real table (and a round that may exist), so the operations under
            # /tables/{table_id}/... get past the 404 to the code that reads a table.
            if aim == "real" and "table_id" in (case.path_parameters or {}):
                case.path_parameters["table_id"] = table
                if "number" in case.path_parameters:
                    case.path_parameters["number"] = number
                if operation.path.endswith("/state"):
                    case.query = {"version": number + 1}  # one of version or at, as the service wants
            case.call_and_validate(checks=[not_a_server_error])

        call()
