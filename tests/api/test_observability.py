"""Metrics and logs in one process: label values only from fixed sets, Prometheus text documented as such,
a request id on every answer, one log line per request and per refusal, and no line a client can forge."""

from __future__ import annotations

import io
import json
import logging
import re
import sqlite3
import sys
import uuid
from datetime import datetime, timezone

import pytest
from hypothesis import given
from hypothesis import strategies as st
from prometheus_client import REGISTRY

from api import logs
from api.app import create_app
from service.config import ConfigError, load
from service.metrics import command_label
from tests.e2e.servers import free_port

INJECTION = '"} 1\nzametano_injected_total{by="anonymous'
HEX_ID = re.compile(r"[0-9a-f]{32}")


def sample(name, **labels):
    return REGISTRY.get_sample_value(name, labels) or 0.0


def series(text):
    """Every series of a scrape (name and labels), without the values."""
    return {line.rsplit(" ", 1)[0] for line in text.splitlines() if line and not line.startswith("#")}


def log_lines(capsys):
    return [json.loads(line) for line in capsys.readouterr().err.splitlines() if line.startswith("{")]



@pytest.fixture
def client(make_client):
    return make_client()


@pytest.fixture
def secured(make_client):
    return make_client(ZAMETANO_TOKENS="operator:op-secret-0f3a9c2e", ZAMETANO_RATE_LIMIT="1/h:5")


def open_table(client, headers=None):
    r = client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"]}, headers=headers or {})
    assert r.status_code == 201, r.json
    return r.json["table_id"]


# --- metrics ---------------------------------------------------------------------------------------------


def test_metrics_are_prometheus_text_and_the_openapi_document_says_so(client):
    r = client.get("/metrics")
    assert r.status_code == 200
    assert r.headers["Content-Type"].startswith("text/plain; version=0.0.4")
    assert "# TYPE zametano_http_requests_total counter" in r.get_data(as_text=True)
    documented = client.get("/openapi.json").json["paths"]["/metrics"]["get"]["responses"]["200"]
    # the media type without parameters (validators match on it), the format's version in the words
    assert list(documented["content"]) == ["text/plain"]
    assert "version=0.0.4" in documented["description"]


def workers_metrics_folder(folder):
    """A folder as the workers leave it: one worker's counter with a value, written by prometheus_client itself."""
    from prometheus_client.mmap_dict import MmapedDict, mmap_key

    written = MmapedDict(str(folder / "counter_4242.db"))
    written.write_value(mmap_key("zametano_probe_total", "zametano_probe_total", ["kind"], ["a"], "A probe."), 3.0, 0.0)
    written.close()
    return folder


def scraped(folder):
    from prometheus_client import CollectorRegistry, generate_latest

    from api.ops import WorkersCollector

    registry = CollectorRegistry()
    WorkersCollector(registry, path=str(folder))
    return generate_latest(registry).decode()


def test_a_scrape_leaves_out_a_workers_metrics_file_that_is_still_being_made(tmp_path):
    folder = workers_metrics_folder(tmp_path)
    (folder / "counter_4343.db").write_bytes(b"")  # created, not yet sized: a worker's first metric in the making
    assert 'zametano_probe_total{kind="a"} 3.0' in scraped(folder)


def test_every_command_of_every_registered_game_is_its_own_label():
    from domain.games import GAMES

    for game in GAMES.values():
        for command in game.commands:
            assert command_label(command) == command


@pytest.mark.parametrize("command", [INJECTION, "x" * 2_000_000, "Draw_Seats", "", None, 7, ["draw_seats"]])
def test_anything_else_a_client_calls_a_command_is_other(command):
    assert command_label(command) == "other"


def test_the_label_injection_payload_and_a_2_mb_command_name_add_no_series_and_do_not_grow_the_metrics(make_client):
    client = make_client(ZAMETANO_TOKENS="operator:op-secret-0f3a9c2e")
    operator = {"Authorization": "Bearer op-secret-0f3a9c2e"}
    table_id = open_table(client, operator)
    path = f"/tables/{table_id}/commands"
    attempts = [
        ({}, {"command": INJECTION, "player": "anna"}),  # no token: refused before the body is read
        (operator, {"command": INJECTION, "player": "anna"}),
        ({}, {"command": "x" * 2_000_000, "player": "anna"}),
        (operator, {"command": "x" * 2_000_000, "player": "anna"}),  # past the body limit: 413, unread
        (operator, {"command": "y" * 60_000, "player": "anna"}),  # read, and refused by the schema
    ]
    for headers, body in attempts:  # each kind of answer once, so that its series exists
        assert client.post(path, json=body, headers=headers).status_code >= 400
    before = client.get("/metrics").get_data(as_text=True)
    for headers, body in attempts * 3:
        assert client.post(path, json=body, headers=headers).status_code >= 400
    after = client.get("/metrics").get_data(as_text=True)
    assert series(after) == series(before)
    assert "injected" not in after and "anonymous" not in after and "xxxx" not in after
    assert len(after) < len(before) + 200  # only numbers changed
    assert 'zametano_command_duration_seconds_count{command="other",outcome="unauthorized"}' in after


def test_requests_are_counted_by_route_template_and_known_method_never_by_what_the_client_sent(client):
    # the registry lives as long as the process: other tests' requests count too, so compare before and after
    def by_template():
        return sample("zametano_http_requests_total", method="GET", route="/tables/{table_id}", status="404")

    before = by_template()
    client.get(f"/tables/{uuid.uuid4()}")
    client.get("/tables/not-a-table-" + "z" * 500)
    client.get("/nowhere/" + "q" * 500)
    client.open("/tables", method="BREW")
    text = client.get("/metrics").get_data(as_text=True)
    assert by_template() == before + 2
    assert 'zametano_http_requests_total{method="GET",route="unmatched",status="404"}' in text
    assert 'zametano_http_requests_total{method="OTHER",route="unmatched",status="405"}' in text
    assert "zzzz" not in text and "qqqq" not in text and "BREW" not in text and "not-a-table" not in text


def test_command_latency_is_counted_by_command_and_outcome(client):
    table_id = open_table(client)
    path = f"/tables/{table_id}/commands"

    def count(command, outcome):
        return sample("zametano_command_duration_seconds_count", command=command, outcome=outcome)

    ok, refused, conflict = count("draw_seats", "ok"), count("deal", "refused"), count("draw_seats", "conflict")
    missing = count("draw_seats", "not_found")
    assert client.post(path, json={"command": "deal", "player": "anna"}).status_code == 422
    assert client.post(path, json={"command": "draw_seats", "player": "anna"}, headers={"If-Match": '"7"'}).status_code == 409
    assert client.post(path, json={"command": "draw_seats", "player": "anna"}).status_code == 200
    client.post(f"/tables/{uuid.uuid4()}/commands", json={"command": "draw_seats", "player": "anna"})
    assert count("draw_seats", "ok") == ok + 1 and count("deal", "refused") == refused + 1
    assert count("draw_seats", "conflict") == conflict + 1 and count("draw_seats", "not_found") == missing + 1
    assert sample("zametano_command_duration_seconds_sum", command="draw_seats", outcome="ok") > 0


def test_an_old_version_in_if_match_counts_as_a_conflict_and_an_idempotent_repeat_as_a_repeat(client):
    table_id = open_table(client)
    path = f"/tables/{table_id}/commands"
    conflicts = sample("zametano_conflicts_total", kind="version_mismatch")
    repeats = sample("zametano_idempotent_repeats_total", command="draw_seats")
    client.post(path, json={"command": "draw_seats", "player": "anna"}, headers={"If-Match": '"5"'})
    for _ in range(3):
        client.post(path, json={"command": "draw_seats", "player": "anna"}, headers={"Idempotency-Key": "k1"})
    assert sample("zametano_conflicts_total", kind="version_mismatch") == conflicts + 1
    assert sample("zametano_idempotent_repeats_total", command="draw_seats") == repeats + 2


def test_the_read_model_lag_is_measured_at_each_scrape(client):
    table_id = open_table(client)
    client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"})
    client.get("/metrics")  # no follower in this process: nothing has indexed the events yet
    assert sample("zametano_read_model_lag_events") >= 2
    client.get("/tables")  # a listing brings the read model up to date
    client.get("/metrics")
    assert sample("zametano_read_model_lag_events") == 0


def test_a_store_that_is_down_counts_as_database_errors_logs_an_outage_and_its_lag_is_unknown(capsys):
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(free_port()),
           "POSTGRES_USER": "postgres", "POSTGRES_DBNAME": "nowhere", "POSTGRES_CONNECT_TIMEOUT": "2"}
    connects, unavailable = sample("zametano_database_errors_total", kind="connect"), sample(
        "zametano_database_errors_total", kind="unavailable")
    app = create_app(load(env))
    client = app.test_client()
    try:
        r = client.get(f"/tables/{uuid.uuid4()}")
        assert r.status_code == 503
        text = client.get("/metrics").get_data(as_text=True)
    finally:
        app.extensions["zametano"].close()
    assert sample("zametano_database_errors_total", kind="connect") > connects
    assert sample("zametano_database_errors_total", kind="unavailable") == unavailable + 1
    assert "zametano_read_model_lag_events NaN" in text
    lines = log_lines(capsys)
    assert any(line["logger"] == "zametano.store" and "the database is down" in line["message"] for line in lines)
    outage = [line for line in lines if "event store unavailable" in line["message"]]
    assert outage and outage[0]["request_id"] == r.json["request_id"] == r.headers["X-Request-Id"]


# --- request ids -----------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", ["abc-123", "trace:4bf92f3577b34da6.a3ce929d0e0e4736_1", "a" * 128])
def test_a_short_safe_request_id_from_the_client_is_kept(client, given):
    r = client.get(f"/tables/{uuid.uuid4()}", headers={"X-Request-Id": given})
    assert r.headers["X-Request-Id"] == given and r.json["request_id"] == given


@pytest.mark.parametrize("given", ["a" * 129, "two words", "a\tb", "quote\"d", "{json}", "naïve", ""])
def test_any_other_request_id_is_replaced_by_a_new_one(client, given):
    r = client.get(f"/tables/{uuid.uuid4()}", headers={"X-Request-Id": given})
    assert HEX_ID.fullmatch(r.headers["X-Request-Id"]) and r.json["request_id"] == r.headers["X-Request-Id"]


def test_every_answer_carries_its_request_id_even_those_given_before_any_view(secured):
    operator = {"Authorization": "Bearer op-secret-0f3a9c2e"}
    answers = [
        secured.get("/tables"),  # 401: no token
        secured.get("/nowhere", headers=operator),  # 404: no such route
        secured.delete("/tables", headers=operator),  # 405
        secured.post("/tables", data="x" * 70_000, content_type="application/json", headers=operator),  # 413
        secured.get("/healthz"),
        secured.get("/metrics"),
        secured.get("/openapi.json"),
    ]
    answers += [secured.get("/tables", headers=operator) for _ in range(6)][-1:]  # 429: past the burst of five
    assert [r.status_code for r in answers] == [401, 404, 405, 413, 200, 200, 200, 429]
    ids = [r.headers["X-Request-Id"] for r in answers]
    assert all(HEX_ID.fullmatch(rid) for rid in ids) and len(set(ids)) == len(ids)
    for r in answers:
        if r.status_code >= 400:
            assert r.json["request_id"] == r.headers["X-Request-Id"]


def test_a_500_has_its_request_id_and_its_traceback_in_the_log(make_client, tmp_path, capsys):
    client = make_client(AGGREGATE_CACHE_MAXSIZE="")
    table_id = open_table(client)
    with sqlite3.connect(tmp_path / "made.sqlite") as db:
        db.execute("DROP TABLE stored_events")
    broken = sample("zametano_database_errors_total", kind="broken")
    capsys.readouterr()
    r = client.get(f"/tables/{table_id}", headers={"X-Request-Id": "req-500"})
    assert r.status_code == 500 and r.json["request_id"] == "req-500" == r.headers["X-Request-Id"]
    assert sample("zametano_database_errors_total", kind="broken") == broken + 1
    lines = [line for line in log_lines(capsys) if line.get("request_id") == "req-500"]
    failure = [line for line in lines if "exception" in line]
    assert failure and failure[0]["level"] == "ERROR" and "Traceback" in failure[0]["exception"]
    assert lines[-1]["status"] == 500 and lines[-1]["level"] == "ERROR"


# --- log lines -------------------------------------------------------------------------------------------


def test_each_request_gets_one_line_with_method_route_status_duration_request_id_and_table(client, capsys):
    table_id = open_table(client)
    capsys.readouterr()
    client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                headers={"X-Request-Id": "req-1"})
    lines = [line for line in log_lines(capsys) if line.get("request_id") == "req-1"]
    assert len(lines) == 1
    line = lines[0]
    assert line["logger"] == "zametano.http" and line["level"] == "INFO"
    assert (line["method"], line["route"], line["status"], line["table_id"]) == (
        "POST", "/tables/{table_id}/commands", 200, table_id)
    assert isinstance(line["duration_ms"], float) and line["duration_ms"] >= 0 and line["time"].endswith("Z")
    assert "anna" not in json.dumps(line)  # nothing of the body


def test_under_a_server_a_requests_line_and_its_counts_wait_until_its_answer_has_left(client, capsys):
    # gunicorn closes what it was answered once its last byte is written (PEP 3333): the line and the metrics
    # are written then, so that no client waits for them. The test client never closes unless told to.
    table_id = open_table(client)
    capsys.readouterr()
    answered = sample("zametano_command_duration_seconds_count", command="draw_seats", outcome="ok")
    r = client.post(f"/tables/{table_id}/commands", json={"command": "draw_seats", "player": "anna"},
                    headers={"X-Request-Id": "req-sent"}, environ_base={"gunicorn.socket": object()})
    assert r.status_code == 200
    assert not [line for line in log_lines(capsys) if line.get("request_id") == "req-sent"]
    assert sample("zametano_command_duration_seconds_count", command="draw_seats", outcome="ok") == answered
    r.close()
    lines = [line for line in log_lines(capsys) if line.get("request_id") == "req-sent"]
    assert [(line["route"], line["status"], line["table_id"]) for line in lines] == [
        ("/tables/{table_id}/commands", 200, table_id)]
    assert lines[0]["role"] == "open" and lines[0]["duration_ms"] >= 0
    assert sample("zametano_command_duration_seconds_count", command="draw_seats", outcome="ok") == answered + 1


def test_refusals_and_conflicts_each_get_a_line_with_code_and_message(client, capsys):
    table_id = open_table(client)
    path = f"/tables/{table_id}/commands"
    capsys.readouterr()
    client.post(path, json={"command": "deal", "player": "anna"}, headers={"X-Request-Id": "refused"})
    client.post(path, json={"command": "draw_seats", "player": "anna"}, headers={"X-Request-Id": "late", "If-Match": '"9"'})
    client.get(f"/tables/{uuid.uuid4()}", headers={"X-Request-Id": "missing"})
    by_id = {}
    for line in log_lines(capsys):
        if "code" in line:
            by_id[line["request_id"]] = line
    assert by_id["refused"]["code"] == 422 and by_id["refused"]["level"] == "INFO"
    assert "draw_seats" in by_id["refused"]["message"]  # the message the client got: what is allowed now
    assert by_id["late"]["code"] == 409 and by_id["late"]["level"] == "WARNING"
    assert by_id["late"]["message"].startswith("conflict 409: If-Match names version 9")
    assert by_id["missing"]["code"] == 404


def test_a_long_refusal_message_is_cut_in_the_log(client, capsys):
    capsys.readouterr()
    client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"], "x" * 5000: 1},
                headers={"X-Request-Id": "long"})
    refusal = [line for line in log_lines(capsys) if line.get("request_id") == "long" and "code" in line][0]
    assert len(refusal["message"]) < logs.MAX_MESSAGE + 50


FORGED = '\n{"level": "ERROR", "logger": "zametano.http", "message": "forged"}\r\n2026-01-01T00:00:00Z ERROR forged'


@pytest.mark.parametrize("log_format", ["json", "text"])
def test_no_client_text_can_start_a_line_of_its_own(make_client, capsys, log_format):
    client = make_client(ZAMETANO_LOG_FORMAT=log_format)
    capsys.readouterr()
    client.get("/tables/" + FORGED.replace("\n", "%0A").replace("\r", "%0D").replace(" ", "%20"))
    client.post("/tables", json={"game": "chemin-de-fer", "players": ["anna", "boris"], FORGED: 1})
    err = capsys.readouterr().err
    lines = err.splitlines()
    assert len(lines) == 4  # a refusal and a request line for each request
    if log_format == "json":
        assert all(json.loads(line)["message"] != "forged" for line in lines)
    else:
        assert all(re.match(r"\d{4}-\d\d-\d\dT[\d:.]+Z (INFO|WARNING) \[\d+\] zametano\.http ", line) for line in lines)
        assert "\\n{" in err


@given(st.floats(min_value=0, max_value=4_102_444_800, allow_nan=False))  # up to 2100
def test_a_lines_time_is_the_utc_millisecond_datetime_writes(created):
    record = logging.LogRecord("zametano.http", logging.INFO, __file__, 0, "line", (), None)
    record.created = created
    moment = datetime.fromtimestamp(created, timezone.utc).isoformat(timespec="milliseconds")
    assert logs._timestamp(record) == moment.replace("+00:00", "Z")


def test_text_on_a_terminal_json_lines_otherwise_unless_the_setting_says(monkeypatch):
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    record = logging.LogRecord("zametano.http", logging.INFO, __file__, 1, "hello %s", ("there",), None)
    for stream, setting, expected in [(Terminal(), None, "text"), (io.StringIO(), None, "json"),
                                      (Terminal(), "json", "json"), (io.StringIO(), "text", "text")]:
        monkeypatch.setattr(sys, "stderr", stream)
        logs.configure(setting)
        logging.getLogger("zametano.http").handle(record)
        written = stream.getvalue()
        if expected == "json":
            assert json.loads(written)["message"] == "hello there"
        else:
            assert not written.startswith("{") and written.rstrip().endswith("zametano.http hello there")
    logs.configure(None)


def test_a_log_format_that_is_neither_json_nor_text_is_refused_with_what_is_allowed():
    assert load({"ZAMETANO_LOG_FORMAT": "TEXT", "PERSISTENCE_MODULE": "eventsourcing.popo"}).log_format == "text"
    with pytest.raises(ConfigError, match="ZAMETANO_LOG_FORMAT is json or text"):
        load({"ZAMETANO_LOG_FORMAT": "xml", "PERSISTENCE_MODULE": "eventsourcing.popo"})


def test_a_commands_outcome_is_one_of_a_fixed_list_whatever_the_status():
    from api.ops import OUTCOMES, outcome

    assert {outcome(status) for status in range(100, 600)} == set(OUTCOMES)
    assert (outcome(200), outcome(409), outcome(422), outcome(413), outcome(503), outcome(500)) == (
        "ok", "conflict", "refused", "invalid", "unavailable", "error")


def test_every_line_of_a_request_names_its_principal_and_never_its_token(make_client, capsys):
    client = make_client(ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e-1,auditor:au-secret-7b1d4e86-2")
    player = client.post("/players/anna/tokens", json={}, headers={"Authorization": "Bearer op-secret-0f3a9c2e-1"}).json["token"]
    capsys.readouterr()
    for rid, token in [("op", "op-secret-0f3a9c2e-1"), ("au", "au-secret-7b1d4e86-2"), ("pl", player)]:
        client.get("/me", headers={"Authorization": f"Bearer {token}", "X-Request-Id": rid})
        client.post("/tables", json={}, headers={"Authorization": f"Bearer {token}", "X-Request-Id": rid + "-refused"})
    client.get("/me", headers={"Authorization": "Bearer guess-3", "X-Request-Id": "nobody"})
    err = capsys.readouterr().err
    lines = [json.loads(line) for line in err.splitlines() if line.startswith("{")]
    principals = {(line["request_id"], line.get("role"), line.get("principal")) for line in lines}
    assert principals == {("op", "operator", "cage"), ("op-refused", "operator", "cage"),
                          ("au", "auditor", "auditor-1"), ("au-refused", "auditor", "auditor-1"),
                          ("pl", "player", "anna"), ("pl-refused", "player", "anna"), ("nobody", None, None)}
    assert len([line for line in lines if "code" in line]) == 4  # the refusals' own lines name the principal too
    for secret in ("op-secret-0f3a9c2e-1", "au-secret-7b1d4e86-2", player, player.split(".")[2], "guess-3"):
        assert secret not in err


def test_a_service_without_tokens_logs_its_requests_as_open(client, capsys):
    capsys.readouterr()
    client.get("/me", headers={"X-Request-Id": "open"})
    line = [line for line in log_lines(capsys) if line.get("request_id") == "open"][0]
    assert line["role"] == "open" and "principal" not in line


def test_the_text_form_names_the_principal_too(make_client, capsys):
    client = make_client(ZAMETANO_TOKENS="operator@cage:op-secret-0f3a9c2e-1", ZAMETANO_LOG_FORMAT="text")
    capsys.readouterr()
    client.get("/me", headers={"Authorization": "Bearer op-secret-0f3a9c2e-1"})
    err = capsys.readouterr().err
    assert "role=operator principal=cage" in err and "op-secret-0f3a9c2e-1" not in err
