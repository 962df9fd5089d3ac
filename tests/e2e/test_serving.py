"""Serving that cannot be misconfigured: the exposure check reads the addresses gunicorn really binds, and
no worker outlives its master."""

from __future__ import annotations

import os
import signal
import subprocess
import sys

import pytest
import requests

from tests.e2e.servers import ROOT, free_port, running_server, server_env, stop, wait_group_gone

pytestmark = pytest.mark.e2e
GUNICORN = [sys.executable, "-m", "gunicorn", "-c", "python:api.gunicorn_conf"]
APP = "api.app:create_app()"


def run_to_exit(command: list[str], env: dict[str, str], timeout: float = 60) -> tuple[int, str]:
    """Runs a server command that must exit by itself; whatever happens, nothing of it is left running."""
    process = subprocess.Popen(
        command, cwd=ROOT, env=server_env(env), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    try:
        output, _ = process.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        output = b"(still running: it served instead of refusing)"
    finally:
        stop(process)
        if process.stdout:
            process.stdout.close()
    return process.returncode, output.decode(errors="replace")


@pytest.fixture
def sqlite_env(tmp_path):
    return {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "serving.sqlite")}


@pytest.mark.parametrize("how", ["gunicorn -b", "api.server --host"])
def test_without_tokens_a_public_address_is_refused_in_one_line_whatever_names_it(sqlite_env, how):
    port = free_port()
    if how == "gunicorn -b":  # BIND says loopback; the command line, which gunicorn obeys, does not
        env = {**sqlite_env, "BIND": f"127.0.0.1:{port}"}
        command = [*GUNICORN, "-b", f"0.0.0.0:{port}", APP]
    else:
        env = sqlite_env
        command = [sys.executable, "-m", "api.server", "--host", "0.0.0.0", "--port", str(port)]
    code, output = run_to_exit(command, env)
    assert code == 2, output
    refusals = [line for line in output.splitlines() if line.startswith("error: ")]
    assert refusals == [
        f"error: Refusing to listen on 0.0.0.0:{port} without tokens: set ZAMETANO_TOKENS (e.g. operator:<secret>) "
        "or listen on 127.0.0.1."
    ], output
    assert "Booting worker" not in output


def test_with_tokens_gunicorn_serves_on_a_public_address(sqlite_env, tmp_path):
    port = free_port()
    env = {**sqlite_env, "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e"}
    command = [*GUNICORN, "-b", f"0.0.0.0:{port}", APP]
    with running_server(env, tmp_path / "server.log", port=port, command=command) as server:
        assert requests.get(server + "/tables", timeout=10).status_code == 401
        assert requests.get(server + "/tables", headers={"Authorization": "Bearer op-secret-0f3a9c2e"}, timeout=10).status_code == 200


def test_after_the_master_is_killed_its_workers_go_and_a_new_server_binds_the_same_port(sqlite_env, tmp_path):
    with running_server(sqlite_env, tmp_path / "first.log") as first:
        os.kill(first.process.pid, signal.SIGKILL)
        first.process.wait()
        # the workers notice their master's death at once (without the hook: after half the worker timeout, 30 s)
        assert wait_group_gone(first.process.pid, 10), "workers outlived their master"
        with running_server(sqlite_env, tmp_path / "second.log", port=first.port) as second:
            assert requests.get(second + "/healthz", timeout=10).json() == {"status": "ok"}
