"""Logs chained under rule 3, for the verifiers' tests (docs/design.md "Concealed parts (chain rule 3)").

Made here from the design's text with hashlib and json alone, independently of the service and of the
scripts under test: a log (any the fixtures produce, every card shown) chained again under rule 3 with a
salt for each concealed part, and the views of it its readers are given: the owner of a part gets its salt
and its value, any other reader "??" (null for a total) and its commitment.
"""

from __future__ import annotations

import copy
import hashlib
import json
import random
from typing import Any

HIDDEN = "??"


def canonical(value: Any) -> bytes:
    return json.dumps(value, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def commitment(salt: str, value: Any) -> str:
    return "commit:" + hashlib.sha256(canonical({"salt": salt, "value": value})).hexdigest()


def escape(token: str) -> str:
    """A reference token of a JSON Pointer (RFC 6901)."""
    return token.replace("~", "~0").replace("/", "~1")


def tokens_of(pointer: str) -> list[str]:
    return [token.replace("~1", "/").replace("~0", "~") for token in pointer[1:].split("/")]


def get(data: Any, pointer: str) -> Any:
    for token in tokens_of(pointer):
        data = data[int(token)] if isinstance(data, list) else data[token]
    return data


def put(data: Any, pointer: str, value: Any) -> None:
    *path, last = tokens_of(pointer)
    for token in path:
        data = data[int(token)] if isinstance(data, list) else data[token]
    data[int(last) if isinstance(data, list) else last] = value


def concealed_parts(event: dict[str, Any]) -> list[tuple[str, str]]:
    """(pointer, owner) of each part of the event hidden from some reader when recorded: a face-down card,
    a stood hand's total, each card of the piles set aside and of the hands dealt for stage 2."""
    data, type_ = event["data"], event["type"]
    if type_ == "CardDealt" and data.get("face_up") is False:
        return [("/card", data["to"])]
    if type_ == "HandStood":
        return [("/total", data["player"])]
    held = {"CardsSetAside": "piles", "Stage2Began": "hands"}.get(type_)
    if held is None or not isinstance(data.get(held), dict):
        return []
    return [(f"/{held}/{escape(name)}/{index}", name)
            for name, cards in data[held].items() for index in range(len(cards))]


def digest(prev: str, event: dict[str, Any]) -> str:
    """The rule-3 digest of an event as stored (its clear values and their salts)."""
    data = copy.deepcopy({k: v for k, v in event["data"].items() if k != "seed"})
    for pointer, salt in event.get("salts", {}).items():
        put(data, pointer, commitment(salt, get(data, pointer)))
    envelope = {"prev": prev, "version": event["version"], "type": event["type"], "timestamp": event["timestamp"],
                "actor": event["actor"], "data": data}
    return hashlib.sha256(canonical(envelope)).hexdigest()


def rechain(events: list[dict[str, Any]], table_id: str, seed: int = 3) -> list[dict[str, Any]]:
    """The log as the service stores a rule-3 table: the opening records "chain": 3 and the table's id,
    every concealed part has a salt of 32 lowercase hex digits, every digest is chained again."""
    rng = random.Random(seed)
    stored, prev = [], ""
    for event in events:
        event = {k: copy.deepcopy(v) for k, v in event.items() if k not in ("salts", "concealed", "digest")}
        if event["version"] == 1:
            event["data"].update(table_id=table_id, chain=3)
        salts = {pointer: rng.randbytes(16).hex() for pointer, _ in concealed_parts(event)}
        if salts:
            event["salts"] = salts
        event["digest"] = prev = digest(prev, event)
        stored.append(event)
    return stored


def view(stored: list[dict[str, Any]], reader: str) -> list[dict[str, Any]]:
    """The log as `reader` is shown it at its head: the parts he owns with their salts, and the cards of a
    shoe whose seed is revealed (it tells them all); every other concealed part hidden ("??", a total null)
    with its commitment; `salts` and `concealed` left out where empty."""
    revealed = {e["data"]["shoe"] for e in stored if e["type"] == "ShoeRevealed"}
    shown = []
    for event in stored:
        event = copy.deepcopy(event)
        owners = dict(concealed_parts(event))
        if event["type"] == "CardDealt" and event["data"]["shoe"] in revealed:
            owners = dict.fromkeys(owners, reader)
        salts, concealed = {}, {}
        for pointer, salt in event.pop("salts", {}).items():
            if owners[pointer] == reader:
                salts[pointer] = salt
            else:
                concealed[pointer] = commitment(salt, get(event["data"], pointer))
                put(event["data"], pointer, None if pointer == "/total" else HIDDEN)
        event.update({"salts": salts} if salts else {})
        event.update({"concealed": concealed} if concealed else {})
        shown.append(event)
    return shown


def readers(stored: list[dict[str, Any]]) -> set[str]:
    """Everyone who owns a concealed part of the log."""
    return {owner for event in stored for _, owner in concealed_parts(event)}
