"""A server that cannot start says why in one line, its last on stderr, and exits with 2 within seconds:
through `python -m api.server` and through gunicorn with api/gunicorn_conf.py (docker-compose's way)."""

from __future__ import annotations

import socket
import subprocess
import sys
import time

import pytest

from tests.conftest import PG
from tests.e2e.servers import ROOT, free_port, server_env, stop

pytestmark = pytest.mark.e2e
EXIT_REFUSED = 2
# Far below the 31 s a missing database used to take: the start fails at its first connection attempt.
WITHIN = 10.0
POSTGRES = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": PG["host"], "POSTGRES_PORT": PG["port"],
            "POSTGRES_USER": PG["user"], "POSTGRES_DBNAME": PG["dbname"]}


def start(how: str, env: dict[str, str], args: tuple[str, ...] = ()) -> tuple[int, list[str], float]:
    """Starts a server that must refuse (on the port ``env`` names as PORT, else a free one); its exit code,
    its stderr lines and how long it took. Whatever happens, nothing of it is left running."""
    port = int(env.get("PORT") or free_port())
    if how == "api.server":
        command = [sys.executable, "-m", "api.server", "--port", str(port), *args]
    else:
        command = [sys.executable, "-m", "gunicorn", "-c", "python:api.gunicorn_conf", "api.app:create_app()"]
        env = {**env, "BIND": f"127.0.0.1:{port}"}
    began = time.monotonic()
    process = subprocess.Popen(command, cwd=ROOT, env=server_env(env), stdout=subprocess.DEVNULL,
                               stderr=subprocess.PIPE, start_new_session=True)
    try:
        _, err = process.communicate(timeout=60)
    except subprocess.TimeoutExpired:
        err = b"(still running: it served instead of refusing)"
    finally:
        took = time.monotonic() - began
        stop(process)
        if process.stderr:
            process.stderr.close()
    return process.returncode, err.decode(errors="replace").splitlines(), took


def case_missing_database(tmp_path, request):
    return {**POSTGRES, "POSTGRES_DBNAME": "zametano_no_such_db"}, (
        f'error: Cannot connect to PostgreSQL {PG["host"]}:{PG["port"]}/zametano_no_such_db as user {PG["user"]}: '
        'database "zametano_no_such_db" does not exist')


def case_unreachable_port(tmp_path, request):
    port = free_port()  # nothing listens there
    return {**POSTGRES, "POSTGRES_PORT": str(port)}, (
        f'error: Cannot connect to PostgreSQL {PG["host"]}:{port}/{PG["dbname"]} as user {PG["user"]}: Connection refused')


def case_silent_server(tmp_path, request):
    """A host that takes the connection and never answers (a firewall that drops, a hung server): the wait
    is the connect timeout, once."""
    silent = socket.socket()
    request.addfinalizer(silent.close)
    silent.bind(("127.0.0.1", 0))
    silent.listen(16)  # the kernel completes the handshake; nobody ever reads
    port = silent.getsockname()[1]
    return {**POSTGRES, "POSTGRES_PORT": str(port), "POSTGRES_CONNECT_TIMEOUT": "3"}, (
        f'error: Cannot connect to PostgreSQL {PG["host"]}:{port}/{PG["dbname"]} as user {PG["user"]}: '
        "connection timeout expired")


def case_missing_dbname(tmp_path, request):
    env = {k: v for k, v in POSTGRES.items() if k != "POSTGRES_DBNAME"}
    return env, "error: PERSISTENCE_MODULE=eventsourcing.postgres needs POSTGRES_DBNAME"


def case_short_module_name(tmp_path, request):
    return {**POSTGRES, "PERSISTENCE_MODULE": "postgres"}, (
        "error: PERSISTENCE_MODULE is one of eventsourcing.sqlite, eventsourcing.postgres, eventsourcing.popo, "
        "not 'postgres'")


def case_data_dir_cannot_be_made(tmp_path, request):
    (tmp_path / "a-file").write_text("not a folder")
    where = tmp_path / "a-file" / "data"
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "ZAMETANO_DATA_DIR": str(where)}, (
        f"error: ZAMETANO_DATA_DIR {where} cannot be created: Not a directory; name a folder this user may write")


def case_unreadable_signing_key(tmp_path, request):
    key = tmp_path / "signing-key.pem"
    key.mkdir()  # as root, permissions would not stop a read: a folder cannot be read as a file by anyone
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "s.sqlite"),
            "ZAMETANO_SIGNING_KEY_FILE": str(key)}, f"error: ZAMETANO_SIGNING_KEY_FILE {key} cannot be read: Is a directory"


def case_port_in_use(tmp_path, request):
    taken = socket.socket()
    request.addfinalizer(taken.close)
    taken.bind(("127.0.0.1", 0))
    taken.listen(1)
    port = taken.getsockname()[1]
    return {"PERSISTENCE_MODULE": "eventsourcing.popo", "PORT": str(port)}, (
        f"error: 127.0.0.1:{port} is already in use by another process; stop it or choose another --port (PORT).")


def case_web_concurrency_not_a_number(tmp_path, request):
    return {"PERSISTENCE_MODULE": "eventsourcing.popo", "WEB_CONCURRENCY": "four"}, (
        "error: WEB_CONCURRENCY is the number of worker processes, a whole number of 1 or more, not 'four'")


def case_read_timeout_not_a_number(tmp_path, request):
    return {"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_READ_TIMEOUT": "soon"}, (
        "error: ZAMETANO_READ_TIMEOUT is the seconds a client has to send a request's headers, and again its body, "
        "from 0.1 to 3600, not 'soon'")


def case_no_connections(tmp_path, request):
    return {"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_MAX_CONNECTIONS": "0"}, (
        "error: ZAMETANO_MAX_CONNECTIONS is the number of connections each worker holds at once, a whole number "
        "from 1 to 10000, not '0'")


def case_short_token(tmp_path, request):
    tokens = "auditor:" + "a" * 24 + ",operator:sh0rt-t0ken"
    return {"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_TOKENS": tokens}, (
        "error: ZAMETANO_TOKENS: the token of operator-1 (operator) has 11 characters; a token has at least 16")


CASES = {
    "a token shorter than 16 characters": case_short_token,
    "port in use": case_port_in_use,
    "WEB_CONCURRENCY not a number": case_web_concurrency_not_a_number,
    "ZAMETANO_READ_TIMEOUT not a number": case_read_timeout_not_a_number,
    "ZAMETANO_MAX_CONNECTIONS of 0": case_no_connections,
    "missing database": case_missing_database,
    "unreachable port": case_unreachable_port,
    "a server that never answers": case_silent_server,
    "missing POSTGRES_DBNAME": case_missing_dbname,
    "PERSISTENCE_MODULE=postgres": case_short_module_name,
    "data directory that cannot be made": case_data_dir_cannot_be_made,
    "unreadable signing key": case_unreadable_signing_key,
}


@pytest.mark.parametrize("how", ["api.server", "gunicorn -c api.gunicorn_conf"])
@pytest.mark.parametrize("case", list(CASES))
def test_a_server_that_cannot_start_says_why_in_one_line_and_exits_2_within_seconds(case, how, tmp_path, request):
    if case == "WEB_CONCURRENCY not a number" and how != "api.server":
        pytest.skip("gunicorn reads WEB_CONCURRENCY itself as it starts, before any configuration file, and stops "
                    "with its own traceback (docs/operations.md, 'Exit codes')")
    if case == "missing database":
        request.getfixturevalue("postgres_available")  # the server must answer for the database to be missing
    env, expected = CASES[case](tmp_path, request)
    env.setdefault("ZAMETANO_DATA_DIR", str(tmp_path / "data"))
    code, lines, took = start(how, env)
    assert code == EXIT_REFUSED, lines
    assert lines and lines[-1].startswith(expected), lines
    assert sum(line.startswith("error: ") for line in lines) == 1 and not any("Traceback" in line for line in lines), lines
    assert took < WITHIN, f"{took:.1f} s"


@pytest.mark.parametrize("workers", ["0", "-1", "two", "1.5", ""])
def test_a_worker_count_that_is_not_a_positive_whole_number_is_refused_in_one_line(workers, tmp_path):
    env = {"PERSISTENCE_MODULE": "eventsourcing.popo", "ZAMETANO_DATA_DIR": str(tmp_path / "data")}
    code, lines, took = start("api.server", env, ("--workers", workers))
    assert code == EXIT_REFUSED, lines
    assert lines == [f"error: --workers is the number of worker processes, a whole number of 1 or more, not {workers!r}"]
    assert took < WITHIN, f"{took:.1f} s"
