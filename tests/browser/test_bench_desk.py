"""scripts/bench-desk measures a desk page in a real browser against the real server: a first visit moves the
desk's files, a repeat visit finds them in the browser's cache and moves far less, and both show the state."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.helpers import SCRIPTS, load_script

pytestmark = pytest.mark.e2e


@pytest.fixture
def bench(monkeypatch: pytest.MonkeyPatch) -> Any:
    monkeypatch.syspath_prepend(str(SCRIPTS))  # it imports _bench and bench_http beside it
    return load_script("bench_desk.py", "zametano_bench_desk")


def measured(out: str) -> dict[str, str]:
    """The printed table's medians, by measure."""
    return {m.group(1): m.group(2) for m in re.finditer(r"^\| ([a-z :]+) \| ([\d,.]+)(?: KB| ms)? \|", out, re.M)}


def test_a_repeat_visit_moves_far_less_than_a_first_and_both_show_the_state(chromium_path, tmp_path: Path) -> None:
    docs = tmp_path / "benchmarks.md"
    # A process of its own, as the command runs: this one may already drive a browser (the session's).
    done = subprocess.run([sys.executable, str(SCRIPTS / "bench_desk.py"), "--rounds", "1", "--visits", "1",
                           "--chromium", chromium_path, "--output", str(docs)],
                          capture_output=True, text=True, timeout=240)
    out, err = done.stdout, done.stderr

    assert done.returncode == 0, out + err
    found = measured(out)
    first, repeat = (float(found[f"{kind} visit: bytes moved"].replace(",", "")) for kind in ("first", "repeat"))
    assert first > 2 * repeat > 0  # the desk's files come back as 304s, with no body
    assert int(found["first visit: requests"]) >= 5 and int(found["repeat visit: requests"]) >= 5
    assert float(found["first visit: time to the state shown"].replace(",", "")) > 0
    assert "round 1/1" in err
    assert docs.read_text().startswith("# Benchmarks\n\n## The desk in a browser (bench-desk)\n")


def test_no_round_or_visit_is_refused_with_what_is_allowed(bench, capsys) -> None:
    with pytest.raises(SystemExit) as exited:
        bench.main(["--visits", "0"])
    assert exited.value.code == 2
    assert "argument --visits: must be a whole number of 1 or more, not '0'" in capsys.readouterr().err
