"""The lock files: every dependency pinned within pyproject's ranges, nothing they need left unpinned, the
running venv on exactly their versions, and scripts/_venv.sh following them."""

from __future__ import annotations

import importlib.metadata
import os
import subprocess
import tomllib
from pathlib import Path

import pytest
from packaging.markers import default_environment
from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]
PYPROJECT = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
RUNTIME = [Requirement(text) for text in PYPROJECT["dependencies"]]
DEV = [Requirement(text) for text in PYPROJECT["optional-dependencies"]["dev"]]


def read_lock(path: Path) -> dict[str, str]:
    """{canonical name: version} of a lock file's name==version lines (comments and -r lines skipped)."""
    pins = {}
    for line in path.read_text().splitlines():
        line = line.split("#", 1)[0].strip()
        if not line or line.startswith("-r "):
            continue
        name, sep, version = line.partition("==")
        assert sep and version, f"{path.name}: {line!r} is not name==version"
        pins[canonicalize_name(name)] = version
    return pins


RUNTIME_LOCK = read_lock(ROOT / "requirements.lock")
DEV_LOCK = read_lock(ROOT / "requirements-dev.lock")
EVERY_PIN = {**RUNTIME_LOCK, **DEV_LOCK}
STALE = "re-run ./scripts/lock"


@pytest.mark.parametrize("requirement", RUNTIME, ids=str)
def test_every_runtime_dependency_is_pinned_in_requirements_lock_within_pyprojects_range(
    requirement: Requirement,
) -> None:
    version = RUNTIME_LOCK.get(canonicalize_name(requirement.name))
    assert version is not None, f"{requirement.name} is not in requirements.lock: {STALE}"
    assert requirement.specifier.contains(version, prereleases=True), f"{requirement} but locked {version}: {STALE}"


@pytest.mark.parametrize("requirement", DEV, ids=str)
def test_every_dev_dependency_is_pinned_in_a_lock_within_pyprojects_range(requirement: Requirement) -> None:
    version = EVERY_PIN.get(canonicalize_name(requirement.name))
    assert version is not None, f"{requirement.name} is not in requirements-dev.lock: {STALE}"
    assert requirement.specifier.contains(version, prereleases=True), f"{requirement} but locked {version}: {STALE}"


def test_the_dev_lock_builds_on_the_runtime_lock_and_pins_nothing_twice() -> None:
    lines = (ROOT / "requirements-dev.lock").read_text().splitlines()
    assert "-r requirements.lock" in lines
    assert not set(RUNTIME_LOCK) & set(DEV_LOCK)


def closure(requirements: list[Requirement]) -> dict[str, set[str]]:
    """Every distribution these requirements bring in on this Python, with the extras asked of it, read from
    the installed distributions' own metadata."""
    environment = default_environment()
    wanted: dict[str, set[str]] = {}
    todo = list(requirements)
    while todo:
        requirement = todo.pop()
        name = canonicalize_name(requirement.name)
        extras = set(requirement.extras)
        if name in wanted and extras <= wanted[name]:
            continue
        wanted.setdefault(name, set()).update(extras)
        for text in importlib.metadata.requires(name) or []:
            needed = Requirement(text)
            if needed.marker is None or any(needed.marker.evaluate({**environment, "extra": extra})
                                            for extra in ["", *wanted[name]]):
                todo.append(needed)
    return wanted


def test_everything_the_dependencies_need_on_this_python_is_pinned_too() -> None:
    runtime_needs = set(closure(RUNTIME)) - {"zametano"}
    every_need = set(closure(RUNTIME + DEV)) - {"zametano"}

    assert not runtime_needs - set(RUNTIME_LOCK), f"needed, not in requirements.lock: {STALE}"
    assert not every_need - set(EVERY_PIN), f"needed, not in the locks: {STALE}"


@pytest.mark.parametrize("name", sorted(EVERY_PIN))
def test_the_running_venv_has_the_locked_version(name: str) -> None:
    assert importlib.metadata.version(name) == EVERY_PIN[name], (
        f"{name} {importlib.metadata.version(name)} installed, {EVERY_PIN[name]} locked: ./scripts/test installs "
        "the lock again")


# --- scripts/_venv.sh ------------------------------------------------------------------------------------


def fake_root(tmp_path: Path) -> Path:
    """A project with scripts/_venv.sh, pyproject.toml, the two locks and a .venv whose python only writes its
    arguments to pip.log."""
    root = tmp_path / "project"
    (root / "scripts").mkdir(parents=True)
    (root / "scripts" / "_venv.sh").write_text((ROOT / "scripts" / "_venv.sh").read_text())
    (root / "pyproject.toml").write_text("[project]\nname = 'x'\n")
    (root / "requirements.lock").write_text("flask==3.0.0\n")
    (root / "requirements-dev.lock").write_text("-r requirements.lock\npytest==8.0.0\n")
    python = root / ".venv" / "bin" / "python"
    python.parent.mkdir(parents=True)
    python.write_text(f'#!/bin/sh\necho "$*" >> "{root}/pip.log"\n')
    python.chmod(0o755)
    return root


def ensure(root: Path, extras: str) -> list[str]:
    """The pip calls one ensure_venv makes (and forgets them)."""
    log = root / "pip.log"
    log.unlink(missing_ok=True)
    subprocess.run(["bash", "-c", f'source scripts/_venv.sh && ensure_venv "{extras}"'], cwd=root, check=True,
                   env={**os.environ}, capture_output=True)
    return log.read_text().splitlines() if log.exists() else []


def test_venv_sh_installs_the_lock_then_the_project_without_dependencies(tmp_path: Path) -> None:
    root = fake_root(tmp_path)

    calls = ensure(root, "[dev]")

    assert calls[-2:] == [f"-m pip install --quiet -r {root}/requirements-dev.lock",
                          f"-m pip install --quiet --no-deps -e {root}"]
    assert ensure(root, "")[-2:] == [f"-m pip install --quiet -r {root}/requirements.lock",
                                     f"-m pip install --quiet --no-deps -e {root}"]


def test_venv_sh_installs_again_only_when_a_lock_or_pyproject_changes(tmp_path: Path) -> None:
    root = fake_root(tmp_path)
    ensure(root, "[dev]")

    assert ensure(root, "[dev]") == []
    (root / "requirements.lock").write_text("flask==3.0.1\n")  # the dev lock reads it too
    assert f"-m pip install --quiet -r {root}/requirements-dev.lock" in ensure(root, "[dev]")
    (root / "requirements-dev.lock").write_text("-r requirements.lock\npytest==8.0.1\n")
    assert f"-m pip install --quiet -r {root}/requirements-dev.lock" in ensure(root, "[dev]")
    (root / "pyproject.toml").write_text("[project]\nname = 'y'\n")
    assert ensure(root, "[dev]") != []
    assert ensure(root, "[dev]") == []


# --- scripts/lock --------------------------------------------------------------------------------------


def test_scripts_lock_writes_the_runtime_pins_and_the_rest_of_the_dev_pins_apart(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    lock = load_script("lock", "zametano_lock")
    resolved = {  # what pip would install: with the dev extra, then the project alone held to those versions
        "dev": "Flask==3.1.3\npsycopg-binary==3.3.9\npytest==9.2.0\nPyYAML==6.0.4\n",
        "runtime": "Flask==3.1.3\npsycopg-binary==3.3.9\n",
    }
    asked: list[tuple[str, ...]] = []

    def installed(venv: Path, *requirement: str | Path) -> dict[str, str]:
        asked.append(tuple(map(str, requirement)))
        return lock.pins(resolved[venv.name])

    monkeypatch.setattr(lock, "installed", installed)
    monkeypatch.setattr(lock, "RUNTIME_LOCK", tmp_path / "requirements.lock")
    monkeypatch.setattr(lock, "DEV_LOCK", tmp_path / "requirements-dev.lock")

    assert lock.main() == 0

    assert asked[0] == (f"{lock.ROOT}[dev]",) and asked[1][0] == "--constraint" and asked[1][2] == str(lock.ROOT)
    assert read_lock(tmp_path / "requirements.lock") == {"flask": "3.1.3", "psycopg-binary": "3.3.9"}
    assert read_lock(tmp_path / "requirements-dev.lock") == {"pytest": "9.2.0", "pyyaml": "6.0.4"}
    assert "-r requirements.lock" in (tmp_path / "requirements-dev.lock").read_text().splitlines()
