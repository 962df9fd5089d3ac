"""The code keeps a shape a reviewer can hold in mind: no function of the domain or the service runs past
about fifty lines (its docstring not counted: documentation is welcome), no code of the domain, the service
or the API goes unused, and the audits read the service only through its small public interface."""

from __future__ import annotations

import ast
import io
import re
import subprocess
import sys
import tokenize
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
    The fields of api/schemas.py and api/schemas_history.py are left out: marshmallow reads every field a schema
    declares."""
    run = subprocess.run([sys.executable, "-m", "vulture"], cwd=ROOT, capture_output=True, text=True, check=False)
    assert run.returncode in (0, 3), run.stderr  # 3: vulture found something
    return [
        line for line in run.stdout.splitlines()
        if line.startswith(("domain/", "service/", "api/"))
        and not (line.startswith(("api/schemas.py:", "api/schemas_history.py:")) and "unused variable" in line)
    ]


def test_no_code_of_the_domain_the_service_or_the_api_is_unused():
    assert unused_code() == []


def test_the_audits_use_only_the_public_table_history():
    """service/audit/ reads a table through TableHistory (service/history.py), and nothing outside the
    service's own class touches its private parts."""
    from service.history import TableHistory

    audit = "\n".join(path.read_text(encoding="utf-8") for path in sorted((ROOT / "service" / "audit").glob("*.py")))
    used = set(re.findall(r"\bhistory\.(\w+)", audit))
    assert used and used <= {name for name in vars(TableHistory) if not name.startswith("_")}
    outside = [path for package in ("api", "service", "scripts") for path in sorted((ROOT / package).rglob("*"))
               if path.is_file() and path.suffix in ("", ".py") and path.name != "application.py"]
    private = re.compile(r"\b(service|history|app)\(?\)?\._[a-z]")
    assert [f"{p.relative_to(ROOT)}: {m.group(0)}" for p in outside for m in private.finditer(p.read_text())] == []


# --- modules of one purpose ----------------------------------------------------------------------------

MOST_LINES = 400
PACKAGES = ("domain", "service", "api")


def _is_table_of_cases(value: ast.expr) -> bool:
    """A literal table: a dict, list, tuple or set display of constants, names and nested displays."""
    if isinstance(value, ast.Dict):
        return all(k is None or _is_table_of_cases(k) for k in value.keys) and all(map(_is_table_of_cases, value.values))
    if isinstance(value, (ast.List, ast.Tuple, ast.Set)):
        return all(map(_is_table_of_cases, value.elts))
    if isinstance(value, ast.UnaryOp):
        return _is_table_of_cases(value.operand)
    return isinstance(value, (ast.Constant, ast.Name, ast.Attribute))


def lines_of_code(source: str) -> int:
    """Lines holding code: not blank, not only a comment, not a docstring, and not inside a rule's literal
    table of cases (a module- or class-level assignment of a literal display spanning several lines)."""
    tree = ast.parse(source)
    skipped: set[int] = set()
    for node in ast.walk(tree):
        body = getattr(node, "body", None)
        if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and body:
            first = body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str):
                skipped.update(range(first.lineno, first.end_lineno + 1))  # type: ignore[operator]
        if isinstance(node, (ast.Module, ast.ClassDef)):
            for statement in node.body:
                value = getattr(statement, "value", None)
                if (isinstance(statement, (ast.Assign, ast.AnnAssign)) and value is not None
                        and statement.end_lineno > statement.lineno  # type: ignore[operator]
                        and isinstance(value, (ast.Dict, ast.List, ast.Tuple, ast.Set)) and _is_table_of_cases(value)):
                    skipped.update(range(statement.lineno, statement.end_lineno + 1))  # type: ignore[operator]
    code: set[int] = set()
    ignored = {tokenize.COMMENT, tokenize.NL, tokenize.NEWLINE, tokenize.INDENT, tokenize.DEDENT, tokenize.ENDMARKER}
    for token in tokenize.generate_tokens(io.StringIO(source).readline):
        if token.type not in ignored:
            code.update(range(token.start[0], token.end[0] + 1))
    return len(code - skipped)


def modules() -> list[Path]:
    return [path for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))]


def test_lines_of_code_leave_out_docstrings_comments_blank_lines_and_literal_tables():
    source = '"""Doc\\nmore."""\n\n# a comment\nTABLE = {\n    1: "a",\n    2: "b",\n}\nx = 1\n\n\ndef f():\n    """Doc."""\n    return [\n        x,\n    ]\n'
    assert lines_of_code(source) == 5  # x = 1, def f, return [, x, ]


def test_no_module_of_the_domain_the_service_or_the_api_is_past_400_lines_of_code():
    counts = {str(path.relative_to(ROOT)): lines_of_code(path.read_text(encoding="utf-8")) for path in modules()}
    assert {path: n for path, n in counts.items() if n > MOST_LINES} == {}


def purpose_line(source: str) -> str | None:
    """The module docstring's first line when it says the module's purpose in one line: a sentence ending
    there, followed by a blank line or the docstring's end; else None."""
    doc = ast.get_docstring(ast.parse(source), clean=False)
    if not doc:
        return None
    lines = doc.split("\n")
    first = lines[0].strip()
    if not first.endswith(".") or (len(lines) > 1 and lines[1].strip()):
        return None
    return first


def test_a_purpose_line_is_one_sentence_on_one_line():
    assert purpose_line('"""Deals cards.\n\nMore."""') == "Deals cards."
    assert purpose_line('"""Deals cards and\nshuffles."""') is None
    assert purpose_line("x = 1") is None


def test_every_module_opens_with_a_one_line_purpose():
    assert [str(path.relative_to(ROOT)) for path in modules() if purpose_line(path.read_text(encoding="utf-8")) is None] == []


# --- one seam for what a caller sees -------------------------------------------------------------------

# The domain's views of a table and of an event: only service/present.py turns them into what callers get.
VIEWS = {"public", "view", "deck_counts", "shown_event"}
SEAM = ROOT / "service" / "present.py"


def views_called(source: str) -> list[int]:
    """Lines that call a domain view (``x.public()``, ``x.view()``, ``x.deck_counts(...)``, a sight's
    ``x.shown_event(...)``) or read
    ``x.public_data``, or name the old ``event_dict``."""
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) and node.func.attr in VIEWS:
            found.append(node.lineno)
        elif isinstance(node, ast.Attribute) and node.attr == "public_data":
            found.append(node.lineno)
        elif isinstance(node, ast.Name) and node.id == "event_dict":
            found.append(node.lineno)
    return sorted(found)


def test_the_seam_check_finds_an_event_turned_into_a_dict_elsewhere():
    assert views_called("rows = [e.public() for e in events]\nstate = table.view()\nx = e.public_data\n") == [1, 2, 3]
    assert views_called("shown = self.seen.shown_event(public)\n") == [1]
    assert views_called("rows = self.index.view.list_tables()\n") == []


def test_only_the_present_module_turns_tables_and_events_into_what_a_caller_sees():
    outside = [path for package in ("service", "api") for path in sorted((ROOT / package).rglob("*.py")) if path != SEAM]
    found = {str(p.relative_to(ROOT)): lines for p in outside if (lines := views_called(p.read_text(encoding="utf-8")))}
    assert found == {}


# --- one game, one folder ------------------------------------------------------------------------------

def _game_words() -> set[str]:
    """Every game's name and the types of the events its own package defines (not the shared ones)."""
    import inspect

    from domain.events import TableEvent
    from domain.games import GAMES

    words = set(GAMES)
    for game in GAMES.values():
        package = game.table.__module__.rsplit(".", 1)[0]
        module = sys.modules[f"{package}.events"]
        words |= {name for name, value in vars(module).items()
                  if inspect.isclass(value) and issubclass(value, TableEvent) and value.__module__ == module.__name__}
    return words


# The generic mechanisms: what a game hides (the sight), how its stakes are rated and read (the decisions, a
# player's history), how a baccarat game's coups make its roads. Each game's part lives in its own folder and
# reaches them through domain/game.py.
GENERIC = ["domain/sight.py", "domain/table.py", "domain/game.py", "service/decisions.py",
           "service/readmodel/seats.py", "service/present.py", "domain/roads.py", "service/roads.py"]


def named_in_code(source: str) -> set[str]:
    """The strings and names a module's code uses (its docstrings and comments aside)."""
    tree = ast.parse(source)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef)) and node.body
                  and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    found: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings:
            found.add(node.value)
        elif isinstance(node, ast.Name):
            found.add(node.id)
        elif isinstance(node, ast.Attribute):
            found.add(node.attr)
    return found


def test_the_generic_mechanisms_name_no_game_and_no_games_event():
    words = _game_words()
    assert {"HandStood", "Stage2Began", "punto-banco"} <= words  # the check knows what it looks for
    assert named_in_code('"""HandStood."""\nif kind == "HandStood": pass\n') == {"kind", "HandStood"}
    found = {path: sorted(named_in_code((ROOT / path).read_text(encoding="utf-8")) & words) for path in GENERIC}
    assert {path: named for path, named in found.items() if named} == {}
