"""Fixtures: a fresh event store per test on every persistence module (memory, SQLite, PostgreSQL)."""

from __future__ import annotations

import os
import uuid
from collections.abc import Iterator
from pathlib import Path

import pytest
from hypothesis import settings

from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock, postgres_location
from tests.served import Played, copy_store, play_store

# No time limit on an example: a per-example deadline is a timed assertion, and fails on a loaded machine.
settings.register_profile("untimed", deadline=None)
settings.load_profile("untimed")

# Where the PostgreSQL tests make their schemas: POSTGRES_HOST, _PORT, _USER, _PASSWORD and _DBNAME, by
# default postgres@127.0.0.1:5432/test (tests/helpers.py postgres_location).
PG = postgres_location(os.environ)
ON_CI = os.environ.get("CI", "").lower() == "true"


def postgres_reachable() -> str | None:
    """None when PostgreSQL answers, else the reason."""
    try:
        import psycopg

        with psycopg.connect(**PG, connect_timeout=3):
            return None
    except Exception as exc:  # noqa: BLE001 - any failure means unreachable
        return f"PostgreSQL at {PG['host']}:{PG['port']} not reachable: {exc}"


@pytest.fixture(scope="session")
def postgres_available() -> None:
    reason = postgres_reachable()
    if reason:
        if ON_CI:
            pytest.fail(f"PostgreSQL tests are mandatory under CI=true. {reason}")
        pytest.skip(reason)


@pytest.fixture
def postgres_env(postgres_available: None) -> Iterator[dict[str, str]]:
    """A schema of its own for one test, dropped afterwards."""
    import psycopg

    schema = f"zametano_test_{uuid.uuid4().hex[:12]}"
    with psycopg.connect(**PG, autocommit=True) as conn:
        conn.execute(f"CREATE SCHEMA {schema}")
    try:
        yield {
            "PERSISTENCE_MODULE": "eventsourcing.postgres",
            "POSTGRES_HOST": PG["host"],
            "POSTGRES_PORT": PG["port"],
            "POSTGRES_USER": PG["user"],
            "POSTGRES_PASSWORD": PG["password"] or "",
            "POSTGRES_DBNAME": PG["dbname"],
            "POSTGRES_SCHEMA": schema,
        }
    finally:
        with psycopg.connect(**PG, autocommit=True) as conn:
            conn.execute(f"DROP SCHEMA {schema} CASCADE")


@pytest.fixture(params=["memory", "sqlite", "postgres"])
def persistence_env(request: pytest.FixtureRequest, tmp_path) -> dict[str, str]:  # type: ignore[no-untyped-def]
    """The same tests run on every persistence module (the signing key and keyring in the test's folder)."""
    if request.param == "memory":
        return {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    if request.param == "sqlite":
        # A file, not :memory: (an in-memory SQLite database is per connection).
        return {
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "events.sqlite"),
            "ZAMETANO_DATA_DIR": str(tmp_path),
        }
    return {**request.getfixturevalue("postgres_env"), "ZAMETANO_DATA_DIR": str(tmp_path)}


@pytest.fixture
def group_commit() -> bool:
    """Whether make_service's services save by group commit: as the service does by default (on); a module
    overrides this fixture with ``params=[False, True]`` to run its tests both ways."""
    return load({}).group_commit


@pytest.fixture
def make_service(persistence_env: dict[str, str], group_commit: bool) -> Iterator:  # type: ignore[type-arg]
    """Builds services on this test's store; several may share it, as server processes do."""
    made: list[TablesService] = []

    def make(**kwargs) -> TablesService:  # type: ignore[no-untyped-def]
        kwargs.setdefault("clock", StepClock())
        kwargs.setdefault("new_seed", Seeds())
        kwargs.setdefault("group_commit", group_commit)
        service = TablesService(load(persistence_env), **kwargs)
        made.append(service)
        return service

    yield make
    for service in made:
        service.close()


@pytest.fixture
def service(make_service) -> TablesService:  # type: ignore[no-untyped-def]
    return make_service()


@pytest.fixture
def shared_store(persistence_env: dict[str, str]) -> None:
    """Tests that play two server processes against one store; an in-memory store is per process."""
    if persistence_env["PERSISTENCE_MODULE"] == "eventsourcing.popo":
        pytest.skip("an in-memory event store cannot be shared by two processes")


@pytest.fixture(scope="session")
def played(tmp_path_factory: pytest.TempPathFactory) -> Played:
    """Tables played once for the whole run on the real app over a real socket (tests/served.py)."""
    return play_store(tmp_path_factory.mktemp("played") / "a.sqlite")


@pytest.fixture
def store(played: Played, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """This test's own copy of the played store, with the key it was signed with."""
    # The client scripts take a token from either (the server's list as a fallback): each test says its own.
    monkeypatch.delenv("ZAMETANO_TOKEN", raising=False)
    monkeypatch.delenv("ZAMETANO_TOKENS", raising=False)
    return copy_store(played.db, tmp_path)


@pytest.hookimpl(tryfirst=True)
def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    """The suite runs in several processes (pytest-xdist), which send each report to the main one as UTF-8.
    The fuzzing tests send lone surrogates on purpose, and the service's log lines captured with a report may
    quote them: such characters are written escaped (\\udxxx), as a log would show them, so that the report
    can be sent at all. Nothing else of a report changes."""
    report.sections = [(title, _encodable(text)) for title, text in report.sections]


def _encodable(text: str) -> str:
    return text.encode("utf-8", "backslashreplace").decode("utf-8")


# The files that hold a test process longest, started first: each process (pytest-xdist, a file at a time)
# takes the next file as it finishes one, so a long file taken last would leave the other processes idle while
# it ends alone. scripts/test turns off xdist's own reordering (by the number of tests in a file, which puts
# these few-test files last). Seconds: the file's tests in a clean-clone run of the whole suite on a busy 2-core
# machine (load about 11), 2026-12-06, the files added that day measured alone on it; the rest as marked.
LONGEST_FIRST = [
    "tests/e2e/test_punto_banco_over_http.py",  # 180: two whole shoes by the demo on PostgreSQL
    "tests/service/test_lost_commit_replies.py",  # 105: four shoes behind proxies that lose replies, waiting
    "tests/e2e/test_views_over_http.py",  # 99
    "tests/e2e/test_money_over_http.py",  # 40: two shoes through purses and a faulty wallet, SIGKILL twice, 2 stores
    "tests/api/test_schemathesis.py",  # 71
    "tests/e2e/test_players_over_http.py",  # 67
    "tests/browser/test_desk_reading.py",  # 64: a played desk at three widths, nine pages each
    "tests/e2e/test_play_over_http.py",  # 59
    "tests/e2e/test_hidden_parts_over_http.py",  # 54: every value of every hidden part, four readers, six tables
    "tests/e2e/test_studio_table_over_http.py",  # 50: 500 bettors in a 15-second window, SQLite and PostgreSQL
    "tests/service/test_audit.py",  # 49
    "tests/e2e/test_corrections_over_http.py",  # 41: voids on each game over HTTP, on SQLite and PostgreSQL
    "tests/api/test_what_catches_what.py",  # 39
    "tests/service/test_combining.py",  # 37: batches of one table, two processes
    "tests/e2e/test_streams_over_http.py",  # 36
    "tests/e2e/test_store_faults.py",  # 27: four faults of the SQLite file under load, a server started and stopped
    "tests/e2e/test_slow_clients.py",  # 25
    "tests/browser/test_browser_verification.py",  # 24
    "tests/browser/test_desk_a11y.py",  # 45 (2026-12-02, quiet)
    "tests/browser/test_desk.py",  # 38 (2026-12-02, quiet)
    "tests/e2e/test_startup_refusals.py",  # 23 (2026-12-02, quiet)
    "tests/service/test_audit_from_log.py",  # 19 (2026-12-02, quiet)
    "tests/service/test_tables_service.py",  # 19 (2026-12-02, quiet)
    "tests/e2e/test_outage.py",  # 14
    "tests/service/test_damaged_log.py",  # 14 (2026-12-02, quiet)
    "tests/service/test_punto_banco_service.py",  # 13
    "tests/service/test_indexing_lease.py",  # 12 (2026-12-02, quiet)
    "tests/service/test_streams.py",  # 12 (2026-12-02, quiet)
    "tests/unit/test_punto_banco_table.py",  # 11 (2026-12-02, quiet)
    "tests/e2e/test_signed_heads.py",  # 11 (2026-12-02, quiet)
]


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    rank = {path: i for i, path in enumerate(LONGEST_FIRST)}
    items.sort(key=lambda item: rank.get(item.nodeid.split("::")[0], len(rank)))  # stable: the rest keep their order
