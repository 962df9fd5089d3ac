"""The suite's own schedule: the files that hold a test process longest are the first the processes are given,
as ./scripts/test runs them (tests/conftest.py LONGEST_FIRST), so that none of them ends alone at the end."""

from __future__ import annotations

import shlex
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from xdist.scheduler import LoadFileScheduling

from tests.conftest import LONGEST_FIRST, pytest_collection_modifyitems

ROOT = Path(__file__).resolve().parents[2]


def scripts_test_arguments() -> list[str]:
    """What ./scripts/test hands pytest, besides the caller's own arguments."""
    line = next(line for line in (ROOT / "scripts" / "test").read_text().splitlines() if line.startswith("exec "))
    words = shlex.split(line)
    # The number of processes is worked out from the cores; the schedule's order does not depend on it.
    return [{"$workers": "2"}.get(word, word) for word in words[words.index("pytest") + 1:] if word != "$@"]


class Process:
    """A test process as the scheduler sees it: what it was sent."""

    def __init__(self, n: int) -> None:
        self.gateway = SimpleNamespace(id=f"gw{n}")
        self.sent: list[list[int]] = []
        self.shutting_down = False

    def send_runtest_some(self, indexes: list[int]) -> None:
        self.sent.append(indexes)

    def shutdown(self) -> None:
        self.shutting_down = True


def first_files(collection: list[str], options: Any, processes: int = 2) -> list[str]:
    """The first file each process is given by pytest-xdist's scheduler of whole files."""
    config = SimpleNamespace(option=options, getvalue=lambda name: {"tx": [f"{processes}*popen"]}[name])
    scheduler = LoadFileScheduling(config)  # type: ignore[arg-type]
    workers = [Process(n) for n in range(processes)]
    for worker in workers:
        scheduler.add_node(worker)  # type: ignore[arg-type]
    for worker in workers:
        scheduler.add_node_collection(worker, collection)  # type: ignore[arg-type]
    scheduler.schedule()
    return [collection[worker.sent[0][0]].split("::")[0] for worker in workers]


def test_under_scripts_test_each_process_starts_with_the_longest_files_however_few_tests_they_hold(pytestconfig):
    # Many short tests in pytest's own order first, then two long files of one test each, as collected.
    items = [SimpleNamespace(nodeid=f"tests/unit/test_many_{n}.py::test_{i}") for n in range(3) for i in range(40)]
    items += [SimpleNamespace(nodeid=f"{path}::test_long") for path in reversed(LONGEST_FIRST[:2])]
    pytest_collection_modifyitems(items)  # type: ignore[arg-type]
    collection = [item.nodeid for item in items]
    options = pytestconfig._parser.parse_known_args(scripts_test_arguments())

    assert first_files(collection, options) == LONGEST_FIRST[:2]
    # What xdist does by itself (files with the most tests first), which this order depends on turning off:
    assert LONGEST_FIRST[0] not in first_files(collection, pytestconfig._parser.parse_known_args(["-n", "2"]))


def test_every_file_named_to_start_first_exists():
    missing = [path for path in LONGEST_FIRST if not (ROOT / path).is_file()]
    assert not missing, f"LONGEST_FIRST names files that are gone: {missing}"
    assert len(set(LONGEST_FIRST)) == len(LONGEST_FIRST)

