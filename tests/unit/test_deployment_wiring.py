"""docker-compose and .env.example set only variables the service really reads."""

from __future__ import annotations

import re
from pathlib import Path

import eventsourcing
import pytest
import yaml

from service.config import ALL_VARIABLES, LIBRARY_VARIABLES, OWN_VARIABLES, SERVER_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
LIBRARY_SOURCE = "\n".join(p.read_text() for p in Path(eventsourcing.__file__).parent.glob("*.py"))
OUR_SOURCE = "\n".join(p.read_text() for p in [ROOT / "service/config.py", ROOT / "api/server.py", ROOT / "api/gunicorn_conf.py"])


def test_every_variable_docker_compose_gives_the_service_is_one_it_reads():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["zametano"]["environment"]
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    unknown = sorted(set(env) - set(ALL_VARIABLES))
    assert not unknown, f"docker-compose sets variables the service never reads: {unknown}"


def test_every_variable_in_env_example_is_one_the_service_reads():
    names = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert names == set(ALL_VARIABLES)


def test_the_library_really_reads_the_variables_listed_as_its_own():
    for name in LIBRARY_VARIABLES:
        assert f'"{name}"' in LIBRARY_SOURCE, name


def test_our_own_variables_are_read_by_our_code():
    for name in OWN_VARIABLES + SERVER_VARIABLES:
        assert f'"{name}"' in OUR_SOURCE, name


def test_the_readme_documents_every_variable():
    readme = (ROOT / "README.md").read_text()
    missing = [name for name in ALL_VARIABLES if f"`{name}`" not in readme]
    assert not missing, missing


def test_psycopg_runs_its_compiled_implementation():
    # The pure-Python implementation, which psycopg falls back to silently, costs about a fifth of a
    # command's CPU; pyproject's psycopg[binary] is what keeps it away.
    import psycopg

    assert psycopg.pq.__impl__ == "binary", psycopg.pq.__impl__


def test_web_threads_chooses_gunicorns_threaded_workers_with_keep_alive_and_one_thread_its_sync_worker():
    from api.server import web_threads, worker_settings

    assert worker_settings(web_threads({"WEB_THREADS": "8"})) == {"worker_class": "gthread", "threads": 8, "keepalive": 5}
    assert worker_settings(web_threads({"WEB_THREADS": "1"}))["worker_class"] == "sync"
    assert web_threads({}) == web_threads({"WEB_THREADS": ""}) >= 2


@pytest.mark.parametrize("value", ["0", "-2", "four", "2.5"])
def test_web_threads_that_are_not_a_positive_whole_number_are_refused_with_what_is_allowed(value):
    from api.server import web_threads
    from service.config import ConfigError

    with pytest.raises(ConfigError, match="WEB_THREADS must be"):
        web_threads({"WEB_THREADS": value})


@pytest.mark.parametrize(
    ("value", "on"), [(None, True), ("", True), ("y", True), ("on", True), ("n", False), ("off", False), ("0", False)]
)
def test_group_commit_is_on_unless_switched_off(value, on):
    from service.config import load

    env = {} if value is None else {"ZAMETANO_GROUP_COMMIT": value}
    assert load(env).group_commit is on


def test_a_group_commit_switch_that_is_neither_on_nor_off_is_refused_with_what_is_allowed():
    from service.config import ConfigError, load

    with pytest.raises(ConfigError, match=r"ZAMETANO_GROUP_COMMIT is on \(y, yes"):
        load({"ZAMETANO_GROUP_COMMIT": "maybe"})
