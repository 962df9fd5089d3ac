"""Canonical JSON and the digest that chains every event of a table.

Canonical JSON and the digest that chains every event of a table (docs/design.md, "The event envelope and
the hash chain")."""

from __future__ import annotations

import hashlib
import json
from datetime import datetime, timezone
from typing import Any

# Stays outside the chain: a revealed seed is bound by its commitment instead (docs/design.md).
UNCHAINED_FIELDS = ("seed",)

# The chain rules (docs/design.md "The table in the chain"). Rule 1: the events chained from version 1
# (prev ""), the table's id nowhere in them, so a log moved whole to another table's id still verifies.
# Rule 2: as rule 1, and the first event, TableOpened, records the table's id in its data ("table_id"),
# which every verifier holds to the id the log is stored and served under. A table's rule is told by that
# field: a log without it keeps verifying under rule 1, and every table opened since is under rule 2.
BOUND_FIELD = "table_id"
RULE_UNBOUND, RULE_BOUND = 1, 2


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with exactly six digits of microseconds: the string the API shows and the chain hashes."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def digest(prev: str, version: int, type_: str, timestamp: str, actor: str, data: dict[str, Any]) -> str:
    chained = {k: v for k, v in data.items() if k not in UNCHAINED_FIELDS}
    envelope = {
        "prev": prev,
        "version": version,
        "type": type_,
        "timestamp": timestamp,
        "actor": actor,
        "data": chained,
    }
    return hashlib.sha256(canonical_json(envelope).encode("utf-8")).hexdigest()


def chain_rule(opening_data: dict[str, Any]) -> int:
    """The rule a table is chained under, told by its TableOpened's data."""
    return RULE_BOUND if BOUND_FIELD in opening_data else RULE_UNBOUND


def binding_problem(table_id: str, opening_data: dict[str, Any]) -> str | None:
    """Under rule 2, what is wrong where the first event does not name the table it is stored under."""
    if chain_rule(opening_data) != RULE_BOUND or opening_data[BOUND_FIELD] == table_id:
        return None
    return (f"the first event binds the chain to table {opening_data[BOUND_FIELD]!r}, but the log is stored "
            f"under table {table_id!r}: the events were moved from another table")
