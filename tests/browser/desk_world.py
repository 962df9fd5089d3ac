"""What the desk's browser tests and scripts/desk-screenshots look at: the real server (gunicorn, SQLite) with an
operator's and an auditor's token, and tables of every game played over HTTP with random legal commands (the
demo's player: every field from the table's own `expects`)."""

from __future__ import annotations

import json
import random
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import requests

from tests.e2e.servers import Server, running_server
from tests.helpers import pick

GAMES = ["chemin-de-fer", "card-lottery", "punto-banco"]
TOKEN_KEY = "zametano.desk.token"  # where the desk keeps the token it was given, in the tab's sessionStorage
OPERATOR, AUDITOR, SURVEILLANCE = "desk-operator-token", "desk-auditor-token", "desk-surveillance-token"
TOKENS = f"operator:{OPERATOR},auditor:{AUDITOR},surveillance:{SURVEILLANCE}"
OPENINGS = {
    "chemin-de-fer": {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"], "rules": {"decks": 2}},
    "card-lottery": {"game": "card-lottery", "players": ["olga", "ivan", "anna", "boris"], "banker": "olga",
                     "dealer": "ivan"},
    "punto-banco": {"game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta"},
}


@contextmanager
def desk_server(folder: Path) -> Iterator[Server]:
    """The server, stopped with its workers when the block ends (tests/e2e/servers.py)."""
    env = {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(folder / "desk.sqlite"),
           "ZAMETANO_DATA_DIR": str(folder / "data"), "ZAMETANO_TOKENS": TOKENS}
    with running_server(env, folder / "server.log") as server:
        yield server


class Client:
    """The API over HTTP with one token."""

    def __init__(self, base: str, token: str = OPERATOR) -> None:
        self.base = base
        self.session = requests.Session()
        self.session.headers["Authorization"] = f"Bearer {token}"

    def close(self) -> None:
        self.session.close()

    def get(self, path: str, token: str | None = None) -> Any:
        headers = {"Authorization": f"Bearer {token}"} if token else None
        response = self.session.get(self.base + path, headers=headers, timeout=30)
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, path: str, body: dict[str, Any], **headers: str) -> Any:
        response = self.session.post(self.base + path, json=body, headers=headers, timeout=30)
        assert response.status_code in (200, 201), response.text
        return response.json()

    def open(self, game: str) -> dict[str, Any]:
        return self.post("/tables", OPENINGS[game])

    def play(self, table_id: str, state: dict[str, Any], done: Callable[[dict[str, Any]], bool], seed: int,
             most: int = 3000) -> dict[str, Any]:
        """Random legal commands until ``done(state)``; the last state."""
        rng = random.Random(seed)
        for _ in range(most):
            if done(state):
                return state
            # The operator sees no face-down card, so no hand's bounds: the moves are picked from every card's view.
            command, player, fields = pick(self.get(f"/tables/{table_id}", token=SURVEILLANCE), rng)
            state = self.post(f"/tables/{table_id}/commands", {"command": command, "player": player, **fields})["state"]
        raise AssertionError(f"table {table_id} never reached what was asked")


def rounds_finished(count: int) -> Callable[[dict[str, Any]], bool]:
    """Once `count` rounds are over (the state's round is the one in play or the next to start)."""
    return lambda state: state.get("round", 0) > count


def played_tables(client: Client) -> dict[str, str]:
    """One table of each game, by game: Chemin de fer and punto banco past a few rounds, the card lottery
    through a whole game (its decks revealed, so its rounds' card checks have run)."""
    tables = {}
    for seed, (game, done) in enumerate([("chemin-de-fer", rounds_finished(3)),
                                         ("card-lottery", lambda s: s.get("game_number", 1) > 1),
                                         ("punto-banco", rounds_finished(4))]):
        state = client.open(game)
        client.play(state["table_id"], state, done, seed)
        tables[game] = state["table_id"]
    return tables


@dataclass
class Desk:
    """A desk's server with a table of each game played on it (``tables``: by game)."""

    base: str
    client: Client
    tables: dict[str, str]


@contextmanager
def played_desk(folder: Path) -> Iterator[Desk]:
    """The server with one played table of each game, for a module's tests; stopped when the block ends."""
    with desk_server(folder) as server:
        client = Client(server)
        try:
            yield Desk(server, client, played_tables(client))
        finally:
            client.close()


def open_desk(page: Any, desk: Desk | str, path: str, token: str | None = OPERATOR) -> Any:
    """The desk's page at ``path`` (of ``desk``, or of the server at that base URL), the tab holding ``token`` as
    if it had been given (none: asked for)."""
    if token:
        page.add_init_script(f"sessionStorage.setItem({json.dumps(TOKEN_KEY)}, {json.dumps(token)})")
    page.goto((desk if isinstance(desk, str) else desk.base) + path)
    return page
