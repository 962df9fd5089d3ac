"""The read model's rows: their layout, their shapes, and the sealing of what they must not show in clear.

Columns hold only what queries filter and sort on (ids, game, versions, times, counts). Everything else
(names, amounts, round summaries, shoes) is one JSON text per row: ASCII only, so no character of a
name can break a text column, and encrypted with the event store's cipher when one is configured, so the
read model never shows what the encrypted events hide.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
from dataclasses import dataclass, field
from typing import Any

from eventsourcing.persistence import MapperDeserialisationError

from domain.inputs import folded

# The read model's tables and its tracking position carry a version: a read model of another layout is
# left alone and this one is built afresh from the log (it is derived, so nothing is lost).
TABLES, ROUNDS, SHOES = "zametano_tables_v3", "zametano_rounds_v3", "zametano_shoes_v3"
SEAT_ROUNDS = "zametano_seat_rounds_v3"
POSITION = "zametano-read-model-v3"
TABLE_COLUMNS = ("table_id", "seq", "game", "opened_at", "version", "updated_at", "rounds", "sealed")
ROUND_COLUMNS = ("table_id", "round", "first_version", "last_version", "started_at", "ended_at", "sealed")
SHOE_COLUMNS = ("table_id", "shoe", "shuffled_version", "revealed_version", "sealed")
# A player's part in a round (service/readmodel/seats.py), found by his name's tag and ordered by its key.
SEAT_ROUND_COLUMNS = ("player", "key", "table_id", "round", "sealed")
SEALED_TABLE = ("players", "tracker", "seats")
SEALED_SHOE = ("deck", "decks", "algorithm", "commitment", "cut", "seed")
MESSAGE_LENGTH = 300


class Sealer:
    """Turns what the read model must not show in clear into one text column and back: JSON with every
    non-ASCII character escaped (so a NUL in a name is six harmless characters), encrypted and base64-encoded
    when the event store has a cipher."""

    def __init__(self, cipher: Any = None) -> None:
        self.cipher = cipher

    def seal(self, value: Any) -> str:
        text = json.dumps(value, separators=(",", ":"))
        if self.cipher is None:
            return text
        return base64.b64encode(self.cipher.encrypt(text.encode("ascii"))).decode("ascii")

    def open(self, text: str) -> Any:
        if self.cipher is not None:
            text = self.cipher.decrypt(base64.b64decode(text)).decode("ascii")
        return json.loads(text)

    def tag(self, name: str) -> str:
        """What a player's rows are found by: a digest of his name as names are compared (NFKC, case folded),
        keyed with the cipher's key when there is one, so that the column names no one in clear (nor to
        anyone who tries the names he can guess) and no character of a name reaches it."""
        key = getattr(self.cipher, "key", None) or b"zametano player"
        return hmac.new(key, folded(name).encode("utf-8", "surrogatepass"), hashlib.sha256).hexdigest()


@dataclass
class TableRows:
    """One table's rows after a batch: its row, the rounds it finished, the shoes it touched."""

    first_version: int
    table: dict[str, Any]
    rounds: list[dict[str, Any]] = field(default_factory=list)
    shoes: dict[int, dict[str, Any]] = field(default_factory=dict)
    seats: list[dict[str, Any]] = field(default_factory=list)  # its players' parts in those rounds


@dataclass
class IndexFailure:
    """A table the read model could not index: where (``version``), why, and enough of the table to list it
    if the read model did not hold it yet."""

    table_id: str
    version: int
    message: str
    seq: int
    game: str | None = None
    opened_at: str | None = None


@dataclass
class IndexBatch:
    """Rows to write with one tracking position, table by table, and the tables that failed."""

    tables: dict[str, TableRows] = field(default_factory=dict)
    failures: dict[str, IndexFailure] = field(default_factory=dict)


def describe(exc: BaseException) -> str:
    """An exception in one short line, without the stored text it may be about."""
    if isinstance(exc, MapperDeserialisationError) and exc.__cause__ is not None:
        text = f"the stored event cannot be read ({type(exc.__cause__).__name__}: {exc.__cause__})"
    else:
        text = f"{type(exc).__name__}: {exc}"
    text = " ".join(text.split())
    return text if len(text) <= MESSAGE_LENGTH else text[: MESSAGE_LENGTH - 3] + "..."


def failure_of(table_id: str, rows: TableRows, exc: BaseException) -> IndexFailure:
    """The failure of a table whose rows the store refused (``exc``)."""
    table = rows.table
    return IndexFailure(
        table_id,
        rows.first_version,
        f"versions {rows.first_version} to {table['version']} could not be written: {describe(exc)}",
        table["seq"],
        table["game"],
        table["opened_at"],
    )
