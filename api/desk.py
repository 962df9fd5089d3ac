"""The desk: pages to watch, replay, audit and play any table in a browser (docs/desk.md).

Every desk route answers the same HTML shell; the page's own scripts (plain ES modules, no build step) render
the view its location names, reading the API with the token the person enters in the page. The routes and the
files are open and serve no table data themselves: a browser sends no token with a page it navigates to. The
files are the package's own (package data in pyproject.toml), and the page loads nothing from another host:
its Content-Security-Policy tells the browser so too.
"""

from __future__ import annotations

import functools
from pathlib import Path, PurePosixPath
from string import Template
from typing import Any

from flask import Blueprint, Response, abort, request, send_from_directory
from markupsafe import escape

ASSETS = Path(__file__).resolve().parent / "static" / "desk"
SHELL_FILE = "shell.html"
# The only kinds of file served; the shell itself is not one of them (it is only ever served filled in).
TYPES = {".js": "text/javascript", ".css": "text/css", ".svg": "image/svg+xml"}
# Scripts, styles, images and API calls of this origin only; no inline script or style, no frames, no forms
# sent anywhere (the page's forms are read by its scripts).
POLICY = ("default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; "
          "base-uri 'none'; form-action 'none'; frame-ancestors 'none'")
# Revalidated (ETag) at each load: a new version of the desk is seen at once.
HEADERS = {"Content-Security-Policy": POLICY, "X-Content-Type-Options": "nosniff", "Referrer-Policy": "no-referrer",
           "Cache-Control": "no-cache"}
# Each view of the desk has its own link; the page's router (static/desk/app.js) reads the same paths.
VIEWS = ("/desk", "/desk/", "/desk/tables/<table_id>", "/desk/tables/<table_id>/rounds",
         "/desk/tables/<table_id>/rounds/<int:number>", "/desk/tables/<table_id>/verify", "/desk/seat",
         "/desk/seat/tables/<table_id>")

blp = Blueprint("desk", __name__)


@functools.cache
def _shell() -> Template:
    return Template((ASSETS / SHELL_FILE).read_text(encoding="utf-8"))


def shell(**_view: Any) -> Response:
    """The page of every view: where the app is mounted is filled in, so that its files and API calls carry
    the path prefix a proxy may add."""
    html = _shell().substitute(root=escape(request.script_root))
    response = Response(html, mimetype="text/html")
    response.headers.update(HEADERS)
    return response


for _rule in VIEWS:
    blp.add_url_rule(_rule, view_func=shell, endpoint="view")


@blp.route("/desk/static/<path:name>")
def asset(name: str) -> Response:
    """One of the page's files (send_from_directory refuses any path outside the folder)."""
    mimetype = TYPES.get(PurePosixPath(name).suffix)
    if mimetype is None:
        abort(404)
    response = send_from_directory(ASSETS, name, mimetype=mimetype)
    response.headers.update(HEADERS)
    return response
