"""A baccarat table's roads for one shoe at one moment, read from its stored log (GET /tables/{id}/roads).

The roads are a read model of the log: each game that keeps them says which event decides a coup and what it
decided (its ``Roads``, domain/game.py), and domain/roads.py draws them. Nothing is stored for them: the read
model's shoe rows only say where in the log a shoe's shuffle is, so a shoe is read from its shuffle to the next
shuffle of its deck (or the moment asked), never the whole log, and only the rows of shuffles and of the events
that decide coups are decoded; each place the rows give is checked against the event found there, and where they
are missing (a shuffle the follower has not indexed yet) or wrong, the log is read on from the last shuffle they
place right, or from the start. Coups are read once decided, from events that show their cards face up: the
roads tell nothing of a card not yet shown.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from domain.game import Roads
from domain.games import GAMES
from domain.roads import OUTCOMES, ROWS, Cell, Coup, roads
from service import present
from service.errors import NotFoundInHistory
from service.history import TableHistory

BATCH = 500  # events read at a time
SHUFFLED = "ShoeShuffled"  # the shared event that starts every deck


def table_roads(history: TableHistory, table_id: str, upto: int, shoe: int | None = None) -> dict[str, Any]:
    """The roads of ``shoe`` (by default the last shuffled by version ``upto``) as the log stood at ``upto``.

    NotFoundInHistory: the table's game keeps no roads, or it has no such shoe by then."""
    game = GAMES[_opening(history, table_id)["data"]["game"]]
    if game.roads is None:
        keeping = " and ".join(sorted(g.title for g in GAMES.values() if g.roads is not None))
        raise NotFoundInHistory(f"Table '{table_id}' is a {game.title} table, which has no roads; roads are kept "
                                f"for baccarat tables: {keeping}.")
    shoes, tail = _shoes(history, table_id, game.roads, upto)
    if shoe is None:
        shoe = shoes[-1][0] if shoes else None
    elif shoe not in dict(shoes):
        have = ", ".join(str(n) for n, _ in shoes) or "none yet"
        raise NotFoundInHistory(f"Table '{table_id}' has no shoe {shoe} of coups by version {upto}; "
                                f"its shoes: {have}.")
    if shoe is None or shoe in tail:
        coups = tail.get(shoe, [])
    else:
        coups = _coups(history, table_id, game.roads, dict(shoes)[shoe], upto)
    return {"shoe": shoe, "shoes": [n for n, _ in shoes], "coups": len(coups), **summary(coups),
            **drawn(coups)}


def summary(coups: list[Coup]) -> dict[str, Any]:
    """How many coups each outcome, natural and pair took."""
    counts = dict.fromkeys(OUTCOMES, 0)
    for c in coups:
        counts[c.outcome] += 1
    return {"totals": {**counts,
                       "natural": sum(1 for c in coups if c.natural),
                       "banker_pair": sum(1 for c in coups if c.banker_pair),
                       "player_pair": sum(1 for c in coups if c.player_pair)}}


def drawn(coups: list[Coup]) -> dict[str, Any]:
    """Every road, each cell as the API shows it (docs/api.md, "Roads")."""
    out: dict[str, Any] = {"rows": ROWS}
    for name, cells in roads(coups).items():
        out[name] = [_cell(name, c, coups[c.coup - 1]) for c in cells]
    return out


def _cell(road: str, cell: Cell, coup: Coup) -> dict[str, Any]:
    shown: dict[str, Any] = {"column": cell.column, "row": cell.row, "coup": cell.coup}
    if road in ("bead_plate", "big_road"):
        shown |= {"outcome": cell.mark, "natural": coup.natural, "banker_pair": coup.banker_pair,
                  "player_pair": coup.player_pair}
        if road == "big_road":
            shown["ties"] = cell.ties
    else:
        shown["colour"] = cell.mark
    return shown


def _opening(history: TableHistory, table_id: str) -> dict[str, Any]:
    history.require_table(table_id)
    return present.events(history.read_events(table_id, after=0, upto=1))[0]


def _event_at(history: TableHistory, table_id: str, version: int) -> dict[str, Any] | None:
    found = history.read_events(table_id, after=version - 1, upto=version)
    return present.events(found)[0] if found else None


def _starts(e: dict[str, Any] | None, deck: str, number: int | None = None) -> bool:
    """Whether the event is the shuffle of a deck of coups (numbered ``number``, where given)."""
    return (e is not None and e["type"] == SHUFFLED and e["data"]["deck"] == deck
            and (number is None or e["data"]["shoe"] == number))


def _shoes(history: TableHistory, table_id: str, hook: Roads,
           upto: int) -> tuple[list[tuple[int, int]], dict[int, list[Coup]]]:
    """The table's shoes of coups shuffled by ``upto``, each (number, version of its shuffle), and the coups of
    those the log was read through: the read model's rows, each held to the event at the version it gives,
    then the log from the last of them placed right (the follower may not have indexed the newest yet)."""
    rows = [r for r in history.indexed_shoes(table_id, None) if r["shuffled_version"] <= upto]
    deck = hook.deck
    found, after = [], 0
    for row in rows:
        version = row["shuffled_version"]
        e = _event_at(history, table_id, version)
        if _starts(e, deck, row["shoe"]):
            found.append((row["shoe"], version))
            after = max(after, version)
    tail: dict[int, list[Coup]] = {}
    current = next((n for n, v in reversed(found) if v == after), None)
    if current is not None:
        tail[current] = []
    for e in _log(history, table_id, hook, after, upto):
        if _starts(e, deck):
            current = e["data"]["shoe"]
            found.append((current, e["version"]))
            tail[current] = []
        elif current is not None and _voided(e):
            del tail[current][-1:]
        elif current is not None and (coup := hook.decided(e)) is not None:
            tail[current].append(coup)
    return sorted(set(found), key=lambda s: s[1]), tail


def _coups(history: TableHistory, table_id: str, hook: Roads, start: int, upto: int) -> list[Coup]:
    """The coups decided from the shuffle at ``start`` up to ``upto`` or the next shuffle of the deck."""
    coups = []
    for e in _log(history, table_id, hook, start, upto):
        if _starts(e, hook.deck):
            break
        if _voided(e):
            del coups[-1:]
            continue
        coup = hook.decided(e)
        if coup is not None:
            coups.append(coup)
    return coups


def _voided(e: dict[str, Any]) -> bool:
    """A settled round voided (docs/api.md "Corrections"): the coup it decided, the shoe's latest, leaves the roads,
    as a voided coup leaves a scoreboard. (A round voided before its settlement decided no coup.)"""
    return e["type"] == "RoundVoided" and e["data"]["settled"] is True


def _log(history: TableHistory, table_id: str, hook: Roads, after: int, upto: int) -> Iterator[dict[str, Any]]:
    """The shuffles and the events that decide coups after version ``after`` up to ``upto``, as recorded, read
    in batches (the rows of other events are not decoded)."""
    types = frozenset((SHUFFLED, "RoundVoided", *hook.events))
    while after < upto:
        batch, last = history.events_of_types(table_id, types, after=after, upto=upto, limit=BATCH)
        yield from present.events(batch)
        if last is None or last >= upto:
            return
        after = last
