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
