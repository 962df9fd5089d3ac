"""The client scripts (scripts/demo, scripts/verify-shoe, scripts/audit) behave alike: the URL with or without
http://, one token variable (and the server's own list as a fallback), one meaning for each exit status, and
one clear line for a URL where no Zametano service answers.

Each script runs in this process against the real app served over a real socket (tests/served.py)."""

from __future__ import annotations

import ast
import sys
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from threading import Thread
from typing import Any

import pytest

from tests.helpers import DEMO, load_script
from tests.served import Played, audit, serving

ROOT = Path(__file__).resolve().parents[2]
verify_shoe = load_script("verify-shoe", "verify_shoe")
SCRIPTS = {"demo": DEMO, "verify-shoe": verify_shoe, "audit": audit}
BLOCK = ("alike (begin)", "alike (end)")
WERKZEUG_404 = "The requested URL was not found on the server"


def argv_for(script: str, base: str, played: Played) -> list[str]:
    """The arguments that make `script` do its work on the service at `base` (a short game for the demo)."""
    if script == "demo":
        return ["--url", base, "--rounds", "1", "--seed", "1", "--players", "anna,boris"]
    return [f"{base}/tables/{played.chemin_de_fer}"]


def run(script: str, argv: list[str], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    try:
        code = SCRIPTS[script].main(argv)
    except SystemExit as exit_:  # argparse's usage errors
        code = exit_.code
    out, err = capsys.readouterr()
    return code, out, err


@pytest.fixture(autouse=True)
def no_tokens_in_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    for name in ("ZAMETANO_TOKEN", "ZAMETANO_TOKENS", "ZAMETANO_URL"):
        monkeypatch.delenv(name, raising=False)


def recording(seen: list[str | None]) -> Callable[[Any], Any]:
    """A WSGI wrapper keeping the Authorization header of every request but those of the open paths and the
    reads made with a player's token (a JWT)."""
    def wrap(app: Any) -> Any:
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            # reads only by a player's own token: the demo reads a player's hand with a token minted for him
            if environ["PATH_INFO"].startswith("/tables") and not (
                    environ["REQUEST_METHOD"] == "GET" and (environ.get("HTTP_AUTHORIZATION") or "").startswith("Bearer eyJ")):
                seen.append(environ.get("HTTP_AUTHORIZATION"))
            return app(environ, start_response)
        return wrapped
    return wrap


def answering(status: str, body: bytes, content_type: str = "application/json") -> Callable[[Any], Any]:
    """A WSGI wrapper answering every request under /tables with `status` and `body`, as a failing server or
    a proxy in front of it would."""
    def wrap(app: Any) -> Any:
        def wrapped(environ: dict[str, Any], start_response: Any) -> Any:
            if environ["PATH_INFO"].startswith("/tables"):
                start_response(status, [("Content-Type", content_type)])
                return [body]
            return app(environ, start_response)
        return wrapped
    return wrap


@contextmanager
def web_page_server() -> Iterator[str]:
    """A web server that is not the service: an HTML page for / and an HTML 404 for everything else."""
    class Pages(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802 - the standard library's name
            status = 200 if self.path == "/" else 404
            body = b"<html><body><h1>Not here</h1></body></html>"
            self.send_response(status)
            self.send_header("Content-Type", "text/html")
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def log_message(self, format: str, *args: Any) -> None:
            pass

    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Pages)
    thread = Thread(target=httpd.serve_forever, args=(0.05,), daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{httpd.server_address[1]}"
    finally:
        httpd.shutdown()
        httpd.server_close()
        thread.join()


# --- one block, word for word ------------------------------------------------------------------------


def block_of(name: str) -> str:
    text = (ROOT / "scripts" / name).read_text()
    start, end = text.index(BLOCK[0]), text.index(BLOCK[1])
    return text[start:end]


def test_demo_and_verify_shoe_carry_the_same_conventions_word_for_word_and_audit_uses_verify_shoes() -> None:
    assert block_of("demo") == block_of("verify-shoe")
    assert BLOCK[0] not in (ROOT / "scripts" / "audit").read_text()
    assert audit.vs.service_url is not None and audit.vs.token_for is not None


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_the_client_scripts_import_the_standard_library_alone(script: str) -> None:
    tree = ast.parse((ROOT / "scripts" / script).read_text())
    imported = {alias.name.split(".")[0] for node in ast.walk(tree) if isinstance(node, ast.Import)
                for alias in node.names}
    imported |= {node.module.split(".")[0] for node in ast.walk(tree)
                 if isinstance(node, ast.ImportFrom) and node.module and node.level == 0}
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported - set(sys.stdlib_module_names)


# --- the URL -----------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, url",
    [
        ("127.0.0.1:8000", "http://127.0.0.1:8000"),
        ("localhost:8000/", "http://localhost:8000"),
        ("  http://10.0.0.5:8000/zametano/ ", "http://10.0.0.5:8000/zametano"),
        ("https://tables.example", "https://tables.example"),
        ("HTTPS://tables.example:8443/tables/t-1", "HTTPS://tables.example:8443/tables/t-1"),
        ("[::1]:8000", "http://[::1]:8000"),
    ],
)
def test_a_url_is_taken_with_or_without_http_and_https_is_kept(given: str, url: str) -> None:
    assert verify_shoe.service_url(given) == url
    assert DEMO.service_url(given) == url


@pytest.mark.parametrize("given", ["ftp://example/tables/t-1", "http://", "", "http://example:99999",
                                   "http://example:port", "file:///etc/passwd"])
def test_what_is_not_an_http_url_is_refused_saying_what_is_expected(given: str) -> None:
    for module in (verify_shoe, DEMO):
        with pytest.raises(ValueError, match=r"is not an http\(s\) URL: give one such as http://127.0.0.1:8000"):
            module.service_url(given)


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_takes_the_services_url_without_http(
    script: str, played: Played, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store) as base:
        code, out, err = run(script, argv_for(script, base.removeprefix("http://"), played), capsys)

    assert code == 0, out + err


# --- the token ---------------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "given, env, roles, token",
    [
        ("given", {"ZAMETANO_TOKEN": "mine", "ZAMETANO_TOKENS": "operator:op"}, ("operator",), "given"),
        (None, {"ZAMETANO_TOKEN": "mine", "ZAMETANO_TOKENS": "operator:op"}, ("operator",), "mine"),
        (None, {"ZAMETANO_TOKEN": "", "ZAMETANO_TOKENS": "auditor:au, operator:op"}, ("operator",), "op"),
        (None, {"ZAMETANO_TOKENS": "operator:op,auditor:au,auditor:au2"}, ("auditor", "operator"), "au"),
        (None, {"ZAMETANO_TOKENS": "operator:op"}, ("auditor", "operator"), "op"),
        (None, {"ZAMETANO_TOKENS": "auditor:au"}, ("operator",), None),
        (None, {"ZAMETANO_TOKENS": "auditor@regulator:au,operator@cage:op"}, ("operator",), "op"),
        (None, {"ZAMETANO_TOKENS": "nonsense,operator:"}, ("operator",), None),
        (None, {}, ("operator",), None),
    ],
    ids=["--token-first", "then-ZAMETANO_TOKEN", "then-the-operator-of-ZAMETANO_TOKENS",
         "the-first-auditor-for-reading", "an-operator-reads-too", "an-auditor-cannot-command", "named-tokens", "malformed",
         "none"],
)
def test_the_token_is_the_one_given_else_zametano_token_else_the_servers_own_list_by_role(
    given: str | None, env: dict[str, str], roles: tuple[str, ...], token: str | None
) -> None:
    assert verify_shoe.token_for(given, env, roles) == token
    assert DEMO.token_for(given, env, roles) == token


@pytest.mark.parametrize("script, sent", [("demo", "Bearer op-t-0123456789ab"), ("verify-shoe", "Bearer au-t-0123456789ab"),
                                          ("audit", "Bearer au-t-0123456789ab")])
def test_with_only_the_servers_zametano_tokens_set_the_demo_commands_as_operator_and_the_checks_read_as_auditor(
    script: str, sent: str, played: Played, store: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("ZAMETANO_TOKENS", "operator:op-t-0123456789ab,auditor:au-t-0123456789ab")
    seen: list[str | None] = []
    with serving(store, tokens="operator:op-t-0123456789ab,auditor:au-t-0123456789ab", wrap=recording(seen)) as base:
        code, out, err = run(script, argv_for(script, base, played), capsys)

    assert code == 0, out + err
    assert seen and set(seen) == {sent}


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_says_how_it_takes_the_url_and_the_token_and_what_its_exit_status_means(
    script: str, capsys: pytest.CaptureFixture[str]
) -> None:
    code, out, _ = run(script, ["--help"], capsys)

    assert code == 0
    text = " ".join(out.split())
    assert "leave out http://" in text
    assert "$ZAMETANO_TOKEN," in text and "$ZAMETANO_TOKENS" in text
    assert "xit status: 0" in text and ", 1 " in text and ", 2 a usage, network or server error" in text


# --- exit status and errors --------------------------------------------------------------------------


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_exits_2_with_one_line_when_nothing_answers(
    script: str, played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    closed = ThreadingHTTPServer(("127.0.0.1", 0), BaseHTTPRequestHandler)
    port = closed.server_address[1]
    closed.server_close()  # nothing listens on the port any more

    code, out, err = run(script, argv_for(script, f"127.0.0.1:{port}", played), capsys)

    assert code == 2
    assert out == ""
    assert err.strip().count("\n") == 0 and "cannot reach" in err, err


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_given_a_web_page_not_the_service_says_in_one_line_what_url_was_expected(
    script: str, played: Played, capsys: pytest.CaptureFixture[str]
) -> None:
    with web_page_server() as base:
        code, out, err = run(script, argv_for(script, base, played), capsys)

    assert code == 2
    assert out == ""
    assert err.strip().count("\n") == 0, err
    assert f"{base} is not a Zametano service" in err
    assert "expected the service's URL, such as http://127.0.0.1:8000" in err or (
        "expected a table's URL, such as http://127.0.0.1:8000/tables/<table_id>" in err)
    assert "<h1>" not in err and "<html" not in err


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_given_the_service_under_a_wrong_path_says_what_url_was_expected_not_werkzeugs_text(
    script: str, played: Played, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store) as base:
        code, out, err = run(script, argv_for(script, f"{base}/api", played), capsys)

    assert code == 2
    assert err.strip().count("\n") == 0, err
    assert f"{base}/api is not a Zametano service" in err
    assert WERKZEUG_404 not in err


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
@pytest.mark.parametrize(
    "status, body, content_type",
    [
        ("503 Service Unavailable", b'{"code": 503, "status": "Service Unavailable", "message": "store down"}',
         "application/json"),
        ("502 Bad Gateway", b"<html><body><h1>502 Bad Gateway</h1></body></html>", "text/html"),
    ],
    ids=["503-of-the-service", "502-page-of-a-proxy"],
)
def test_each_script_exits_2_on_a_server_error_and_never_prints_an_html_page(
    script: str, status: str, body: bytes, content_type: str, played: Played, store: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with serving(store, wrap=answering(status, body, content_type)) as base:
        code, out, err = run(script, argv_for(script, base, played), capsys)

    assert code == 2, out + err
    assert f"HTTP {status.split()[0]}" in err
    assert "<h1>" not in err and "Traceback" not in err


@pytest.mark.parametrize("script", ["demo", "verify-shoe", "audit"])
def test_each_script_exits_2_when_its_token_is_refused(
    script: str, played: Played, store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    with serving(store, tokens="operator:op-t-0123456789ab,auditor:au-t-0123456789ab") as base:
        code, out, err = run(script, [*argv_for(script, base, played), "--token", "wrong"], capsys)

    assert code == 2, out + err
    assert "HTTP 401" in err
