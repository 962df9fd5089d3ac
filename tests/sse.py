"""Reading Server-Sent Events as a client does (the WHATWG event stream format), for the tests of the live
streams: over the Flask test client or over a real socket."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

SSE = "text/event-stream"


@dataclass(frozen=True)
class Message:
    """One dispatched message: its id, event type and data (``data`` is the raw text, ``json`` read)."""

    id: str | None
    event: str
    data: str

    @property
    def json(self) -> Any:
        return json.loads(self.data)


@dataclass(frozen=True)
class Comment:
    text: str


class Parser:
    """Fed the bytes of a stream as they arrive; gives the messages and comments each piece completes."""

    def __init__(self) -> None:
        self._buffer = ""
        self._fields: dict[str, list[str]] = {}

    def feed(self, chunk: bytes) -> list[Message | Comment]:
        self._buffer += chunk.decode("utf-8")
        out: list[Message | Comment] = []
        while True:
            line, sep, rest = self._buffer.partition("\n")
            if not sep:
                return out
            self._buffer = rest
            line = line.removesuffix("\r")
            if not line:
                if self._fields:
                    out.append(Message(self._fields.get("id", [None])[-1], self._fields.get("event", ["message"])[-1],
                                       "\n".join(self._fields.get("data", []))))
                self._fields = {}
            elif line.startswith(":"):
                out.append(Comment(line[1:].strip()))
            else:
                name, _, value = line.partition(":")
                self._fields.setdefault(name, []).append(value.removeprefix(" "))


def parse(text: bytes) -> list[Message | Comment]:
    return Parser().feed(text)


def messages(items: list[Message | Comment]) -> list[Message]:
    return [m for m in items if isinstance(m, Message)]


def heartbeats(items: list[Message | Comment]) -> int:
    return sum(1 for c in items if isinstance(c, Comment) and c.text == "heartbeat")
