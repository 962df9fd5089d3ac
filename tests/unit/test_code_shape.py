"""The code keeps a shape a reviewer can hold in mind: no function of the domain or the service runs past
about fifty lines (its docstring not counted: documentation is welcome), no code of the domain, the service
or the API goes unused, and the audits read the service only through its small public interface."""

from __future__ import annotations

import ast
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
LONGEST = 50


def long_functions(package: str) -> list[str]:
    """Every function (methods and nested ones too) of the package longer than LONGEST lines."""
    found = []
    for path in sorted((ROOT / package).rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                continue
            length = node.end_lineno - node.lineno + 1  # type: ignore[operator]
            if ast.get_docstring(node, clean=False) is not None:
                first = node.body[0]
                length -= first.end_lineno - first.lineno + 1  # type: ignore[operator]
            if length > LONGEST:
                found.append(f"{path.relative_to(ROOT)}:{node.lineno} {node.name}: {length} lines")
    return found


def test_the_shape_check_finds_a_long_function(tmp_path, monkeypatch):
    package = tmp_path / "pkg"
    package.mkdir()
    body = "\n".join(f"    x{i} = {i}" for i in range(LONGEST + 1))
    (package / "m.py").write_text(f'def short():\n    """Doc."""\n    return 1\n\n\ndef long():\n{body}\n')
    monkeypatch.setattr(sys.modules[__name__], "ROOT", tmp_path)
    assert [line.split(" ")[1] for line in long_functions("pkg")] == ["long:"]


def test_no_function_of_the_domain_is_longer_than_fifty_lines():
    assert long_functions("domain") == []


def test_no_function_of_the_service_is_longer_than_fifty_lines():
    assert long_functions("service") == []


def unused_code() -> list[str]:
    """vulture's findings in domain/, service/ and api/, as configured in pyproject.toml ([tool.vulture]).
    The fields of api/schemas.py are left out: marshmallow reads every field a schema declares."""
    run = subprocess.run([sys.executable, "-m", "vulture"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode in (0, 3), run.stderr  # 3: vulture found something
    return [
        line for line in run.stdout.splitlines()
        if line.startswith(("domain/", "service/", "api/"))
        and not (line.startswith("api/schemas.py:") and "unused variable" in line)
    ]


def test_no_code_of_the_domain_the_service_or_the_api_is_unused():
    assert unused_code() == []


def test_the_audits_use_only_the_public_table_history():
    """service/audit.py reads a table through TableHistory (service/history.py), and nothing outside the
    service's own class touches its private parts."""
    from service.history import TableHistory

    audit = (ROOT / "service" / "audit.py").read_text(encoding="utf-8")
    used = set(re.findall(r"\bhistory\.(\w+)", audit))
    assert used and used <= {name for name in vars(TableHistory) if not name.startswith("_")}
    outside = [path for package in ("api", "service", "scripts") for path in sorted((ROOT / package).rglob("*"))
               if path.is_file() and path.suffix in ("", ".py") and path.name != "application.py"]
    private = re.compile(r"\b(service|history|app)\(?\)?\._[a-z]")
    assert [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in outside for m in private.finditer(p.read_text())] == []
