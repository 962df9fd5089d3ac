"""Views per viewer, checked from outside: which face-down card each event hides from whom until when, worked
out from the full log (a surveillance token's) by the rules of the games, independently of domain/sight.py;
and a driver that plays a self-acting table with each player's own token, over any HTTP client."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tests.helpers import pick

HIDDEN = "??"
# The events that show a face-down card to all, and how each names the cards it shows.
# (The lottery cards turned name cards of the banker's deck: a holder's card of the same name stays hidden.)
SHOWS: dict[str, Callable[[dict[str, Any]], list[str]]] = {
    "PrizeWon": lambda d: [d["card"]],
    "CardsLed": lambda d: d["cards"],
    "CardsBeaten": lambda d: d["cards"],
    "CardPlayed": lambda d: [d["card"]],
}


class Oracle:
    """Every face-down card of a full log: who it was dealt to, and the version that shows it to all (None:
    not yet). Card lottery cards are named once in a deck, so a card is followed by its name in its deck."""

    def __init__(self, full: list[dict[str, Any]]) -> None:
        self.cards: dict[int, dict[str, Any]] = {}  # the version of its CardDealt -> the card
        self.over: dict[int, int] = {}  # lottery: the version at which a holder's card's round was over
        decks: dict[int, str] = {}
        for e in full:
            kind, data, v = e["type"], e["data"], e["version"]
            if kind == "ShoeShuffled":
                decks[data["shoe"]] = data["deck"]
            elif kind == "CardDealt" and not data["face_up"]:
                self.cards[v] = {"card": data["card"], "to": data["to"], "shoe": data["shoe"],
                                 "deck": decks[data["shoe"]], "shown": None, "over": None}
            for card in self._open():
                self._show(card, kind, data, v)

    def _open(self) -> list[dict[str, Any]]:
        return [c for c in self.cards.values() if c["shown"] is None]

    @staticmethod
    def _show(card: dict[str, Any], kind: str, data: dict[str, Any], v: int) -> None:
        if kind == "ShoeRevealed" and data["shoe"] == card["shoe"]:
            card["shown"] = v
        elif kind == "HandsShown" and card["deck"] == "shoe":
            card["shown"] = v
        elif kind == "LotteryCardsRevealed" and card["deck"] == "banker":
            card["shown"] = v
        elif kind in SHOWS and card["deck"] == "dealer" and card["card"] in SHOWS[kind](data):
            card["shown"] = v
        elif kind in ("CardsSetAside", "Stage2Ended") and card["over"] is None and card["deck"] != "banker":
            card["over"] = v

    def hidden_from(self, viewer: str, version: int, at: int, auditor_now: int | None = None) -> bool:
        """Whether the card dealt at ``version`` must read "??" to ``viewer`` (a player's name, "operator",
        "auditor") reading at version ``at`` (``auditor_now``: the head, for what an auditor may see since)."""
        card = self.cards[version]
        if viewer == card["to"] or (card["shown"] is not None and card["shown"] <= at):
            return False
        if viewer == "auditor" and auditor_now is not None:
            return not ((card["over"] is not None and card["over"] <= auditor_now)
                        or (card["shown"] is not None and card["shown"] <= auditor_now))
        return True

    def held_by(self, holder: str, name: str, before: int) -> int:
        """The version that dealt ``name`` from the dealer's deck (a holder's pile or hand) face down to ``holder``
        last before ``before``: the banker holds the lottery cards too, from the other deck."""
        return max(v for v, c in self.cards.items()
                   if c["to"] == holder and c["card"] == name and c["deck"] == "dealer" and v < before)


def check_events(oracle: Oracle, shown: list[dict[str, Any]], full: dict[int, dict[str, Any]], viewer: str, at: int,
                 auditor_now: int | None = None) -> int:
    """Every event ``viewer`` received, read at version ``at``, against the full one: each hidden part "??"
    exactly where the oracle says, everything else as recorded, the digest as recorded. The number of
    hidden parts seen (so a test can tell it saw some)."""
    hidden = 0
    for e in shown:
        whole = full[e["version"]]
        assert e["digest"] == whole["digest"]
        expected = _expected(oracle, whole, viewer, at, auditor_now)
        assert e["data"] == expected, (viewer, at, e, whole)
        hidden += str(expected).count(HIDDEN) + (expected.get("total", 0) is None)
    return hidden


def _expected(oracle: Oracle, e: dict[str, Any], viewer: str, at: int, auditor_now: int | None) -> dict[str, Any]:
    data, kind, v = e["data"], e["type"], e["version"]
    hides = lambda dealt: oracle.hidden_from(viewer, dealt, at, auditor_now)  # noqa: E731
    if kind == "CardDealt" and not data["face_up"] and hides(v):
        return {**data, "card": HIDDEN}
    if kind == "HandStood":
        own = [d for d, c in oracle.cards.items() if c["to"] == data["player"] and c["deck"] == "shoe" and d < v]
        if own and hides(max(own)):
            return {**data, "total": None}
    field = {"CardsSetAside": "piles", "Stage2Began": "hands"}.get(kind)
    if field:
        return {**data, field: {h: [HIDDEN if hides(oracle.held_by(h, c, v)) else c for c in cards]
                                for h, cards in data[field].items()}}
    return data


def drive(post: Callable[[str, str, str | None, dict[str, Any]], dict[str, Any]], table_id: str, tokens: dict[str, str],
          surveillance: str, read: Callable[[str, str], dict[str, Any]], done: Callable[[list[dict[str, Any]]], bool],
          after_each: Callable[[dict[str, Any], str], None], seed: int = 7, most: int = 3000) -> list[dict[str, Any]]:
    """Plays the table with random legal commands, each posted with its player's own token (an expected
    player without one: the operator's, None), until ``done(the full log so far)``; ``after_each(response,
    player)`` sees each command's response as its player got it."""
    rng = random.Random(seed)
    events: list[dict[str, Any]] = []
    for _ in range(most):
        state = read(f"/tables/{table_id}", surveillance)
        command, player, args = pick(state, rng)
        response = post(f"/tables/{table_id}/commands", player, tokens.get(player),
                        {"command": command, "player": player, **args})
        after_each(response, player)
        events += read_log(read, table_id, surveillance, len(events))
        if done(events):
            return events
    raise AssertionError("the table never got where the test needs")


def read_log(read: Callable[[str, str], dict[str, Any]], table_id: str, token: str, after: int | None = 0) -> list[dict[str, Any]]:
    events: list[dict[str, Any]] = []
    while after is not None:
        page = read(f"/tables/{table_id}/events?after={after}&limit=1000", token)
        events += page["events"]
        after = page["next_after"]
    return events
