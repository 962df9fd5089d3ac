"""A hostile reader's attempts on what he is given: every value of every hidden part tried against each digest, each
commitment, each ETag made of a body; and every digest of a rule-3 table checked from the reader's own view.

Written from docs/design.md alone (standard library only, with tests/concealing.py's JSON Pointers and commitments),
independently of domain/chain.py, as any reader would.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

from tests.concealing import canonical, get, put
from tests.concealing import commitment as commit

HIDDEN = "??"
CARDS = [r + s for s in "shdc" for r in "23456789TJQKA"]
TOTALS = list(range(10))
COMMITMENT = re.compile(r"^commit:[0-9a-f]{64}$")


def event_digest(prev: str, e: dict[str, Any], parts: dict[str, Any] | None = None) -> str:
    """The digest of an event as a reader recomputes it from what he is shown: each part in ``salts`` committed
    from its shown value, each in ``concealed`` as given; ``parts`` puts other values in first (an attack)."""
    data = copy.deepcopy({k: v for k, v in e["data"].items() if k != "seed"})
    for pointer, value in (parts or {}).items():
        put(data, pointer, value)
    for pointer, salt in (e.get("salts") or {}).items():
        put(data, pointer, commit(salt, get(data, pointer)))
    for pointer, commitment in (e.get("concealed") or {}).items():
        if parts is None or pointer not in parts:
            put(data, pointer, commitment)
    envelope = {"prev": prev, "version": e["version"], "type": e["type"], "timestamp": e["timestamp"],
                "actor": e["actor"], "data": data}
    return hashlib.sha256(canonical(envelope)).hexdigest()


def hidden_parts(e: dict[str, Any]) -> list[str]:
    """The pointers of the parts this view hides: each committed in ``concealed``, and any "??" or null total
    left without a commitment (a rule-3 event must have none)."""
    found = set(e.get("concealed") or {})
    for pointer, value in _walk(e["data"], ""):
        if value == HIDDEN or (pointer == "/total" and value is None):
            found.add(pointer)
    return sorted(found)


def _walk(value: Any, at: str) -> list[tuple[str, Any]]:
    if isinstance(value, dict):
        return [x for k, v in value.items() for x in _walk(v, f"{at}/{k.replace('~', '~0').replace('/', '~1')}")]
    if isinstance(value, list):
        return [x for i, v in enumerate(value) for x in _walk(v, f"{at}/{i}")]
    return [(at, value)]


def candidates(pointer: str) -> list[Any]:
    return TOTALS if pointer == "/total" else CARDS


class Reader:
    """What one reader has been given so far (every salt he was shown anywhere), and his attacks on it."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.salts: set[str] = set()
        # Every commitment the salts known make of every value: a hidden part's commitment found among them
        # would tell its value. The empty salt too: a commitment made without one would fall to it.
        self.openable: set[str] = set()
        self.tried: set[tuple[int, str, str]] = set()  # (version, pointer, digest) already tried against its digest
        self.attempts = 0
        self._know("")

    def _know(self, salt: str) -> None:
        if salt not in self.salts:
            self.salts.add(salt)
            self.openable.update(commit(salt, value) for value in (*CARDS, *TOTALS))

    def learn(self, events: list[dict[str, Any]]) -> None:
        for e in events:
            for salt in (e.get("salts") or {}).values():
                self._know(salt)

    def attack(self, e: dict[str, Any], prev: str | None) -> None:
        """Tries every value of every hidden part of ``e`` (as this reader got it) against its digest (linked
        to ``prev``, the recorded digest before it; None: not known) and its commitment with every salt known."""
        for pointer in hidden_parts(e):
            assert pointer not in (e.get("salts") or {}), (self.name, e, "a hidden part's salt is given")
            concealed = (e.get("concealed") or {}).get(pointer)
            self.attempts += len(candidates(pointer)) * len(self.salts)
            assert concealed not in self.openable, (self.name, e["version"], pointer, "found from the commitment")
            if prev is None or (e["version"], pointer, e["digest"]) in self.tried:
                continue
            self.tried.add((e["version"], pointer, e["digest"]))
            for value in candidates(pointer):
                self.attempts += 1
                assert event_digest(prev, e, {pointer: value}) != e["digest"], \
                    (self.name, e["version"], pointer, "found from the digest")

    def attack_tag(self, body: bytes, tag: str, tag_of: Any) -> None:
        """Tries every value in place of each hidden placeholder of a body against the ETag made of it."""
        for placeholder, values in ((b'"??"', CARDS), (b'"total":null', TOTALS)):
            start = body.find(placeholder)
            while start >= 0:
                for value in values:
                    self.attempts += 1
                    shown = (json.dumps(value).encode() if placeholder == b'"??"'
                             else b'"total":' + str(value).encode())
                    assert tag_of(body[:start] + shown + body[start + len(placeholder):]) != tag, \
                        (self.name, "found from the ETag")
                start = body.find(placeholder, start + 1)


def check_chain(events: list[dict[str, Any]], prev: str = "") -> None:
    """Every digest of a rule-3 log (or a stretch of one, after the digest ``prev``) checks from this view: no
    version is left out as hidden, and every part hidden from it is committed."""
    for e in events:
        for pointer in hidden_parts(e):
            assert COMMITMENT.match((e.get("concealed") or {}).get(pointer, "")), (e, pointer)
        for pointer, salt in (e.get("salts") or {}).items():
            assert re.fullmatch(r"[0-9a-f]{32}", salt), (e, pointer)
        assert event_digest(prev, e) == e["digest"], e
        prev = e["digest"]
