"""The documentation stands alone: it links only what a clone has, names only code that exists, covers every
command and every rule option of every game, and the checks it tells an auditor to run reproduce the
reference vectors."""

from __future__ import annotations

import hashlib
import importlib
import json
import re
import unicodedata
from pathlib import Path

import pytest
import yaml

from domain.games import GAMES

ROOT = Path(__file__).resolve().parents[2]
DOCS = ROOT / "docs"
SKIPPED_DIRS = {".git", ".venv", "var", "__pycache__", ".pytest_cache", ".hypothesis", "build", "dist"}
# Written in two parts so that this file does not name them itself.
FORBIDDEN = ("../" + "shared", "/" + "work/")
MD_MENTION = re.compile(r"(?<![\w./-])([\w./-]+\.md)\b")
LINK = re.compile(r"(?<!!)\[[^\]]*\]\(([^)\s]+)\)")
HEADING = re.compile(r"^(#{1,6})\s+(.+?)\s*#*\s*$", re.M)
FENCE = re.compile(r"^```.*?^```[ \t]*$", re.M | re.S)
CODE_NAME = re.compile(r"`((?:domain|service|api)/[\w/]+\.py)::([\w.]+)`")


def project_files() -> list[Path]:
    """Every text file of the project (what a clone holds, less what running it makes)."""
    found = []
    for path in ROOT.rglob("*"):
        if not path.is_file() or SKIPPED_DIRS.intersection(path.relative_to(ROOT).parts):
            continue
        if path.suffix in {".pyc", ".sqlite", ".pem"} or path.name.endswith(".egg-info"):
            continue
        if any(part.endswith(".egg-info") for part in path.relative_to(ROOT).parts):
            continue
        try:
            found.append((path, path.read_text(encoding="utf-8")))
        except (UnicodeDecodeError, OSError):
            continue
    return found


def markdown_pages() -> list[Path]:
    return [ROOT / "README.md", *sorted(DOCS.rglob("*.md"))]


def prose(text: str) -> str:
    """Markdown without its fenced code blocks, whose lines are not headings or links."""
    return FENCE.sub("", text)


def slug(heading: str) -> str:
    """The anchor GitHub gives a heading: lower case, punctuation dropped, spaces as hyphens."""
    text = heading.strip().lower()
    kept = "".join(c for c in text if c in " -_" or unicodedata.category(c)[0] in "LN")
    return kept.replace(" ", "-")


def anchors(page: Path) -> set[str]:
    seen: dict[str, int] = {}
    out = set()
    for _, title in HEADING.findall(prose(page.read_text(encoding="utf-8"))):
        base = slug(title)
        count = seen.get(base, 0)
        seen[base] = count + 1
        out.add(base if count == 0 else f"{base}-{count}")
    return out


def section(text: str, heading: str) -> str:
    """The text under ``heading`` (a whole heading line) up to the next heading of the same or a higher level."""
    level = len(heading) - len(heading.lstrip("#"))
    start = text.index(heading + "\n") + len(heading) + 1
    ends = [m.start() for m in re.finditer(r"^#{1,%d} " % level, text[start:], re.M)]
    return text[start : start + ends[0]] if ends else text[start:]


def test_no_project_file_names_the_contract_folder_or_a_path_of_this_machine():
    offending = [
        f"{path.relative_to(ROOT)}: {word}" for path, text in project_files() for word in FORBIDDEN if word in text
    ]
    assert not offending, offending


def test_every_document_a_project_file_names_is_one_a_clone_has():
    missing = []
    for path, text in project_files():
        for name in set(MD_MENTION.findall(text)):
            bare = "/" not in name
            if (ROOT / name).is_file() or (path.parent / name).is_file():
                continue
            if bare and any(p.name == name for p in markdown_pages()):
                continue
            missing.append(f"{path.relative_to(ROOT)} names {name}")
    assert not missing, "\n".join(sorted(missing))


@pytest.mark.parametrize("page", markdown_pages(), ids=lambda p: str(p.relative_to(ROOT)))
def test_every_relative_link_resolves_to_a_file_of_the_project_and_its_anchor_to_a_heading(page):
    broken = []
    for target in LINK.findall(prose(page.read_text(encoding="utf-8"))):
        if re.match(r"[a-z][a-z0-9+.-]*:", target):
            continue  # http:, https:, mailto: are not files of the project
        path_part, _, anchor = target.partition("#")
        linked = (page.parent / path_part).resolve() if path_part else page
        if ROOT not in linked.parents and linked != ROOT:
            broken.append(f"{target}: outside the repository")
        elif not linked.exists():
            broken.append(f"{target}: no such file")
        elif anchor and (linked.suffix != ".md" or anchor not in anchors(linked)):
            broken.append(f"{target}: no heading '{anchor}' in {linked.relative_to(ROOT)}")
    assert not broken, broken


def test_the_readme_reads_in_five_minutes_under_300_lines():
    lines = (ROOT / "README.md").read_text(encoding="utf-8").splitlines()
    assert len(lines) < 300, f"README.md has {len(lines)} lines: move the detail to docs/"


def test_the_readme_links_the_docs_index_and_the_index_links_every_page():
    readme = prose((ROOT / "README.md").read_text(encoding="utf-8"))
    assert "docs/README.md" in LINK.findall(readme)
    index = LINK.findall(prose((DOCS / "README.md").read_text(encoding="utf-8")))
    pages = {str(p.relative_to(DOCS)) for p in DOCS.rglob("*.md") if p.name != "README.md"}
    assert pages <= {link.partition("#")[0] for link in index}, pages


def test_the_readmes_postgresql_example_names_the_database_service_of_docker_compose():
    compose = yaml.safe_load((ROOT / "docker-compose.yml").read_text())
    databases = [name for name, svc in compose["services"].items() if str(svc.get("image", "")).startswith("postgres")]
    assert len(databases) == 1, databases
    assert compose["services"]["zametano"]["environment"]["POSTGRES_HOST"] == databases[0]

    hosts = re.findall(r"POSTGRES_HOST=(\S+)", (ROOT / "README.md").read_text(encoding="utf-8"))
    assert hosts, "the README shows no PostgreSQL example"
    assert set(hosts) == {databases[0]}, hosts


def test_every_command_of_every_game_and_its_fields_are_in_the_api_doc():
    api = (DOCS / "api.md").read_text(encoding="utf-8")
    missing = []
    for game in GAMES.values():
        commands = section(api, f"### {game.title} commands")
        for name, spec in game.commands.items():
            if f"| `{name}` |" not in commands:
                missing.append(f"{game.name}: {name}")
            missing += [f"{game.name}: {name}.{field}" for field in spec.fields if f"`{field}`" not in commands]
    assert not missing, missing


def test_every_rule_option_of_every_game_is_in_its_rules_doc_with_its_default_and_bounds():
    missing = []
    for game in GAMES.values():
        options = section((DOCS / "rules" / f"{game.name}.md").read_text(encoding="utf-8"), "## Table options")
        rows = {line.split("|")[1].strip(): line for line in options.splitlines() if line.startswith("| `")}
        for spec in game.options:
            row = rows.get(f"`{spec.name}`")
            if row is None:
                missing.append(f"{game.name}: {spec.name}")
                continue
            shown = [str(v).lower() for v in (spec.low, spec.high, *spec.choices) if v is not None]
            if not callable(spec.default):
                shown.append(str(spec.default).lower())
            words = row.lower().replace(",", "").replace("10^12", str(10**12)).replace("10^9", str(10**9))
            words = words.replace("10^6", str(10**6))
            missing += [f"{game.name}: {spec.name} does not show {value}" for value in shown if value not in words]
    assert not missing, missing


def test_every_function_the_docs_name_exists_where_they_say():
    named = {(path, name) for page in markdown_pages() for path, name in CODE_NAME.findall(page.read_text(encoding="utf-8"))}
    assert len(named) > 50  # the rules name the function of every rule
    missing = []
    for path, name in sorted(named):
        module = importlib.import_module(path[: -len(".py")].replace("/", "."))
        thing = module
        for part in name.split("."):
            thing = getattr(thing, part, None)
        if thing is None:
            missing.append(f"{path}::{name}")
    assert not missing, missing


def design_snippets() -> dict[str, object]:
    """The Python of docs/design.md, run: what an auditor would copy to check a log by hand."""
    text = (DOCS / "design.md").read_text(encoding="utf-8")
    namespace: dict[str, object] = {}
    for block in re.findall(r"^```python\n(.*?)^```$", text, re.M | re.S):
        exec(compile(block, "docs/design.md", "exec"), namespace)  # noqa: S102 - our own documentation
    return namespace


def test_the_designs_chain_check_reproduces_the_reference_vectors_and_names_an_altered_event():
    check_chain = design_snippets()["check_chain"]
    events = json.loads((ROOT / "tests/vectors/chain.json").read_text(encoding="utf-8"))["events"]
    assert check_chain(events, "any table") is None  # type: ignore[operator]  # rule 1: binds no table

    altered = [dict(e) for e in events]
    altered[2] = {**altered[2], "data": {**altered[2]["data"], "amount": 500}}
    assert check_chain(altered, "any table") == altered[2]["version"]  # type: ignore[operator]

    bound = json.loads((ROOT / "tests/vectors/chain-bound.json").read_text(encoding="utf-8"))
    assert check_chain(bound["events"], bound["table_id"]) is None  # type: ignore[operator]
    assert check_chain(bound["events"], bound["moved_to"]) == 1  # type: ignore[operator]


def test_the_designs_chain_check_verifies_every_view_of_a_rule_3_log_and_names_a_card_not_committed_to():
    check_chain = design_snippets()["check_chain"]
    concealed = json.loads((ROOT / "tests/vectors/chain-concealed.json").read_text(encoding="utf-8"))
    table_id = concealed["stored"][0]["data"]["table_id"]
    for view in ("stored", "anna", "boris"):
        assert check_chain(concealed[view], table_id) is None, view  # type: ignore[operator]
        assert check_chain(concealed[view], "another table") == 1, view  # type: ignore[operator]

    swapped = json.loads(json.dumps(concealed["anna"]))
    swapped[3]["data"]["piles"]["anna"][1] = "Kh"  # not the card committed to
    assert check_chain(swapped, table_id) == 4  # type: ignore[operator]
    uncommitted = json.loads(json.dumps(concealed["boris"]))
    del uncommitted[1]["concealed"]  # a card shown hidden, with nothing in its place
    assert check_chain(uncommitted, table_id) == 2  # type: ignore[operator]


def test_the_designs_shuffle_reproduces_the_reference_vectors():
    shoe_order = design_snippets()["shoe_order"]
    for vector in json.loads((ROOT / "tests/vectors/shuffle.json").read_text(encoding="utf-8"))["vectors"]:
        order = shoe_order(vector["seed"], vector["decks"], vector["cut"])  # type: ignore[operator]
        assert order[:10] == vector["first_10"] and order[-3:] == vector["last_3"]
        assert hashlib.sha256(",".join(order).encode()).hexdigest() == vector["order_sha256"]
