"""Small helpers shared by the tests: deterministic seeds and clocks, stacked shoes, random legal play."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

from domain.table import Table

START = datetime(2026, 11, 29, 20, 15, 3, tzinfo=timezone.utc)


class StepClock:
    """A clock that moves a fixed step at every reading: tests name moments exactly."""

    def __init__(self, start: datetime = START, step: timedelta = timedelta(seconds=1)) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> datetime:
        self.now += self.step
        return self.now


class Seeds:
    """Deterministic 32-byte seeds."""

    def __init__(self, seed: int = 0) -> None:
        self.rng = random.Random(seed)

    def __call__(self) -> bytes:
        return self.rng.randbytes(32)


@contextmanager
def stacked_decks(tops: dict[str, list[str]]) -> Iterator[None]:
    """Each deck named in ``tops`` ("shoe", "banker", "dealer", "lots") is dealt, after its cut, starting
    with the given cards; the rest of it stays as the fair shuffle made it. A rigged deck for stories that
    need particular hands; replays inside the block see the same order."""
    original = Table._deck_order

    def rigged(label: str, seed_hex: str, decks: int, cut: int) -> list[str]:
        cards = original(label, seed_hex, decks, cut)
        if label not in tops:
            return cards
        rest = list(cards)
        for c in tops[label]:
            rest.remove(c)
        return list(tops[label]) + rest

    Table._deck_order = staticmethod(rigged)  # type: ignore[method-assign]
    try:
        yield
    finally:
        Table._deck_order = staticmethod(original)  # type: ignore[method-assign]


def stacked_shoe(top: list[str]):  # type: ignore[no-untyped-def]
    """A Chemin de fer shoe that starts with the given cards."""
    return stacked_decks({"shoe": top})


def random_args(state: dict[str, Any], command: str, rng: random.Random) -> dict[str, Any]:
    """Legal-looking fields for a command, chosen at random from what the state allows."""
    if command == "cut":
        size = state["shoe"]["dealt"] + state["shoe"]["remaining"]
        return {"position": rng.randint(1, size - 1)}
    if command == "post_bank":
        return {"amount": rng.choice([10, 50, 100, 500])}
    if command == "place_stake":
        room = state["bank"] - sum(state["stakes"].values())
        return {"amount": rng.randint(1, room)}
    return {}


def pick(state: dict[str, Any], rng: random.Random) -> tuple[str, str, dict[str, Any]]:
    expect = rng.choice(state["expects"])
    return expect["command"], expect["player"], random_args(state, expect["command"], rng)
