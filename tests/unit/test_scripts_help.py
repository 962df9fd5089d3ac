"""Every script in scripts/ answers --help with its usage and does nothing else: no relocking, no install,
no server, no file written."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
SCRIPTS = sorted(p.name for p in (ROOT / "scripts").iterdir()
                 if p.is_file() and os.access(p, os.X_OK) and not p.name.startswith("_") and p.suffix != ".py")


def snapshot() -> dict[str, float]:
    """What a script that acted would have changed: the tracked and untracked files' times, and the venv's stamps."""
    listed = subprocess.run(["git", "ls-files", "--cached", "--others", "--exclude-standard"], cwd=ROOT,
                            capture_output=True, text=True, check=True).stdout.split()
    paths = [ROOT / name for name in listed] + list((ROOT / ".venv").glob(".installed*"))
    return {str(path): path.stat().st_mtime for path in paths if path.exists()}


def test_every_script_is_listed():
    assert {"run", "test", "lock", "demo", "audit", "verify-shoe", "bench-http"} <= set(SCRIPTS)


@pytest.mark.parametrize(("script", "flag"), [(script, "--help") for script in SCRIPTS] + [("lock", "-h"), ("run", "-h")])
def test_a_script_answers_help_with_its_usage_and_does_nothing_else(script, flag):
    before = snapshot()
    done = subprocess.run([str(ROOT / "scripts" / script), flag], cwd=ROOT, capture_output=True, text=True,
                          timeout=120, stdin=subprocess.DEVNULL)
    assert done.returncode == 0, (script, done.stderr)
    assert "usage" in done.stdout.lower() or "./scripts/" in done.stdout, (script, done.stdout)
    assert snapshot() == before, script


@pytest.mark.parametrize("script", ["run", "test", "bench-http"])
def test_without_a_venv_ready_a_script_answers_help_from_its_header_and_makes_none(tmp_path, script):
    copy = tmp_path / "checkout"
    shutil.copytree(ROOT / "scripts", copy / "scripts")
    for name in ("pyproject.toml", "requirements.lock", "requirements-dev.lock"):
        shutil.copy(ROOT / name, copy / name)
    done = subprocess.run([str(copy / "scripts" / script), "--help"], capture_output=True, text=True, timeout=60,
                          stdin=subprocess.DEVNULL)
    assert done.returncode == 0 and f"./scripts/{script}" in done.stdout, done
    assert not (copy / ".venv").exists() and "Creating .venv" not in done.stderr


def test_lock_refuses_arguments_it_does_not_take_in_one_line():
    done = subprocess.run([str(ROOT / "scripts" / "lock"), "--bogus"], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and done.stderr.count("\n") == 1 and "--help" in done.stderr
