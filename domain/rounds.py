"""Where each round of a table starts and ends, read from its events (each game's "Rounds" in docs/rules/).

The tracker reads events in version order, one at a time, with a small state that is plain JSON (so a
read model can keep it between batches). A round opens at an event the game names, and closes at the end
of the command that settles it, or just before the next round opens within that same command. The
events are the dicts the events API shows: ``version``, ``type``, ``timestamp``, ``actor``, ``data``,
``command``.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

Event = dict[str, Any]


@dataclass(frozen=True)
class RoundMarks:
    """A game's reading of rounds: what opens one, what settles it, how to summarise it, and, for the
    docs, what a round of the game is."""

    opens: Callable[[Event, dict[str, Any]], bool]
    closes: Callable[[Event, dict[str, Any]], bool]
    note: Callable[[Event, dict[str, Any], dict[str, Any]], None]
    describe: Callable[[dict[str, Any]], str]
    doc: str = ""


class RoundTracker:
    def __init__(self, marks: RoundMarks, state: dict[str, Any] | None = None) -> None:
        self.marks = marks
        self.state: dict[str, Any] = state or {"rounds": 0, "open": None, "closing": None, "last": None, "game": {}}

    def feed(self, e: Event) -> list[dict[str, Any]]:
        """Reads the next event; returns the rounds it proves finished."""
        st, finished = self.state, []
        if st["closing"] is not None and e["command"] != st["closing"]:
            finished.append(self._finish())
        if self.marks.opens(e, st["game"]):
            if st["open"] is not None:
                finished.append(self._finish())
            st["rounds"] += 1
            st["open"] = {
                "round": st["rounds"], "first_version": e["version"], "started_at": e["timestamp"], "summary": {}
            }
        if st["open"] is not None:
            self.marks.note(e, st["game"], st["open"]["summary"])
            if self.marks.closes(e, st["game"]):
                st["closing"] = e["command"]
        st["last"] = {"version": e["version"], "timestamp": e["timestamp"]}
        return finished

    def flush(self) -> list[dict[str, Any]]:
        """At a command boundary (the head of the log): a round whose settling command is complete is finished."""
        return [self._finish()] if self.state["closing"] is not None else []

    def _finish(self) -> dict[str, Any]:
        st = self.state
        opened, last = st["open"], st["last"]
        st["open"], st["closing"] = None, None
        return {
            "round": opened["round"],
            "first_version": opened["first_version"],
            "last_version": last["version"],
            "started_at": opened["started_at"],
            "ended_at": last["timestamp"],
            "summary": self.marks.describe(opened["summary"]),
        }
