"""What a page costs to fetch: /games instead of the whole document, gzip for clients that take it, validators
(ETag, 304) on the documents and the desk's files, and streams never held back for compression."""

from __future__ import annotations

import gzip
import json

import pytest

from api.app import create_app
from api.pages import MIN_SIZE
from api.schemas import games_document
from service.application import TablesService
from service.config import load
from tests.helpers import Seeds, StepClock
from tests.sse import SSE

GZIP = {"Accept-Encoding": "gzip, deflate, br"}


@pytest.fixture
def secured(tmp_path):
    settings = load({"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "pages.sqlite"),
                     "ZAMETANO_DATA_DIR": str(tmp_path), "ZAMETANO_TOKENS": "operator:op-secret-0f3a9c2e"})
    service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
    yield create_app(settings, service=service).test_client()
    service.close()


def test_games_are_the_documents_x_games_alone_open_without_a_token(secured):
    games = secured.get("/games")
    assert games.status_code == 200 and games.mimetype == "application/json"
    assert games.json == games_document() == secured.get("/openapi.json").json["x-games"]
    assert len(games.data) * 4 < len(secured.get("/openapi.json").data)


@pytest.mark.parametrize("path", ["/games", "/openapi.json"])
def test_a_document_fetched_again_with_its_etag_is_a_304_without_a_body(secured, path):
    first = secured.get(path)
    tag = first.headers["ETag"]
    assert tag.startswith('"') and first.headers["Cache-Control"] == "no-cache"
    again = secured.get(path, headers={"If-None-Match": tag})
    assert again.status_code == 304 and again.data == b"" and again.headers["ETag"] == tag
    other = secured.get(path, headers={"If-None-Match": '"something-else"'})
    assert other.status_code == 200 and other.data == first.data


def test_the_desk_asks_for_the_games_not_for_the_whole_document(secured):
    script = secured.get("/desk/static/app.js")
    text = script.get_data(as_text=True)
    script.close()
    assert 'api("/games")' in text and "/openapi.json" not in text.replace("x-games of /openapi.json", "")


@pytest.mark.parametrize("path", ["/openapi.json", "/games", "/desk", "/desk/static/verify.js", "/desk/static/desk.css"])
def test_a_client_that_takes_gzip_gets_the_same_bytes_gzipped(secured, path):
    plain = secured.get(path)
    packed = secured.get(path, headers=GZIP)
    assert plain.status_code == packed.status_code == 200
    assert "Content-Encoding" not in plain.headers
    assert packed.headers["Content-Encoding"] == "gzip"
    assert "Accept-Encoding" in packed.headers["Vary"] and "Accept-Encoding" in plain.headers["Vary"]
    assert gzip.decompress(packed.data) == plain.data
    assert len(packed.data) < len(plain.data) * 0.6
    assert int(packed.headers["Content-Length"]) == len(packed.data)
    plain.close()
    packed.close()


def test_a_table_state_is_gzipped_and_keeps_its_version_as_etag(client, table):
    path = f"/tables/{table['table_id']}"
    packed = client.get(path, headers=GZIP)
    assert packed.headers["Content-Encoding"] == "gzip" and packed.headers["ETag"] == f'"{table["version"]}"'
    assert json.loads(gzip.decompress(packed.data)) == client.get(path).json
    assert client.get(path, headers={**GZIP, "If-None-Match": packed.headers["ETag"]}).status_code == 304


@pytest.mark.parametrize("encoding", ["identity", "gzip;q=0", "br", ""])
def test_a_client_that_does_not_take_gzip_gets_the_answer_as_it_is(client, table, encoding):
    answer = client.get(f"/tables/{table['table_id']}", headers={"Accept-Encoding": encoding})
    assert "Content-Encoding" not in answer.headers and answer.json["table_id"] == table["table_id"]


def test_a_small_answer_is_not_gzipped(client):
    answer = client.get("/healthz", headers=GZIP)
    assert len(answer.data) < MIN_SIZE and "Content-Encoding" not in answer.headers


def test_an_error_answer_is_not_gzipped(client):
    answer = client.get("/tables/no-such-table", headers=GZIP)
    assert answer.status_code == 404 and "Content-Encoding" not in answer.headers and answer.json["message"]


def test_a_desk_file_fetched_again_with_its_etag_is_a_304_gzipped_or_not(secured):
    first = secured.get("/desk/static/verify.js", headers=GZIP)
    tag = first.headers["ETag"]
    first.close()
    again = secured.get("/desk/static/verify.js", headers={**GZIP, "If-None-Match": tag})
    assert again.status_code == 304 and again.data == b""
    again.close()


def test_a_live_stream_is_never_gzipped_nor_held_back(client, table):
    with client.get(f"/tables/{table['table_id']}/events", headers={**GZIP, "Accept": SSE}, buffered=False) as stream:
        assert stream.status_code == 200 and stream.mimetype == SSE
        assert "Content-Encoding" not in stream.headers
        first = next(stream.response)  # the first message arrives before the stream ends
        assert first


def test_an_export_of_the_log_is_never_gzipped(client, table):
    answer = client.get(f"/tables/{table['table_id']}/events", headers={**GZIP, "Accept": "application/x-ndjson"})
    assert answer.status_code == 200 and "Content-Encoding" not in answer.headers
    assert json.loads(answer.data.splitlines()[0])
