"""docs/api.md's shell blocks run as written, by bash, against the real server: every curl of the page succeeds
on a punto banco table like the page's own (opened, shuffled, cut and one coup played), and a live stream's curl,
which never ends by itself, is cut after a few seconds having received events."""

from __future__ import annotations

import os
import shutil
import subprocess

import pytest
import requests

from tests.e2e.servers import ROOT, running_server
from tests.e2e.test_readme_quickstart import SHELL_BLOCK, curl_calls

pytestmark = pytest.mark.e2e

# Every curl reports its exit status; a live stream (curl -N) is cut after STREAM seconds, which curl reports as
# exit 28 (the time ran out), a success for a stream that received its events.
STREAM = 3
PRELUDE = f"""set -euo pipefail
shopt -s inherit_errexit
curl() {{
  local status=0
  if [[ " $* " == *" -N "* ]]; then
    command curl --max-time {STREAM} "$@" || status=$?
    [ "$status" = 28 ] && status=0
  else
    command curl "$@" || status=$?
  fi
  echo "$status" >> "$CURL_LOG"; return "$status"
}}
"""


def page_blocks() -> list[str]:
    return SHELL_BLOCK.findall((ROOT / "docs" / "api.md").read_text(encoding="utf-8"))


def played_table(base: str) -> str:
    """A punto banco table as the page's examples use it: marta the croupier, anna and boris staking; the shoe
    shuffled and cut at 200, and one coup played."""
    table = requests.post(f"{base}/tables", json={"game": "punto-banco", "players": ["marta", "anna", "boris"],
                                                  "croupier": "marta"}, timeout=10).json()["table_id"]
    for body in ({"command": "shuffle", "player": "marta"}, {"command": "cut", "player": "anna", "position": 200},
                 {"command": "place_stake", "player": "boris", "spot": "player", "amount": 50},
                 {"command": "close_stakes", "player": "marta"}, {"command": "deal", "player": "marta"}):
        requests.post(f"{base}/tables/{table}/commands", json=body, timeout=10).raise_for_status()
    return table


@pytest.mark.skipif(shutil.which("curl") is None, reason="curl is not installed, and the page's examples are curl")
def test_every_shell_block_of_the_api_page_runs_as_written_against_a_real_server(tmp_path):
    blocks = page_blocks()
    assert len(blocks) >= 5 and all(curl_calls(block) for block in blocks)
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "page.sqlite"),
           "ZAMETANO_DATA_DIR": str(tmp_path / "data")}
    with running_server(env, tmp_path / "server.log") as base:
        for number, block in enumerate(blocks, 1):
            log = tmp_path / f"curl-{number}.log"
            done = subprocess.run(
                ["bash", "-c", PRELUDE + block], cwd=tmp_path, capture_output=True, text=True, timeout=60,
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), "BASE": base, "TABLE": played_table(base),
                     "CURL_LOG": str(log)},
            )
            report = f"block {number}:\n{block}\nexit {done.returncode}\nstdout:\n{done.stdout[-2000:]}\nstderr:\n{done.stderr}"
            assert done.returncode == 0, report
            assert log.read_text().split() == ["0"] * len(curl_calls(block)), report
            assert done.stdout.strip() or " > " in block, report  # each block shows something, or writes its file
    assert (tmp_path / "table.ndjson").read_text().count("\n") > 10  # the export's file, written where it was run
