"""The rounds a table's own log gives, and the read model's rows held to them field by field.

The read model may tell an audit where to look, never what happened: the rounds (their bounds, times and
summaries), the table's row and its shoes are derived again here from the stored events, with the same
RoundTracker the indexer uses (domain/rounds.py), and every disagreement is a ``read_model`` problem that
names the round (or shoe) and the field.
"""

from __future__ import annotations

from typing import Any

from domain.games import ROUND_MARKS
from domain.rounds import RoundTracker
from domain.table import TableEvent
from service import present
from service.audit import checkpoints
from service.history import TableHistory

AHEAD = 250  # rows read with a checkpoint's at most (a round audit's page)

ROUND_FIELDS = ("first_version", "last_version", "started_at", "ended_at", "summary")
SHOE_FIELDS = ("shuffled_version", "revealed_version", "deck", "decks", "algorithm", "commitment", "cut", "seed")


def finding(version: int | None, message: str, field: str, round_: int | None = None) -> dict[str, Any]:
    """A ``read_model`` problem: the field (and round) where the read model says other than the log."""
    return {"check": "read_model", "version": version, "type": None, "message": message, "round": round_,
            "field": field}


class LogRounds:
    """The rounds of a table read from its events in version order, from version 1. A break in the log (a
    version missing or unreadable) stops it: the rounds after it cannot be told, and ``horizon`` says how
    far the rounds it gives are known."""

    def __init__(self, table_id: str) -> None:
        self.table_id = table_id
        self.game = ""
        self.tracker: RoundTracker | None = None
        self.finished: list[dict[str, Any]] = []
        self.horizon = 0  # the last version fed without a break before it
        self.stopped = False
        self.broken = False

    def resume(self, history: TableHistory, number: int, through: int | None = None) -> int:
        """Starts from the latest checkpoint before round ``number`` whose event is still the one it was
        made at (service/audit/checkpoints.py); returns the version to read after (0: from the start).
        ``through``: the version the caller reads on to, read with the checkpoint's row (at most AHEAD more
        rows), for a history that keeps what it read."""
        for version, digest, game, state in checkpoints.before_round(self.table_id, number):
            ahead = min(max((through or version) - version, 0), AHEAD)
            rows = [row for row in history.stored_rows(self.table_id, version - 1, None, limit=1 + ahead)[:1]
                    if row[0] == version]  # the checkpoint's own row, unless it is missing
            if rows and rows[0][1] is not None and rows[0][1].digest == digest:
                self.game, self.tracker, self.horizon = game, RoundTracker(ROUND_MARKS[game], state), version
                return version
            checkpoints.forget(self.table_id)  # the log changed under it: read it from the start
            break
        return 0

    @property
    def known(self) -> int:
        """A round ending at this version or after it may be finished in the log without the tracker knowing:
        the log broke (the round's end needs the event after it) or ended (its end is past the log's, which
        the chain check names)."""
        return self.horizon if self.broken else self.horizon + 1

    def feed(self, version: int, e: TableEvent | None) -> None:
        if self.stopped:
            return
        if self.tracker is None and e is not None and e.type == "TableOpened" and version == 1:
            self.game = getattr(e, "game", "")
            marks = ROUND_MARKS.get(self.game)
            self.tracker = RoundTracker(marks) if marks is not None else None
        try:
            if e is None or version != self.horizon + 1 or self.tracker is None:
                raise ValueError(version)
            self.finished += self.tracker.feed(present.event(e))
        except Exception:  # noqa: BLE001 - a break, or an altered event the tracker cannot read: named by the chain check
            self.stopped = self.broken = True
            return
        self.horizon = version
        if version % checkpoints.EVERY == 0:
            checkpoints.keep(self.table_id, version, e.digest, self.game, self.tracker.state)

    def close(self) -> None:
        """At the end of the stored log, which ends at a command's end: a round being settled is finished."""
        if self.tracker is not None and not self.stopped:
            self.finished += self.tracker.flush()
            self.stopped = True

    def round(self, number: int) -> dict[str, Any] | None:
        return next((r for r in reversed(self.finished) if r["round"] == number), None)


def compare_round(row: dict[str, Any], truth: dict[str, Any] | None, known: int) -> list[dict[str, Any]]:
    """A read model's row of a round against the round as the log gives it (``known``: LogRounds.known)."""
    number = row["round"]
    if truth is None:
        if row["last_version"] >= known:
            return []  # not told by the log, which broke or ended before the round's end: the chain check names it
        return [finding(row["first_version"], f"round {number}: the read model lists it at versions "
                                              f"{row['first_version']} to {row['last_version']}, but the log has no "
                                              f"finished round {number}", "round", number)]
    return [
        finding(truth["first_version"], f"round {number}: the read model's {name} is {row[name]!r}; the log "
                                        f"gives {truth[name]!r}", name, number)
        for name in ROUND_FIELDS if row.get(name) != truth[name]
    ]


def compare_rounds(rows: list[dict[str, Any]], log: LogRounds, indexed_version: int) -> list[dict[str, Any]]:
    """Every row of the read model's rounds against the log, and every round the log finished by the
    version the read model indexed that the read model does not list."""
    problems: list[dict[str, Any]] = []
    listed = set()
    for row in rows:
        listed.add(row["round"])
        problems += compare_round(row, log.round(row["round"]), log.known)
    for truth in log.finished:
        if truth["last_version"] <= indexed_version and truth["round"] not in listed:
            problems.append(finding(truth["first_version"], f"round {truth['round']}: the log finishes it at "
                                                            f"versions {truth['first_version']} to "
                                                            f"{truth['last_version']}, but the read model does not "
                                                            "list it", "round", truth["round"]))
    return problems


def compare_table(row: dict[str, Any], opened: TableEvent | None, log: LogRounds, updated_at: str | None) -> list[dict[str, Any]]:
    """The read model's row of the table: its game, players and opening time against TableOpened, its count
    of rounds against the rounds the log finished by its version, its time against the event at its version."""
    truth: dict[str, Any] = {}
    if row["version"] == 0:
        return []  # listed with nothing indexed, as a table the read model failed on first: an index problem
    if opened is not None and opened.type == "TableOpened":
        truth.update(game=opened.game, players=opened.players, opened_at=opened.timestamp_text)  # type: ignore[attr-defined]
    if row["version"] <= log.horizon:
        truth["rounds"] = sum(1 for r in log.finished if r["last_version"] <= row["version"])
        if updated_at is not None:
            truth["updated_at"] = updated_at
    return [
        finding(row["version"] if name in ("rounds", "updated_at") else 1,
                f"the table: the read model's {name} is {row[name]!r}; the log gives {value!r}", name)
        for name, value in truth.items() if row.get(name) != value
    ]


def compare_shoes(rows: list[dict[str, Any]], shoes: dict[Any, dict[str, Any]]) -> list[dict[str, Any]]:
    """The read model's rows of the shoes against the shoes of the log up to the version it indexed
    (``shoes``: ShoeLog records of the events up to there)."""
    problems: list[dict[str, Any]] = []
    listed = set()
    for row in rows:
        number = row["shoe"]
        listed.add(number)
        truth = shoes.get(number)
        if truth is None or truth["shuffled_version"] is None:
            problems.append(finding(row.get("shuffled_version"), f"shoe {number}: the read model lists it (shuffled "
                                                                 f"at version {row.get('shuffled_version')}), but the "
                                                                 "log never shuffles it", "shoe"))
            continue
        problems += [
            finding(_where(name, truth), f"shoe {number}: " + _differs(name, row.get(name), truth[name]), name)
            for name in SHOE_FIELDS if row.get(name) != truth[name]
        ]
    for number, truth in shoes.items():
        if number not in listed and truth["shuffled_version"] is not None:
            problems.append(finding(truth["shuffled_version"], f"shoe {number}: the log shuffles it at version "
                                                               f"{truth['shuffled_version']}, but the read model does "
                                                               "not list it", "shoe"))
    return problems


def _differs(name: str, held: Any, truth: Any) -> str:
    """A seed the read model holds is never quoted: where the log has not revealed it, it must stay hidden."""
    if name == "seed":
        return f"the read model's seed differs from the one the log reveals ({'none' if truth is None else 'revealed'})"
    return f"the read model's {name} is {held!r}; the log gives {truth!r}"


def _where(name: str, truth: dict[str, Any]) -> int:
    """The event of the log that says what a shoe's field is: its reveal, its cut, else its shuffle."""
    version = {"seed": truth["revealed_version"], "revealed_version": truth["revealed_version"],
               "cut": truth["cut_version"]}.get(name)
    return version or truth["shuffled_version"]
