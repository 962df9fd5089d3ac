"""What the audits ask of the read model: to catch up, and where it could not index a table."""

from __future__ import annotations

from typing import Any

from service.audit.problems import at
from service.errors import DamagedLog
from service.history import TableHistory


def catch_up(history: TableHistory) -> DamagedLog | None:
    """The read model caught up; a row it cannot read stops it where it is, which the audits, reading the log
    itself, then name at its version. Returns that damage, if any."""
    try:
        history.index_caught_up()
    except DamagedLog as exc:
        return exc
    return None


def index_problems(history: TableHistory, table_id: str) -> list[dict[str, Any]]:
    """The read model gives the audits the table's shoes (seeds, cuts) and its rounds: where it could not
    index the table, what came after is not checked, and the audit must not look complete."""
    index_error = history.index_error(table_id)
    if index_error is None:
        return []
    return [at("index", index_error["version"], f"the read model could not index this table from here on "
                                                f"({index_error['message']}): shoes and rounds after it are not "
                                                "checked")]
