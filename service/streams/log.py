"""What the log says to the streams: which tables moved to which version, and each one's new head.

The read model's follower (service/readmodel/follower.py) hands what it reads to a ``Publisher``, which decodes it here
once for every stream of the process and tells the hub (service/streams/hub.py).
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from domain.table import TableOpened
from service.replay import topic_kind

if TYPE_CHECKING:
    from service.streams.hub import Hub


@dataclass(frozen=True)
class HeadChange:
    """A table's head after a change, at ``position`` in the notification log."""

    position: int
    table_id: str
    version: int
    digest: str
    timestamp: str


Opening = dict[str, Any]  # a table's game, players and opening time


def heads_of(notes: Sequence[Any], mapper: Any, decoded: Mapping[int, Any] | None = None,
             ) -> tuple[list[HeadChange], dict[str, Opening]]:
    """Each table's last change among notifications, in position order, and the openings among them (``decoded``:
    events already decoded, by position). A notification that cannot be read is left out (its table's stream,
    reading the log, says so)."""
    last: dict[str, Any] = {}
    for note in notes:
        last[str(note.originator_id)] = note
    heads, openings = [], {}
    for table_id, note in last.items():
        if not topic_kind(note.topic):
            continue
        event = decoded.get(note.id) if decoded else None
        if event is None:
            try:
                event = mapper.to_domain_event(note)
            except Exception:  # noqa: BLE001 - a damaged event is the audit's to name
                continue
        heads.append(HeadChange(note.id, table_id, note.originator_version, event.digest, event.timestamp_text))
        if isinstance(event, TableOpened):
            openings[table_id] = opening_of(event)
    heads.sort(key=lambda head: head.position)
    return heads, openings


def opening_of(event: TableOpened) -> Opening:
    return {"game": event.game, "opened_at": event.timestamp_text, "players": list(event.players)}


class Publisher:
    """Tells a hub what the read model's follower reads (service/readmodel/follower.py)."""

    def __init__(self, hub: Hub, mapper: Any) -> None:
        self.hub, self.mapper = hub, mapper

    def wanted(self) -> bool:
        """Whether any live stream of this process waits to hear of the log."""
        return self.hub.streams_open > 0

    def on_first_stream(self, wake: Callable[[], None]) -> None:
        """``wake`` is called when a stream opens in a process that had none."""
        self.hub.first_stream = wake

    def subscribed(self, gt: int) -> None:
        self.hub.subscribed(gt)

    def read(self, notes: Sequence[Any]) -> None:
        if not notes:
            return
        versions = [(str(note.originator_id), note.originator_version) for note in notes]
        decoded = self._followed_events(notes, versions)
        self.hub.recorded(list(decoded.values()))
        self.hub.moved(dict(versions))
        heads, openings = heads_of(notes, self.mapper, decoded)
        self.hub.heard(notes[-1].id, heads, openings)

    def _followed_events(self, notes: Sequence[Any], versions: Sequence[tuple[str, int]]) -> dict[int, Any]:
        """The events of the tables this process's streams follow that it does not keep yet (its own commits it
        does), decoded once for all of them, by position. One that cannot be decoded is left out: its streams
        read the log, which says what is wrong with it."""
        unkept = self.hub.unkept(versions)
        events = {}
        for note, version in zip(notes, versions):
            if version in unkept and topic_kind(note.topic):
                try:
                    events[note.id] = self.mapper.to_domain_event(note)
                except Exception:  # noqa: BLE001 - a damaged event is the stream's read to name
                    continue
        return events
