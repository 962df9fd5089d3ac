"""Building a service's parts from its settings.

The signer, the library's environment, the group committer, the live streams' hub, the read model's indexer
and its follower.

Nothing here decides or reads a game: it only puts together what service/application.py runs.
"""

from __future__ import annotations

import secrets
from collections.abc import Callable
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from domain import chain
from domain.games import GAMES, ROUND_MARKS
from domain.shuffle import SEED_BYTES
from service import atrest, metrics, onetrip, streams
from domain.purse import WALLET, Purse
from service.config import Settings
from service.money import NONE, Money, WalletClient
from service.files import private_sqlite
from service.groupcommit import GroupCommitter
from service.readmodel import Indexer
from service.seeds import SeedKeys, load_seed_keys
from service.signing import Signer, load_signer

if TYPE_CHECKING:
    from service.application import TablesService

Clock = Callable[[], datetime]
SeedSource = Callable[[], bytes]
SaltSource = Callable[[], str]


def utc_now() -> datetime:
    return datetime.now(timezone.utc)


def fresh_seed() -> bytes:
    return secrets.token_bytes(SEED_BYTES)


def fresh_salt() -> str:
    """A concealed part's salt (chain rule 3, domain/chain.py): 16 bytes of the operating system's randomness."""
    return secrets.token_hex(chain.SALT_BYTES)


def signer_for(settings: Settings | None) -> Signer:
    """The settings' signing key (made on first start), or a key in memory for a service without settings."""
    return load_signer(settings) if settings is not None else Signer.in_memory()


def seed_keys_for(settings: Settings | None) -> SeedKeys:
    """The settings' seed keys (made on first start), or a key in memory for a service without settings."""
    return load_seed_keys(settings) if settings is not None else SeedKeys.in_memory()


def money_for(app: TablesService, settings: Settings | None) -> Money:
    """Where the players' money is (docs/wallet.md): the settings' ZAMETANO_MONEY; none without settings."""
    if settings is None or settings.money == NONE:
        return Money(app)
    wallet = (WalletClient(settings.wallet_url, settings.wallet_token, settings.wallet_timeout)
              if settings.money == WALLET and settings.wallet_url else None)
    return Money(app, settings.money, settings.currency, wallet)


def library_env(settings: Settings | None, env: dict[str, str] | None) -> dict[str, Any]:
    """The eventsourcing library's environment: the settings' persistence, then what the caller adds. An
    SQLite store is made (or narrowed to) mode 0600 before the library opens it. CIPHER_KEY without a
    CIPHER_TOPIC takes the key file's cipher class. PostgreSQL's recorder writes a save in one statement
    (service/onetrip.py)."""
    merged = dict(settings.persistence) if settings else {}
    merged.update(env or {})
    if merged.get("CIPHER_KEY") and not merged.get("CIPHER_TOPIC"):
        merged["CIPHER_TOPIC"] = atrest.CIPHER_TOPIC  # the same AES-GCM, faster (service/atrest.py)
    if merged.get("PERSISTENCE_MODULE") == "eventsourcing.sqlite":
        private_sqlite(str(merged.get("SQLITE_DBNAME", "")))
    if merged.get("PERSISTENCE_MODULE") == "eventsourcing.postgres":
        merged.setdefault("APPLICATION_RECORDER_TOPIC", onetrip.TOPIC)  # a save in one round trip
    return merged


def wire(app: TablesService, settings: Settings | None, *, follow: bool, group_commit: bool | None) -> None:
    """Gives the application its snapshot intervals, group committer, hub and indexer (and the follower that
    keeps the read model up to date, with ``follow``)."""
    if settings is not None:
        app.snapshotting_intervals = {game.table: settings.snapshot_interval for game in GAMES.values()}
        app.snapshotting_intervals[Purse] = settings.snapshot_interval
    app.money = money_for(app, settings)
    if group_commit is None:
        group_commit = settings.group_commit if settings is not None else False
    app.committer = GroupCommitter(app.save_together) if group_commit else None
    if app.committer is not None:
        app.committer.on_batch = metrics.batch_written
    # Before the follower, which publishes to it.
    app.hub = streams.Hub(settings.max_streams if settings is not None else 32)
    app.index = Indexer(app, ROUND_MARKS)
    if follow:
        app.index.follow(streams.Publisher(app.hub, app.mapper))
        app.money.start()  # a wallet's outbox delivered by every serving process
