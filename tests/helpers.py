"""Small helpers shared by the tests: deterministic seeds and clocks, stacked shoes, random legal play."""

from __future__ import annotations

import random
from collections.abc import Iterator
from contextlib import contextmanager
from datetime import datetime, timedelta, timezone
from typing import Any

import domain.table

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
def stacked_shoe(top: list[str]) -> Iterator[None]:
    """Every 'shoe' deck (not the lots) starts, after the cut, with the given cards: a rigged shoe for
    stories that need particular hands. Lots and the rest of the shoe stay as the fair shuffle made them."""
    original = domain.table.shoe_order

    def rigged(seed: bytes, decks: int, position: int = 0) -> list[str]:
        cards = original(seed, decks, position)
        if decks == 1:
            return cards  # the lots deck
        rest = list(cards)
        for c in top:
            rest.remove(c)
        return list(top) + rest

    domain.table.shoe_order = rigged
    try:
        yield
    finally:
        domain.table.shoe_order = original


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
