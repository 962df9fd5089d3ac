"""The end-to-end fixture itself: it waits through any failure to ask, and stops every process it starts,
with its children, however the test ends."""

from __future__ import annotations

import sys

import pytest
import requests

from tests.e2e.servers import ServerNotReady, free_port, group_alive, running_server, wait_ready

# Stand-ins for a server, each with a child of its own in its process group, as gunicorn's workers are.
WITH_A_CHILD = "import subprocess, sys; subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(600)'])\n"
NEVER_READY = WITH_A_CHILD + "import time; time.sleep(600)"
DIES_AT_ONCE = WITH_A_CHILD + "sys.exit(3)"
ALWAYS_READY = WITH_A_CHILD + """
from http.server import BaseHTTPRequestHandler, HTTPServer
class Ok(BaseHTTPRequestHandler):
    def do_GET(self):
        self.send_response(200)
        self.end_headers()
    def log_message(self, *args):
        pass
HTTPServer(("127.0.0.1", int(sys.argv[1])), Ok).serve_forever()
"""


class Running:
    returncode = None

    def poll(self):
        return None


class Ok:
    status_code = 200


def test_readiness_waits_through_timeouts_resets_and_refusals(tmp_path):
    failures = [requests.ReadTimeout("slow"), requests.ConnectionError("refused"), ConnectionResetError("reset"),
                requests.ConnectTimeout("slow to accept")]

    def get(url, timeout):
        if failures:
            raise failures.pop(0)
        return Ok()

    wait_ready("http://127.0.0.1:1", Running(), tmp_path / "log", timeout=60, get=get)
    assert not failures


@pytest.mark.parametrize("script,why", [(NEVER_READY, "not ready within"), (DIES_AT_ONCE, "exited with 3")])
def test_a_server_that_does_not_get_ready_is_stopped_with_its_whole_process_group(tmp_path, script, why):
    with pytest.raises(ServerNotReady, match=why) as failed:
        with running_server({}, tmp_path / "log", command=[sys.executable, "-c", script], ready_timeout=1):
            pass  # pragma: no cover - never ready
    assert not group_alive(failed.value.pid)


def test_a_failing_test_still_stops_the_server_with_its_whole_process_group(tmp_path):
    port = free_port()
    command = [sys.executable, "-c", ALWAYS_READY, str(port)]
    with pytest.raises(RuntimeError, match="the test failed"):
        with running_server({}, tmp_path / "log", port=port, command=command) as server:
            pgid = server.process.pid
            assert requests.get(server + "/readyz", timeout=10).status_code == 200
            raise RuntimeError("the test failed")
    assert not group_alive(pgid)
