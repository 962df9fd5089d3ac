"""A hostile reader's attempts on what he is given: every value of every hidden part tried against each digest, each
commitment, each ETag made of a body; and every digest of a rule-3 table checked from the reader's own view.

Written from docs/design.md alone (standard library only), independently of domain/chain.py, as any reader would.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
from typing import Any

HIDDEN = "??"
CARDS = [r + s for s in "shdc" for r in "23456789TJQKA"]
TOTALS = list(range(10))
COMMITMENT = re.compile(r"^commit:[0-9a-f]{64}$")


def canonical(value: Any) -> str:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def commit(salt: str, value: Any) -> str:
    return "commit:" + sha(canonical({"salt": salt, "value": value}))


def _tokens(pointer: str) -> list[str]:
    return [t.replace("~1", "/").replace("~0", "~") for t in pointer[1:].split("/")]


def get(data: Any, pointer: str) -> Any:
    for token in _tokens(pointer):
        data = data[int(token)] if isinstance(data, list) else data[token]
    return data


def put(data: Any, pointer: str, value: Any) -> None:
    *inner, last = _tokens(pointer)
    for token in inner:
        data = data[int(token)] if isinstance(data, list) else data[token]
    data[int(last) if isinstance(data, list) else last] = value


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
    return sha(canonical(envelope))


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
        self.salts: set[str] = {""}  # and the empty salt: a commitment made without one would fall to it
        self.attempts = 0

    def learn(self, events: list[dict[str, Any]]) -> None:
        for e in events:
            self.salts.update((e.get("salts") or {}).values())

    def attack(self, e: dict[str, Any], prev: str | None) -> None:
        """Tries every value of every hidden part of ``e`` (as this reader got it) against its digest (linked
        to ``prev``, the recorded digest before it; None: not known) and its commitment with every salt known."""
        for pointer in hidden_parts(e):
            assert pointer not in (e.get("salts") or {}), (self.name, e, "a hidden part's salt is given")
            concealed = (e.get("concealed") or {}).get(pointer)
            for value in candidates(pointer):
                self.attempts += 1
                if prev is not None:
                    assert event_digest(prev, e, {pointer: value}) != e["digest"], \
                        (self.name, e["version"], pointer, "found from the digest")
                if concealed is not None:
                    assert all(commit(salt, value) != concealed for salt in self.salts), \
                        (self.name, e["version"], pointer, "found from the commitment")

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
