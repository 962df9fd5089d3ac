"""Every stored log names each event by a topic (module path and class name): a class that moves keeps the
topic it was first written under, so the logs stored before the move replay and a log written after it is
read by the code of before (domain/events.py::keep_topics)."""

from __future__ import annotations

import json
from pathlib import Path

from eventsourcing.utils import get_topic, resolve_topic

import domain.games  # noqa: F401 - every game, so that every event class is defined
from domain.events import TableEvent

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures"
# Where the events were defined when the first logs were stored, by the module that defines them now.
FIRST_HOME = {
    "domain.events": "domain.table",
    "domain.card_lottery.events": "domain.card_lottery.table",
    "domain.chemin_de_fer.events": "domain.chemin_de_fer.table",
    "domain.punto_banco.events": "domain.punto_banco.table",
    "domain.corrections": "domain.corrections",  # first written there
}


def event_classes() -> list[type]:
    found, todo = [], [TableEvent]
    while todo:
        for sub in todo.pop().__subclasses__():
            found.append(sub)
            todo.append(sub)
    return found


def test_every_topic_of_the_stored_logs_resolves_to_a_class_that_writes_it_again():
    topics = {json.loads(line)["topic"] for path in sorted(FIXTURES.glob("*.jsonl"))
              for line in path.read_text(encoding="utf-8").splitlines() if line.strip()}
    assert len(topics) > 30
    assert {topic: get_topic(resolve_topic(topic)) for topic in topics} == {topic: topic for topic in topics}


def test_every_event_is_written_under_the_topic_of_its_first_home():
    classes = event_classes()
    assert len(classes) > 40
    written = {f"{c.__module__}:{c.__qualname__}": get_topic(c) for c in classes}
    assert written == {f"{c.__module__}:{c.__qualname__}": f"{FIRST_HOME[c.__module__]}:{c.__qualname__}" for c in classes}
