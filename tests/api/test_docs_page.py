"""/docs: the OpenAPI document as an interactive page (Swagger UI), served whole by the app from files
installed with it, open like /openapi.json, and loading nothing from another host."""

from __future__ import annotations

import re
from importlib.resources import files
from urllib.parse import urljoin, urlsplit

import pytest

from api.app import create_app
from service.application import TablesService
from service.config import load

PAGE = "http://localhost/docs"


@pytest.fixture
def secured(tmp_path):
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "docs.sqlite"),
                     "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e"})
    service = TablesService(settings)
    yield create_app(settings, service=service).test_client()
    service.close()


def loaded(html: str) -> list[str]:
    """Every script and stylesheet the page loads."""
    return re.findall(r'<script[^>]*\bsrc="([^"]+)"', html) + re.findall(r'<link[^>]*\bhref="([^"]+)"', html)


def test_docs_is_an_html_page_open_without_a_token(secured):
    page = secured.get("/docs")
    assert page.status_code == 200 and page.mimetype == "text/html"
    assert "SwaggerUIBundle" in page.get_data(as_text=True)
    assert secured.get("/tables").status_code == 401  # the page is open, the tables are not


def test_every_script_and_style_of_the_page_is_served_by_the_app_without_a_token(secured):
    html = secured.get("/docs").get_data(as_text=True)
    sources = loaded(html)
    assert len(sources) >= 3, sources
    for source in sources:
        url = urlsplit(urljoin(PAGE, source))
        assert url.netloc == "localhost", source
        with secured.get(url.path) as response:  # a file's response holds the file open until closed
            assert response.status_code == 200, source
            assert response.mimetype in ("text/css", "text/javascript", "application/javascript", "image/png"), source
    assert '"/openapi.json"' in html and secured.get("/openapi.json").status_code == 200


def test_the_page_names_no_other_host(secured):
    html = secured.get("/docs").get_data(as_text=True)
    for url in re.findall(r"(?:https?:)?//[^\s\"'<>)]+", html):
        assert urlsplit(url if "://" in url else "http:" + url).hostname in ("localhost", None), url
    assert '"validatorUrl": null' in html  # Swagger UI would otherwise send the document to its own validator


def test_the_files_are_the_ones_installed_with_the_package(secured):
    with secured.get("/docs/assets/swagger-ui-bundle.js") as response:
        assert response.data == (files("flask_swagger_ui") / "dist" / "swagger-ui-bundle.js").read_bytes()


@pytest.mark.parametrize("path", ["/docs/assets/../openapi.py", "/docs/assets/%2e%2e/%2e%2e/api/app.py",
                                  "/docs/assets/nothing.js"])
def test_nothing_outside_the_files_of_the_page_is_served(secured, path):
    with secured.get(path) as response:
        assert response.status_code == 404


def test_every_summary_is_one_line_of_plain_text_and_the_docs_page_has_an_icon(client):
    document = client.get("/openapi.json").json
    summaries = [op["summary"] for ops in document["paths"].values() for op in ops.values()
                 if isinstance(op, dict) and "summary" in op]
    assert summaries and [s for s in summaries if "`" in s or "\n" in s] == []
    page = client.get("/docs").data.decode()
    icon = page.split('rel="icon"', 1)[1].split('href="', 1)[1].split('"', 1)[0]
    with client.get(f"/{icon}") as served:  # a file's response holds the file open until closed
        assert served.status_code == 200 and served.mimetype == "image/png"
