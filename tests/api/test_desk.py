"""/desk: the same page for every view of the desk and the page's own files, open without a token, of the right
content types, loading nothing from another host and holding no table data; and GET /me, the caller's role,
which the desk reads to show the croupier's panel only to a role that may command."""

from __future__ import annotations

import re
import tomllib
from fnmatch import fnmatch
from pathlib import Path

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock

ROOT = Path(__file__).resolve().parents[2]
FILES = ROOT / "api" / "static" / "desk"
TOKENS = "operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86"
VIEWS = ["/desk", "/desk/", "/desk/tables/{t}", "/desk/tables/{t}/rounds", "/desk/tables/{t}/rounds/3",
         "/desk/tables/{t}/verify", "/desk/tables/no-such-table"]
TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
# An XML namespace is a name, not an address anything loads: the one an SVG file must declare.
NAMESPACES = ("http://www.w3.org/2000/svg",)
URL = re.compile(r"(?:https?:)?//[A-Za-z0-9.-]+[^\s\"'`<>)]*")


@pytest.fixture
def secured(tmp_path):
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "desk.sqlite"),
                     "ZAMETANO_DATA_DIR": str(tmp_path), "ZAMETANO_TOKENS": TOKENS})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    client = create_app(settings, service=service).test_client()
    opened = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]},
                         headers={"Authorization": "Bearer op-secret-0f3a9c2e"})
    assert opened.status_code == 201
    client.table_id = opened.json["table_id"]
    yield client
    service.close()


def desk_files() -> list[Path]:
    return sorted(p for p in FILES.iterdir() if p.suffix in TYPES)


def page(client, path: str):  # type: ignore[no-untyped-def]
    with client.get(path.format(t=client.table_id)) as response:  # a file's answer holds the file open until closed
        response.direct_passthrough = False
        return response.status_code, response.mimetype, dict(response.headers), response.get_data(as_text=True)


@pytest.mark.parametrize("view", VIEWS)
def test_every_view_of_the_desk_is_the_same_html_page_open_without_a_token(secured, view):
    status, mimetype, headers, html = page(secured, view)

    assert (status, mimetype) == (200, "text/html")
    assert html == page(secured, "/desk")[3]  # the page holds no table data: the scripts ask the API for it
    assert '<script type="module" src="/desk/static/app.js">' in html
    assert "default-src 'none'" in headers["Content-Security-Policy"]
    assert secured.get(f"/tables/{secured.table_id}").status_code == 401  # the page is open, the API is not


@pytest.mark.parametrize("name", [p.name for p in desk_files()])
def test_every_file_of_the_page_is_served_open_with_its_content_type(secured, name):
    status, mimetype, headers, body = page(secured, f"/desk/static/{name}")

    assert (status, mimetype) == (200, TYPES[Path(name).suffix])
    assert body == (FILES / name).read_text(encoding="utf-8")
    assert headers["X-Content-Type-Options"] == "nosniff"


def test_the_page_loads_only_files_the_app_serves(secured):
    html = page(secured, "/desk")[3]
    loaded = re.findall(r'<(?:script|link)[^>]*\b(?:src|href)="([^"]+)"', html)
    assert loaded
    for path in loaded:
        assert page(secured, path)[0] == 200, path


def test_every_module_a_script_imports_is_a_file_of_the_page():
    for script in FILES.glob("*.js"):
        for name in re.findall(r'^(?:import|export)\b[^;]*?\bfrom "\./([^"]+)"', script.read_text(), re.M | re.S):
            assert (FILES / name).is_file(), f"{script.name} imports {name}"


def test_no_file_of_the_desk_names_another_host():
    for path in [*desk_files(), FILES / "shell.html"]:
        text = path.read_text(encoding="utf-8")
        foreign = [url for url in URL.findall(text) if url not in NAMESPACES]
        assert not foreign, f"{path.name}: {foreign}"


@pytest.mark.parametrize("path", ["/desk/static/shell.html", "/desk/static/../desk.py", "/desk/static/%2e%2e/app.py",
                                  "/desk/static/nothing.js", "/desk/nothing"])
def test_nothing_but_the_files_of_the_page_is_served_and_what_is_not_there_is_the_usual_404(secured, path):
    with secured.get(path) as response:
        assert response.status_code == 404
        assert response.json["code"] == 404


def test_under_a_path_prefix_the_page_loads_its_files_and_the_api_from_that_prefix(secured):
    with secured.get("/desk", base_url="http://localhost/zametano/") as response:
        html = response.get_data(as_text=True)

    assert 'src="/zametano/desk/static/app.js"' in html and 'data-root="/zametano"' in html


def test_the_package_ships_every_file_of_the_desk():
    declared = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["setuptools"]["package-data"]["api"]
    for path in [*FILES.iterdir()]:
        assert any(fnmatch(str(path.relative_to(ROOT / "api")), pattern) for pattern in declared), path.name


# --- GET /me -------------------------------------------------------------------------------------------


@pytest.mark.parametrize("token, role", [("op-secret-0f3a9c2e", "operator"), ("au-secret-7b1d4e86", "auditor")])
def test_me_names_the_role_of_the_token_sent(secured, token, role):
    response = secured.get("/me", headers={"Authorization": f"Bearer {token}"})

    assert response.status_code == 200
    assert response.json == {"role": role, "name": f"{role}-1"}


def test_me_without_a_token_the_service_knows_is_a_401(secured):
    assert secured.get("/me").status_code == 401
    assert secured.get("/me", headers={"Authorization": "Bearer guess"}).status_code == 401


def test_me_on_a_service_without_tokens_is_open(client):
    response = client.get("/me")

    assert response.status_code == 200
    assert response.json == {"role": "open", "name": None}
