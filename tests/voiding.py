"""Rounds voided on each game, the same way through the service and over HTTP: play to an open round or to a
settled one, void it under two supervisors, and hand back what the checks compare (the money before the round).

A ``Driver`` sends a command and returns the state and the events it appended (through the service, or over
HTTP); the scenarios know nothing else of where they run."""

from __future__ import annotations

import random
from collections.abc import Callable
from typing import Any

from tests.helpers import random_args

Send = Callable[[str, str, dict[str, Any]], tuple[dict[str, Any], list[dict[str, Any]]]]
ACCOUNTS = ("house", "pot", "kitty")
TABLES = {
    "punto-banco": {"game": "punto-banco", "players": ["marta", "anna", "boris"], "croupier": "marta",
                    "rules": {"min_stake": 10, "max_stake": 1000, "decks": 6, "stop_card": 52}},
    "chemin-de-fer": {"game": "chemin-de-fer", "players": ["anna", "boris", "vera"],
                      "rules": {"decks": 2, "stop_card": 52}},
    "card-lottery": {"game": "card-lottery", "players": ["anna", "boris", "vera", "gleb"], "banker": "anna",
                     "dealer": "boris"},
}
# Where each game's round is open, every stake down and nothing paid (reached by the event named: Chemin de fer
# deals again after a tie too, in a round not yet begun), and the event that settles one.
OPEN_AT = {"punto-banco": "deal", "chemin-de-fer": "deal", "card-lottery": "lay_out"}
OPENED_BY = {"punto-banco": "StakesClosed", "chemin-de-fer": "StakesClosed", "card-lottery": "ContributionsCollected"}
SETTLES = {"punto-banco": "CoupDecided", "chemin-de-fer": "CoupSettled", "card-lottery": "PrizeWon"}


def money(state: dict[str, Any]) -> dict[str, int]:
    """Every balance and account of a state, the house's included."""
    return {**state["balances"], **{a: state[a] for a in ACCOUNTS if a in state}}


class Driver:
    """Plays a table with random legal commands (stakes and passes seldom, so that rounds end), keeping the
    money as it stood before each command."""

    def __init__(self, send: Send, state: dict[str, Any], seed: int = 5) -> None:
        self.send, self.state, self.rng = send, state, random.Random(seed)
        self.money_before_round = money(state)

    def step(self) -> list[dict[str, Any]]:
        expects = self.state["expects"]
        entry = self.rng.choices(expects, [1 if e["command"] in ("place_stake", "pass", "pass_bank") else 4
                                           for e in expects])[0]
        before = money(self.state)
        self.state, events = self.send(entry["command"], entry["player"], random_args(self.state, entry, self.rng))
        if any(e["type"] in ("StakePlaced", "ContributionsCollected") for e in events):
            # A round's money: a stake moves none until the coup is settled, the Card lottery's collect moves it
            # at once; either way the money before the command is the money before the round.
            self.money_before_round = before
        return events

    def to_open_round(self, game: str, limit: int = 400) -> None:
        """Plays until the round is open with its stakes closed (the Card lottery: collected), nothing paid."""
        for _ in range(limit):
            events = self.step()
            if self.state["phase"] == OPEN_AT[game] and any(e["type"] == OPENED_BY[game] for e in events):
                return
        raise AssertionError(f"{game} never reached {OPEN_AT[game]}")

    def to_settled_round(self, game: str, limit: int = 400) -> list[dict[str, Any]]:
        """Plays until a command settles a round with payments; its events."""
        for _ in range(limit):
            before = money(self.state)
            events = self.step()
            if any(e["type"] == SETTLES[game] for e in events) and any(e["type"] == "PaymentMade" for e in events):
                self.money_before_round = before
                return events
        raise AssertionError(f"{game} never settled a round")


    def to_shoe_revealed(self, limit: int = 2000) -> None:
        """Plays until a shoe's seed is revealed (its every card then checked against it)."""
        for _ in range(limit):
            if any(e["type"] == "ShoeRevealed" for e in self.step()):
                return
        raise AssertionError("no shoe was revealed")


def void(send_as: Callable[[str, str, dict[str, Any]], dict[str, Any]], round_: int,
         reason: str = "misdeal") -> dict[str, Any]:
    """A round voided: requested by sara, approved by simon; the approval's answer. ``send_as(token_name,
    command, fields)`` sends a correction command in that supervisor's name."""
    asked = send_as("sara", "request_correction", {"kind": "void_round", "round": round_, "reason": reason,
                                                   "note": "seen on the camera"})
    request = asked["state"]["corrections"][-1]["request"]
    return send_as("simon", "approve_correction", {"request": request})
