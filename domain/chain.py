"""Canonical JSON and the digest that chains every event of a table.

Canonical JSON and the digest that chains every event of a table (docs/design.md, "The event envelope and
the hash chain")."""

from __future__ import annotations

import copy
import hashlib
import json
from collections.abc import Mapping
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
# Rule 3: as rule 2, and each part of an event's data that the rules hide from some reader when it is recorded
# (a face-down card, a stood total) is chained as a salted commitment instead of in clear: under rules 1 and 2
# the digest covered the clear value, so anyone holding it found a face-down card by trying the 52 cards
# (docs/design.md "Concealed parts (chain rule 3)"). Told by "chain": 3 in the TableOpened's data.
RULE_FIELD = "chain"
RULE_UNBOUND, RULE_BOUND, RULE_COMMITTED = 1, 2, 3
COMMIT = "commit:"
SALT_BYTES = 16  # a salt: 16 bytes from the operating system's randomness, as 32 lowercase hex characters


def canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def format_timestamp(moment: datetime) -> str:
    """RFC 3339 in UTC with exactly six digits of microseconds: the string the API shows and the chain hashes."""
    if moment.tzinfo is None:
        raise ValueError("timestamps must be timezone-aware")
    return moment.astimezone(timezone.utc).isoformat(timespec="microseconds")


def digest(prev: str, version: int, type_: str, timestamp: str, actor: str, data: dict[str, Any],
           salts: Mapping[str, str] | None = None, concealed: Mapping[str, str] | None = None) -> str:
    """The digest of an event (docs/design.md). Under rule 3 each concealed part is chained as its commitment:
    ``salts`` gives the salt of each part whose value is in ``data``, ``concealed`` the commitment of each part a
    reader is not shown, both by JSON Pointer."""
    chained = {k: v for k, v in data.items() if k not in UNCHAINED_FIELDS}
    if salts or concealed:
        parts = {where: commit(salt, value_at(data, where)) for where, salt in (salts or {}).items()}
        chained = committed(chained, {**parts, **(concealed or {})})
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
    if opening_data.get(RULE_FIELD) == RULE_COMMITTED:
        return RULE_COMMITTED
    return RULE_BOUND if BOUND_FIELD in opening_data else RULE_UNBOUND


# --- concealed parts (rule 3) ------------------------------------------------------------------------------

def commit(salt: str, value: Any) -> str:
    """What the chain holds in place of a concealed part: a salted commitment to it."""
    text = canonical_json({"salt": salt, "value": value})
    return COMMIT + hashlib.sha256(text.encode("utf-8")).hexdigest()


def pointer(path: tuple[Any, ...]) -> str:
    """The JSON Pointer (RFC 6901) of a place in an event's data, given as its keys and indexes."""
    return "".join("/" + str(step).replace("~", "~0").replace("/", "~1") for step in path)


def steps(where: str) -> list[str]:
    """A JSON Pointer's reference tokens, unescaped."""
    if not where.startswith("/"):
        raise ValueError(f"a JSON Pointer starts with '/': {where!r}")
    return [token.replace("~1", "/").replace("~0", "~") for token in where[1:].split("/")]


def _step(place: Any, token: str) -> Any:
    return int(token) if isinstance(place, list) else token


def value_at(data: Any, where: str) -> Any:
    """The value a JSON Pointer names in ``data`` (KeyError, IndexError or ValueError where it names none)."""
    place = data
    for token in steps(where):
        place = place[_step(place, token)]
    return place


def committed(data: dict[str, Any], parts: Mapping[str, Any]) -> dict[str, Any]:
    """``data`` with the value at each pointer of ``parts`` replaced by the one given (copied where changed)."""
    out = copy.deepcopy(data)
    for where, value in parts.items():
        *inner, last = steps(where)
        place: Any = out
        for token in inner:
            place = place[_step(place, token)]
        place[_step(place, last)] = value
    return out


def binding_problem(table_id: str, opening_data: dict[str, Any]) -> str | None:
    """Under rules 2 and 3, what is wrong where the first event does not name the table it is stored under."""
    if chain_rule(opening_data) < RULE_BOUND or opening_data.get(BOUND_FIELD) == table_id:
        return None
    return (f"the first event binds the chain to table {opening_data[BOUND_FIELD]!r}, but the log is stored "
            f"under table {table_id!r}: the events were moved from another table")
