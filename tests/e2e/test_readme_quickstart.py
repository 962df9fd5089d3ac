"""The README's quickstart runs as written: its shell blocks, run by bash against the real server on SQLite,
every curl succeeding."""

from __future__ import annotations

import os
import json
import re
import shutil
import subprocess

import pytest

from tests.e2e.servers import ROOT, running_server

pytestmark = pytest.mark.e2e

SHELL_BLOCK = re.compile(r"^```sh\n(.*?)^```$", re.M | re.S)
CURL = re.compile(r"(?<![\w-])curl\s")
# Every curl of the block reports its exit status, so a curl that failed cannot hide behind a later success.
PRELUDE = """set -euo pipefail
shopt -s inherit_errexit
curl() { local status=0; command curl "$@" || status=$?; echo "$status" >> "$CURL_LOG"; return "$status"; }
"""


def quickstart_blocks() -> list[str]:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    start = readme.index("## Quickstart\n")
    end = readme.index("\n## ", start + 1)
    return SHELL_BLOCK.findall(readme[start:end])


def curl_calls(script: str) -> list[str]:
    """The line of every curl the script runs (a line twice when it runs two)."""
    lines = [line for line in script.splitlines() if not line.lstrip().startswith("#")]
    return [line for line in lines for _ in CURL.findall(line)]


def test_every_curl_of_the_quickstart_fails_loudly_on_an_http_error():
    calls = curl_calls("\n".join(quickstart_blocks()))
    assert len(calls) >= 15, calls  # open, six commands, state, rounds, audit, replays, export, verify, head, keys
    quiet = [line for line in calls if not re.search(r"\bcurl -fsS\b", line)]
    assert not quiet, quiet


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed, and the quickstart is curl")
@pytest.mark.skipif(shutil.which("python3") is None, reason="the quickstart reads JSON with python3")
def test_the_readme_quickstart_runs_against_a_real_server(tmp_path):
    script = "\n".join(quickstart_blocks())
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "quickstart.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path / "data")}
    log = tmp_path / "curl.log"
    with running_server(env, tmp_path / "server.log") as base:
        done = subprocess.run(
            ["bash", "-c", PRELUDE + script], cwd=tmp_path,
            env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "BASE": base, "CURL_LOG": str(log)},
            capture_output=True, text=True, timeout=120,
        )
    report = f"exit {done.returncode}\nstdout:\n{done.stdout}\nstderr:\n{done.stderr}"
    assert done.returncode == 0, report
    statuses = log.read_text().split()
    assert statuses == ["0"] * len(curl_calls(script)), report

    out = done.stdout
    assert "{'chain': True, 'cards': None, 'rules': True, 'money': True, 'read_model': True} []" in out, report  # round 1's audit
    assert re.search(r"\{'version': 3, 'timestamp': '[^']+'\} cut", out), report  # replayed to version 3
    assert "deal {'anna': {'banker': 100}, 'boris': {'player': 50}}" in out, report  # to when the stakes closed
    exported = list(tmp_path.glob("table-*.ndjson"))
    # the whole log: as many lines as the table's version (a tie pays nothing, so a coup's length varies)
    head = json.loads(next(line for line in out.splitlines() if line.startswith('{"table_id"')))
    lines = exported[0].read_text().splitlines() if len(exported) == 1 else []
    assert len(exported) == 1 and [json.loads(line)["version"] for line in lines] == list(range(1, head["version"] + 1)), report
    assert "True {'events':" in out, report  # verify: ok, then the chain's report
