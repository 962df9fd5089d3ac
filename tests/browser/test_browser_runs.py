"""The browser the desk's tests drive: found, launched, and able to run the WebCrypto the desk needs."""

from __future__ import annotations

import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from tests.browser.conftest import find_chromium


class _Page(BaseHTTPRequestHandler):
    def do_GET(self) -> None:  # noqa: N802 - the standard library's name
        body = b"<!doctype html><p>desk</p>"
        self.send_response(200)
        self.send_header("Content-Type", "text/html")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def local_page():
    """WebCrypto exists only in a secure context: a page of http://127.0.0.1 is one, about:blank is not."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Page)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        server.server_close()


def test_a_named_chromium_that_is_not_there_is_not_found(tmp_path):
    assert find_chromium({"ZAMETANO_CHROMIUM": str(tmp_path / "nothing"), "PATH": ""}) is None
    assert find_chromium({"PATH": str(tmp_path)}) is None


def test_the_browser_has_webcryptos_sha256_hmac_and_ed25519(page, local_page):
    page.goto(local_page)
    algorithms = page.evaluate(
        """async () => {
            const out = {};
            const bytes = new TextEncoder().encode("abc");
            const d = new Uint8Array(await crypto.subtle.digest("SHA-256", bytes));
            out.sha256 = Array.from(d, b => b.toString(16).padStart(2, "0")).join("");
            const key = await crypto.subtle.importKey("raw", bytes, {name: "HMAC", hash: "SHA-256"}, false, ["sign"]);
            out.hmac = (await crypto.subtle.sign("HMAC", key, bytes)).byteLength;
            const pair = await crypto.subtle.generateKey({name: "Ed25519"}, true, ["sign", "verify"]);
            const sig = await crypto.subtle.sign("Ed25519", pair.privateKey, bytes);
            out.ed25519 = await crypto.subtle.verify("Ed25519", pair.publicKey, sig, bytes);
            return out;
        }"""
    )
    assert algorithms == {
        "sha256": "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad",
        "hmac": 32,
        "ed25519": True,
    }
    assert page.console_errors == []
