"""How an audit names a problem: its check, the version and type of the event at fault, and a message.

The messages for breaks that more than one audit names (versions missing, a row that cannot be read) are
worded here once.
"""

from __future__ import annotations

from typing import Any


def at(check: str, version: int | None, message: str, type_: str | None = None) -> dict[str, Any]:
    return {"check": check, "version": version, "type": type_, "message": message}


def versions(first: int, last: int) -> str:
    return f"version {first} is" if first == last else f"versions {first} to {last} are"


def missing_message(first: int, last: int, found: int | None) -> str:
    """"version 17 is missing: the log goes from 16 to 18"; ``found`` None when the log ends before."""
    what = f"{versions(first, last)} missing"
    if found is None:
        return f"{what}: the log ends at {first - 1}"
    if first == 1:
        return f"{what}: the log starts at {found}"
    return f"{what}: the log goes from {first - 1} to {found}"


def unreadable_message(version: int) -> str:
    return f"the stored event at version {version} cannot be read: it was altered or damaged"
