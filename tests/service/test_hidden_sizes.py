"""A hidden part's value changes nothing a reader is given but its commitment (docs/design.md "Hidden
information"): every value of every part hidden from a reader put in its place, the event he is shown is the same
text, of the same size, whatever the value, but for the commitment, which is of one length.

The sight is applied here as every output applies it (``present``), to the events of half-played tables of each
game, for each reader at the table's head.
"""

from __future__ import annotations

import copy
import random
import re
from typing import Any

import pytest

from domain import chain
from domain.sight import AUDITOR, CROUPIER, PLAYER, Viewer
from tests.helpers import play_service
from tests.hidden_parts import CARDS, TOTALS

COMMITMENT = re.compile(r"commit:[0-9a-f]{64}")
TABLES: dict[str, tuple[list[str], dict[str, Any]]] = {
    "chemin-de-fer": (["anna", "boris", "vera"], {"rules": {"decks": 2, "stop_card": 52, "auto_forced": False}}),
    "punto-banco": (["marta", "anna", "boris"], {"croupier": "marta", "rules": {"decks": 6, "stop_card": 52}}),
    "card-lottery": (["anna", "boris", "vera"], {"banker": "vera", "dealer": "boris", "rules": {"dealer_plays": True}}),
}
READERS = [Viewer(PLAYER, "anna"), Viewer(PLAYER, "boris"), CROUPIER, Viewer(AUDITOR)]


@pytest.fixture
def persistence_env() -> dict[str, str]:
    """In memory alone: the sight is the same on every store (tests/e2e/test_hidden_parts_over_http.py reads
    SQLite and PostgreSQL tables over HTTP)."""
    return {"PERSISTENCE_MODULE": "eventsourcing.popo"}


def candidates(value: Any) -> list[Any]:
    """Every value a hidden part could hold, told by the kind of the one it holds: a card or a total."""
    return CARDS if isinstance(value, str) else TOTALS


def hidden(seen: Any, event: dict[str, Any]) -> list[str]:
    """The pointers of the parts of ``event`` hidden from ``seen``."""
    spots = seen.concealment.spots(event["type"], event["data"], event["version"])
    return [s.pointer for s in spots if seen.hides(s.owner, s.match)]


def shown_texts(seen: Any, event: dict[str, Any], pointer: str) -> tuple[set[str], int]:
    """The event as ``seen`` shows it, with each value in place at ``pointer`` that would be as hidden there: its
    texts and how many values were tried, each commitment made one placeholder (it is of one length: checked
    apart). A value that the table has shown since (a Card lottery card played face up) is one the reader already knows is not there, and a card of a
    pile that was never dealt to its holder one the log rules out: both left out (the sight decides by the log)."""
    texts, kept = set(), 0
    for value in candidates(chain.value_at(event["data"], pointer)):
        tried = copy.deepcopy(event)
        tried["data"] = chain.committed(tried["data"], {pointer: value})
        if pointer not in hidden(seen, tried):
            continue
        kept += 1
        text = chain.canonical_json(seen.shown_event(tried))
        assert all(len(c) == len("commit:") + 64 for c in COMMITMENT.findall(text))
        texts.add(COMMITMENT.sub("commit:" + "0" * 64, text))
    assert kept >= 1, (event["type"], pointer)  # the value held is always among them
    return texts, kept


@pytest.mark.parametrize("game", TABLES)
def test_every_value_of_a_hidden_part_gives_each_reader_the_same_text_and_size(make_service, game: str) -> None:
    service = make_service()
    players, fields = TABLES[game]
    roles = {k: v for k, v in fields.items() if k != "rules"}
    table_id = service.open_table(game, players, fields["rules"], **roles)["table_id"]
    rng, compared = random.Random(38), 0
    for _ in range(3):  # three moments of the table, each read at its head
        play_service(service, table_id, 20, rng)
        everything = service.events_page(table_id, limit=1000)["events"]
        for viewer in READERS:
            seen = service.seen_now(table_id, viewer)
            for event in everything:
                for pointer in hidden(seen, event):
                    texts, kept = shown_texts(seen, event, pointer)
                    assert len(texts) == 1, (game, viewer, event["type"], pointer)
                    compared += kept > 1
    assert compared > 0, game  # the tables were caught with parts hidden, each with values to try
