"""docker-compose and .env.example set only variables the service really reads."""

from __future__ import annotations

import re
import subprocess
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import eventsourcing
import pytest
import yaml

from service.config import ALL_VARIABLES, LIBRARY_VARIABLES, OWN_VARIABLES, SERVER_VARIABLES

ROOT = Path(__file__).resolve().parents[2]
COMPOSE = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
# ${NAME}, ${NAME:-default}, ${NAME:?message}: what docker compose fills in from the environment (or .env)
INTERPOLATED = re.compile(r"\$\{([A-Z][A-Z0-9_]*)(?::?([-?])([^}]*))?\}")
LIBRARY_SOURCE = "\n".join(p.read_text() for p in Path(eventsourcing.__file__).parent.glob("*.py"))
OUR_SOURCE = "\n".join(p.read_text() for p in [ROOT / "service/config.py", ROOT / "api/server.py", ROOT / "api/gunicorn_conf.py"])


def test_every_variable_docker_compose_gives_the_service_is_one_it_reads():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    env = compose["services"]["zametano"]["environment"]
    assert env["PERSISTENCE_MODULE"] == "eventsourcing.postgres"
    unknown = sorted(set(env) - set(ALL_VARIABLES))
    assert not unknown, f"docker-compose sets variables the service never reads: {unknown}"


def test_every_variable_in_env_example_is_one_the_service_or_docker_compose_reads():
    names = set(re.findall(r"^#?\s*([A-Z][A-Z0-9_]+)=", (ROOT / ".env.example").read_text(), re.M))
    assert names == set(ALL_VARIABLES) | compose_only_variables()


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


def test_web_threads_chooses_the_threaded_worker_with_deadlines_and_keep_alive_and_one_thread_gunicorns_sync_worker():
    from api.server import web_threads, worker_settings

    assert worker_settings(web_threads({"WEB_THREADS": "8"}), 0, 300) == {
        "worker_class": "api.edge.Worker", "threads": 8, "keepalive": 5, "worker_connections": 300}
    assert worker_settings(web_threads({"WEB_THREADS": "1"}))["worker_class"] == "sync"
    assert web_threads({}) == web_threads({"WEB_THREADS": ""}) >= 2


def test_threaded_workers_get_a_thread_for_each_stream_they_may_hold_on_top_of_web_threads():
    from api.server import web_threads, worker_settings
    from service.config import max_streams

    env = {"WEB_THREADS": "4", "ZAMETANO_MAX_STREAMS": "32"}
    assert worker_settings(web_threads(env), max_streams(env))["threads"] == 4 + 32
    assert worker_settings(web_threads({}), max_streams({}))["threads"] == web_threads({}) + 32  # the defaults
    assert worker_settings(1, 32) == {"worker_class": "sync", "threads": 1}  # which refuses streams instead


def test_gunicorn_conf_gives_the_same_threads_as_the_server(monkeypatch):
    import importlib

    monkeypatch.setenv("WEB_THREADS", "3")
    monkeypatch.setenv("ZAMETANO_MAX_STREAMS", "5")
    monkeypatch.setenv("ZAMETANO_MAX_CONNECTIONS", "200")
    import api.gunicorn_conf as conf

    conf = importlib.reload(conf)
    assert (conf.worker_class, conf.threads, conf.worker_connections) == ("api.edge.Worker", 8, 200)
    assert callable(conf.post_worker_init)  # the hook that ends a stopping worker's streams


@pytest.mark.parametrize(("name", "value", "allowed"), [
    ("ZAMETANO_MAX_STREAMS", "-1", "from 0 (none) to 10000"), ("ZAMETANO_MAX_STREAMS", "many", "from 0 (none) to 10000"),
    ("ZAMETANO_MAX_STREAMS", "10001", "from 0 (none) to 10000"), ("ZAMETANO_STREAM_HEARTBEAT", "0", "from 0.1 to 3600"),
    ("ZAMETANO_STREAM_HEARTBEAT", "nan", "from 0.1 to 3600"), ("ZAMETANO_STREAM_HEARTBEAT", "soon", "from 0.1 to 3600"),
])
def test_stream_settings_out_of_range_are_refused_with_what_is_allowed(name, value, allowed):
    from service.config import ConfigError, load

    with pytest.raises(ConfigError, match=re.escape(allowed)) as refused:
        load({name: value})
    assert str(refused.value).startswith(name)


def test_stream_settings_default_to_32_streams_and_a_15_second_heartbeat():
    from service.config import load

    assert (load({}).max_streams, load({}).stream_heartbeat) == (32, 15.0)
    assert (load({"ZAMETANO_MAX_STREAMS": "0", "ZAMETANO_STREAM_HEARTBEAT": "0.5"}).max_streams,
            load({"ZAMETANO_STREAM_HEARTBEAT": "0.5"}).stream_heartbeat) == (0, 0.5)


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


# --- docker-compose.yml and the Dockerfile ----------------------------------------------------------------


def interpolate(text: str, env: dict[str, str]) -> str:
    """What docker compose makes of ``text`` in ``env``: ${NAME:-default} and ${NAME:?message} (unset or empty
    NAME stops with the message)."""
    def value(match: re.Match[str]) -> str:
        name, kind, rest = match.groups()
        if env.get(name):
            return env[name]
        if kind == "?":
            raise LookupError(f"{name}: {rest}")
        return rest if kind == "-" else ""
    return INTERPOLATED.sub(value, text)


def compose_only_variables() -> set[str]:
    text = (ROOT / "docker-compose.yml").read_text()
    return {m.group(1) for m in INTERPOLATED.finditer(text)} - set(ALL_VARIABLES)


def test_both_compose_services_restart_unless_stopped_and_have_a_healthcheck():
    for name, service in COMPOSE["services"].items():
        assert service.get("restart") == "unless-stopped", name
        assert service.get("healthcheck", {}).get("test"), name


def test_the_apps_healthcheck_asks_readyz_with_pythons_urllib_on_the_port_it_binds():
    test = COMPOSE["services"]["zametano"]["healthcheck"]["test"]
    port = COMPOSE["services"]["zametano"]["environment"]["BIND"].rsplit(":", 1)[1]

    assert test[:3] == ["CMD", "python", "-c"]  # the image has python, not curl
    assert "urllib.request" in test[3] and f"http://127.0.0.1:{port}/readyz" in test[3]


@pytest.mark.parametrize(("status", "healthy"), [(200, True), (503, False)])
def test_the_apps_healthcheck_fails_unless_readyz_answers_200(status, healthy):
    class Readyz(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            self.send_response(status if self.path == "/readyz" else 404)
            self.end_headers()

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Readyz)
    thread = Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        code = COMPOSE["services"]["zametano"]["healthcheck"]["test"][3]
        code = code.replace("127.0.0.1:8000", f"127.0.0.1:{httpd.server_address[1]}")
        result = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=30)
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()
    assert (result.returncode == 0) is healthy, result.stderr


def test_the_database_password_comes_from_the_environment_for_both_services_and_is_never_written_in_the_file():
    for name in ("postgres", "zametano"):
        given = COMPOSE["services"][name]["environment"]["POSTGRES_PASSWORD"]
        assert re.fullmatch(r"\$\{POSTGRES_PASSWORD:\?[^}]+\}", given), (name, given)
        with pytest.raises(LookupError, match="POSTGRES_PASSWORD"):
            interpolate(given, {})
        assert interpolate(given, {"POSTGRES_PASSWORD": "s3cret"}) == "s3cret"
    assert "ZAMETANO_TOKENS:?" in COMPOSE["services"]["zametano"]["environment"]["ZAMETANO_TOKENS"]


def test_the_apps_port_is_published_on_loopback_unless_zametano_publish_names_another_address():
    (published,) = COMPOSE["services"]["zametano"]["ports"]

    assert interpolate(published, {}) == "127.0.0.1:8000:8000"
    assert interpolate(published, {"ZAMETANO_PUBLISH": "0.0.0.0"}) == "0.0.0.0:8000:8000"
    assert "ports" not in COMPOSE["services"]["postgres"]  # the database is reached only by the service


def test_every_variable_docker_compose_reads_is_in_env_example_and_the_readme():
    example = (ROOT / ".env.example").read_text()
    readme = (ROOT / "README.md").read_text()
    text = (ROOT / "docker-compose.yml").read_text()
    for name in {m.group(1) for m in INTERPOLATED.finditer(text)}:
        assert re.search(rf"^#?\s*{name}=", example, re.M), name
        assert f"`{name}`" in readme, name


def test_the_image_installs_the_lock_then_the_project_without_dependencies_and_runs_as_another_user():
    lines = [line.strip() for line in (ROOT / "Dockerfile").read_text().splitlines()]
    runs = [line for line in lines if line.startswith("RUN ")]

    assert "COPY requirements.lock ./" in lines
    assert runs[0] == "RUN pip install --no-cache-dir -r requirements.lock"
    assert runs[1].startswith("RUN pip install --no-cache-dir --no-deps . ")
    assert not any(re.search(r"pip install (?!.*(-r requirements\.lock|--no-deps))", run) for run in runs), runs
    users = [line.split()[1] for line in lines if line.startswith("USER ")]
    assert users and users[-1] not in ("root", "0"), users
    assert lines.index(f"USER {users[-1]}") < next(i for i, line in enumerate(lines) if line.startswith("CMD "))
