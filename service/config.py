"""Every setting the service reads from the environment, in one place.

Persistence uses the eventsourcing library's own variables (PERSISTENCE_MODULE, SQLITE_DBNAME,
POSTGRES_*, CREATE_TABLE, CIPHER_*, COMPRESSOR_TOPIC, AGGREGATE_CACHE_MAXSIZE, APPLICATION_RECORDER_TOPIC); with none set the
service keeps its events in an SQLite file under ./var/, encrypted under a key it makes there
(service/atrest.py), and signs receipts with a key it makes there too (service/signing.py).
"""

from __future__ import annotations

import math
import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

# Read by the eventsourcing library itself; listed so that docs, docker-compose and tests agree.
LIBRARY_VARIABLES = (
    "PERSISTENCE_MODULE",
    "SQLITE_DBNAME",
    "SQLITE_LOCK_TIMEOUT",
    "POSTGRES_DBNAME",
    "POSTGRES_HOST",
    "POSTGRES_PORT",
    "POSTGRES_USER",
    "POSTGRES_PASSWORD",
    "POSTGRES_SCHEMA",
    "POSTGRES_POOL_SIZE",
    "POSTGRES_MAX_OVERFLOW",
    "POSTGRES_CONNECT_TIMEOUT",
    "POSTGRES_MAX_WAITING",
    "POSTGRES_PRE_PING",
    "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT",
    "POSTGRES_LOCK_TIMEOUT",
    "CREATE_TABLE",
    "CIPHER_TOPIC",
    "CIPHER_KEY",
    "COMPRESSOR_TOPIC",
    "AGGREGATE_CACHE_MAXSIZE",
    "APPLICATION_RECORDER_TOPIC",
)
# Our own.
OWN_VARIABLES = (
    "POSTGRES_TARGET_SESSION_ATTRS",  # libpq's target_session_attrs, which the library does not pass on
    "SNAPSHOT_INTERVAL",
    "ZAMETANO_TOKENS",
    "ZAMETANO_DATA_DIR",
    "ZAMETANO_SIGNING_KEY_FILE",
    "ZAMETANO_SEED_KEY_FILE",
    "ZAMETANO_CIPHER_KEY_FILE",
    "ZAMETANO_MAX_BODY_BYTES",
    "ZAMETANO_RATE_LIMIT",
    "ZAMETANO_STATEMENT_TIMEOUT",
    "ZAMETANO_GROUP_COMMIT",
    "ZAMETANO_LOG_FORMAT",
    "ZAMETANO_MAX_STREAMS",
    "ZAMETANO_STREAM_HEARTBEAT",
    "ZAMETANO_PLAYER_KEY_FILE",
    "ZAMETANO_PLAYER_AUDIENCE",
    "ZAMETANO_PLAYER_ISSUER",
    "ZAMETANO_PLAYER_JWKS_FILE",
    "ZAMETANO_MONEY",
    "ZAMETANO_WALLET_URL",
    "ZAMETANO_WALLET_TOKEN",
    "ZAMETANO_WALLET_TIMEOUT",
    "ZAMETANO_CURRENCY",
)
# Outages (docs/operations.md, "Outages"): a request waits at most this long for the database, well below gunicorn's
# worker timeout, then answers 503.
CONNECT_TIMEOUT = "3"
STATEMENT_TIMEOUT = "10"
# Read by the server entry points (api/server.py, api/gunicorn_conf.py).
SERVER_VARIABLES = ("HOST", "PORT", "WEB_CONCURRENCY", "WEB_THREADS", "ZAMETANO_MAX_CONNECTIONS", "ZAMETANO_READ_TIMEOUT",
                    "BIND", "PROMETHEUS_MULTIPROC_DIR")
# All of them, as `scripts/run --help` lists them.
ALL_VARIABLES = LIBRARY_VARIABLES + OWN_VARIABLES + SERVER_VARIABLES
# A supervisor requests, approves and refuses corrections (domain/corrections.py) and reads what an auditor reads.
# A cashier records deposits and withdrawals in players' purses (docs/wallet.md) and reads what an operator reads.
ROLES = ("operator", "auditor", "surveillance", "supervisor", "cashier")
# Where the players' money is (docs/wallet.md): nowhere (a balance is a result), purses, or a wallet.
MONEY_KINDS = ("none", "purses", "wallet")
# A token's name (ZAMETANO_TOKENS' role@name:token): what the log and GET /me call whoever holds it.
TOKEN_NAME = re.compile(r"[A-Za-z0-9._-]{1,40}")
# The shortest token taken: a shorter one can be guessed, and a service with it is refused at start.
MIN_TOKEN_LENGTH = 16
# The audience (`aud`) players' tokens must name unless ZAMETANO_PLAYER_AUDIENCE says otherwise.
DEFAULT_PLAYER_AUDIENCE = "zametano"
# The largest request body read: a table's opening with every rule option is well under 1 KiB.
DEFAULT_MAX_BODY_BYTES = 64 * 1024
RATE_PERIODS = {"s": 1.0, "min": 60.0, "h": 3600.0}
# The stores the service is built and tested for (the read model has a form for each).
PERSISTENCE_MODULES = ("eventsourcing.sqlite", "eventsourcing.postgres", "eventsourcing.popo")
# What PostgreSQL needs to be found at all; the library would otherwise stop with a traceback.
POSTGRES_REQUIRED = ("POSTGRES_HOST", "POSTGRES_DBNAME", "POSTGRES_USER")
LOG_FORMATS = ("json", "text")
# Live streams (service/streams/): open at once per worker process, each holding one of its threads; and
# the seconds of silence after which a stream sends a heartbeat, so that clients and proxies see it alive.
DEFAULT_MAX_STREAMS = 32
MAX_MAX_STREAMS = 10_000
DEFAULT_STREAM_HEARTBEAT = 15.0


class ConfigError(ValueError):
    pass


@dataclass(frozen=True)
class RateLimit:
    """A token bucket: ``burst`` requests at once, refilled at ``per_second``."""

    per_second: float
    burst: int


@dataclass(frozen=True)
class Settings:
    persistence: dict[str, str]
    snapshot_interval: int = 50
    statement_timeout: float = float(STATEMENT_TIMEOUT)  # seconds; 0: none
    tokens: dict[str, tuple[str, str]] = field(default_factory=dict)  # token -> (role, name)
    data_dir: str = "var"
    # The Ed25519 PEM key that signs receipts; None: signing-key.pem in data_dir, made on first start.
    signing_key_file: str | None = None
    # The keys that seal shuffle seeds (service/seeds.py); None: seed-keys.json in data_dir, made on first start.
    seed_key_file: str | None = None
    # The key that encrypts a new store's events (service/atrest.py); None: cipher-key in data_dir, made on
    # first start. CIPHER_KEY, when set, overrides it.
    cipher_key_file: str | None = None
    max_body_bytes: int = DEFAULT_MAX_BODY_BYTES
    rate_limit: RateLimit | None = None  # None: no rate limit
    # Commands of different tables in flight at once in one process saved in one transaction.
    group_commit: bool = False
    # "json" or "text"; None: JSON lines unless stderr is a terminal (api/logs.py).
    log_format: str | None = None
    max_streams: int = DEFAULT_MAX_STREAMS  # per worker process; 0: no streams
    stream_heartbeat: float = DEFAULT_STREAM_HEARTBEAT  # seconds
    # The Ed25519 PEM key that signs players' tokens; None: player-key.pem in data_dir, made on first start.
    player_key_file: str | None = None
    player_audience: str = DEFAULT_PLAYER_AUDIENCE
    # An external issuer of players' tokens: the `iss` its tokens name and the JWKS file of its public keys.
    player_issuer: str | None = None
    player_jwks_file: str | None = None
    money: str = "none"  # MONEY_KINDS
    wallet_url: str | None = None
    wallet_token: str | None = None
    wallet_timeout: float = 2.0
    currency: str = "EUR"

    @property
    def module(self) -> str:
        return self.persistence["PERSISTENCE_MODULE"]


def load(environ: Mapping[str, str] | None = None, *, make_dirs: bool = True) -> Settings:
    """Every setting, checked, before anything is written: the data folder is made last (``make_dirs``), once
    every value is known to be usable, so that a wrong one leaves nothing behind."""
    from service.startup_checks import check_library_settings  # it reads ConfigError from here

    env = dict(os.environ if environ is None else environ)
    persistence = {k: env[k] for k in LIBRARY_VARIABLES if k in env}
    module = persistence.setdefault("PERSISTENCE_MODULE", "eventsourcing.sqlite")
    if module not in PERSISTENCE_MODULES:
        raise ConfigError(f"PERSISTENCE_MODULE is one of {', '.join(PERSISTENCE_MODULES)}, not {module!r}")
    data_dir = Path(env.get("ZAMETANO_DATA_DIR") or "var")
    own_file = module == "eventsourcing.sqlite" and "SQLITE_DBNAME" not in persistence
    if own_file:
        persistence["SQLITE_DBNAME"] = str(data_dir / "zametano.sqlite")
    if module == "eventsourcing.postgres":
        postgres_defaults(persistence, env)
    check_library_settings(persistence)
    # The aggregate cache (fast-forwarded from the store, so safe across processes) and snapshots
    # together keep a command on a long table from replaying its whole history.
    persistence.setdefault("AGGREGATE_CACHE_MAXSIZE", "1000")
    try:
        interval = int(env.get("SNAPSHOT_INTERVAL", "50"))
    except ValueError as exc:
        raise ConfigError("SNAPSHOT_INTERVAL must be a whole number") from exc
    if interval < 1:
        raise ConfigError("SNAPSHOT_INTERVAL must be at least 1")
    settings = Settings(
        persistence=persistence,
        snapshot_interval=interval,
        statement_timeout=parse_statement_timeout(env.get("ZAMETANO_STATEMENT_TIMEOUT", "")),
        tokens=parse_tokens(env.get("ZAMETANO_TOKENS", "")),
        data_dir=str(data_dir),
        signing_key_file=env.get("ZAMETANO_SIGNING_KEY_FILE") or None,
        seed_key_file=env.get("ZAMETANO_SEED_KEY_FILE") or None,
        cipher_key_file=env.get("ZAMETANO_CIPHER_KEY_FILE") or None,
        max_body_bytes=parse_max_body_bytes(env.get("ZAMETANO_MAX_BODY_BYTES", "")),
        rate_limit=parse_rate_limit(env.get("ZAMETANO_RATE_LIMIT", "")),
        # On unless switched off: it has no timer, so alone a command is written at once (docs/benchmarks.md).
        group_commit=parse_switch("ZAMETANO_GROUP_COMMIT", env.get("ZAMETANO_GROUP_COMMIT", ""), default=True),
        log_format=parse_log_format(env.get("ZAMETANO_LOG_FORMAT", "")),
        max_streams=parse_max_streams(env.get("ZAMETANO_MAX_STREAMS", "")),
        stream_heartbeat=parse_stream_heartbeat(env.get("ZAMETANO_STREAM_HEARTBEAT", "")),
        player_key_file=env.get("ZAMETANO_PLAYER_KEY_FILE") or None,
        player_audience=env.get("ZAMETANO_PLAYER_AUDIENCE", "").strip() or DEFAULT_PLAYER_AUDIENCE,
        **parse_player_issuer(env.get("ZAMETANO_PLAYER_ISSUER", ""), env.get("ZAMETANO_PLAYER_JWKS_FILE", "")),
        **parse_money(env),
    )
    if own_file and make_dirs:
        make_data_dir(data_dir)
    return settings


def parse_money(env: Mapping[str, str]) -> dict[str, Any]:
    """ZAMETANO_MONEY and the wallet's settings (docs/wallet.md "Settings"), checked."""
    url = env.get("ZAMETANO_WALLET_URL", "").strip() or None
    kind = env.get("ZAMETANO_MONEY", "").strip() or ("wallet" if url else "none")
    if kind not in MONEY_KINDS:
        raise ConfigError(f"ZAMETANO_MONEY is one of {', '.join(MONEY_KINDS)}, not {kind!r}")
    if kind == "wallet" and not url:
        raise ConfigError("ZAMETANO_MONEY=wallet needs ZAMETANO_WALLET_URL, the wallet's http:// or https:// address")
    if url is not None and (kind != "wallet" or not re.fullmatch(r"https?://[^\s/]+(/\S*)?", url)):
        raise ConfigError(f"ZAMETANO_WALLET_URL is an http:// or https:// address used with ZAMETANO_MONEY=wallet, "
                          f"not {url!r} with ZAMETANO_MONEY={kind}")
    token = env.get("ZAMETANO_WALLET_TOKEN", "").strip() or None
    if token is not None and len(token) < MIN_TOKEN_LENGTH:
        raise ConfigError(f"ZAMETANO_WALLET_TOKEN has at least {MIN_TOKEN_LENGTH} characters")
    text = env.get("ZAMETANO_WALLET_TIMEOUT", "").strip() or "2"
    try:
        timeout = float(text)
    except ValueError:
        timeout = -1.0
    if not 0.05 <= timeout <= 30:
        raise ConfigError(f"ZAMETANO_WALLET_TIMEOUT is a number of seconds from 0.05 to 30, not {text!r}")
    currency = env.get("ZAMETANO_CURRENCY", "").strip() or "EUR"
    if not re.fullmatch(r"[A-Z]{3}", currency):
        raise ConfigError(f"ZAMETANO_CURRENCY is three capital letters (ISO 4217, such as EUR), not {currency!r}")
    return {"money": kind, "wallet_url": url, "wallet_token": token, "wallet_timeout": timeout, "currency": currency}


def postgres_defaults(persistence: dict[str, str], env: Mapping[str, str]) -> None:
    """PostgreSQL's settings completed in place: the required ones checked, the bounded waits set."""
    missing = [name for name in POSTGRES_REQUIRED if not persistence.get(name)]
    if missing:
        raise ConfigError(
            f"PERSISTENCE_MODULE=eventsourcing.postgres needs {' and '.join(missing)}: the host, the database "
            "and the user to connect as (POSTGRES_HOST, POSTGRES_DBNAME, POSTGRES_USER)"
        )
    persistence.setdefault("POSTGRES_PASSWORD", "")  # trust auth needs none
    persistence.setdefault("POSTGRES_PORT", "5432")
    # The library waits 30 s for a connection, and retries: a request would outlive gunicorn's timeout.
    persistence.setdefault("POSTGRES_CONNECT_TIMEOUT", CONNECT_TIMEOUT)
    # Carried with the library's settings to where the pool is made (service/store.py).
    persistence["POSTGRES_TARGET_SESSION_ATTRS"] = parse_target_session_attrs(
        persistence.get("POSTGRES_HOST", ""), env.get("POSTGRES_TARGET_SESSION_ATTRS", ""))


SESSION_ATTRS = ("any", "read-write", "primary")


def parse_target_session_attrs(host: str, given: str) -> str:
    """Which of several POSTGRES_HOST entries the service may use: with more than one (a primary and its
    standbys), only the one that takes writes (read-write) unless told otherwise; with one, any."""
    given = given.strip() or ("read-write" if "," in host else "any")
    if given not in SESSION_ATTRS:
        raise ConfigError(f"POSTGRES_TARGET_SESSION_ATTRS is one of {', '.join(SESSION_ATTRS)}, not {given!r}: "
                          "every command writes, so a standby that only reads is never a target")
    return given


def parse_player_issuer(issuer: str, jwks_file: str) -> dict[str, str | None]:
    """An external issuer of players' tokens: both its ``iss`` and its JWKS file, or neither."""
    issuer, jwks_file = issuer.strip(), jwks_file.strip()
    if bool(issuer) != bool(jwks_file):
        raise ConfigError(
            "ZAMETANO_PLAYER_ISSUER and ZAMETANO_PLAYER_JWKS_FILE go together: the issuer's name (the `iss` of its "
            "tokens) and the JWKS file of the keys it signs them with"
        )
    return {"player_issuer": issuer or None, "player_jwks_file": jwks_file or None}


def make_data_dir(path: Path) -> None:
    """The data folder, mode 0700 (service/files.py)."""
    from service.files import private_folder  # files reads ConfigError from here

    private_folder(path, "ZAMETANO_DATA_DIR")


def parse_statement_timeout(text: str) -> float:
    """Seconds one PostgreSQL statement may run, 0 (no limit) to 3600; empty: 10."""
    try:
        value = float(text or STATEMENT_TIMEOUT)
    except ValueError as exc:
        raise ConfigError("ZAMETANO_STATEMENT_TIMEOUT must be a number of seconds (0: no limit)") from exc
    if not 0 <= value <= 3600:
        raise ConfigError("ZAMETANO_STATEMENT_TIMEOUT must be between 0 (no limit) and 3600 seconds")
    return value


def max_streams(environ: Mapping[str, str] | None = None) -> int:
    """ZAMETANO_MAX_STREAMS alone, for the server, which gives each worker a thread for every stream."""
    return parse_max_streams((os.environ if environ is None else environ).get("ZAMETANO_MAX_STREAMS", ""))


def parse_max_streams(text: str) -> int:
    """Live streams open at once per worker process: a whole number from 0 (none) to 10000; empty: 32."""
    if not text.strip():
        return DEFAULT_MAX_STREAMS
    try:
        value = int(text)
    except ValueError:
        value = -1
    if not 0 <= value <= MAX_MAX_STREAMS:
        raise ConfigError(
            f"ZAMETANO_MAX_STREAMS is the number of live streams each worker holds open at once, a whole number "
            f"from 0 (none) to {MAX_MAX_STREAMS}, not {text!r}"
        )
    return value


def parse_stream_heartbeat(text: str) -> float:
    """Seconds of silence after which a stream sends a heartbeat: 0.1 to 3600; empty: 15."""
    if not text.strip():
        return DEFAULT_STREAM_HEARTBEAT
    try:
        value = float(text)
    except ValueError:
        value = math.nan
    if not 0.1 <= value <= 3600:
        raise ConfigError(f"ZAMETANO_STREAM_HEARTBEAT is a number of seconds from 0.1 to 3600, not {text!r}")
    return value


def parse_log_format(text: str) -> str | None:
    """``json`` or ``text``; empty: chosen by whether stderr is a terminal."""
    value = text.strip().lower()
    if value and value not in LOG_FORMATS:
        raise ConfigError(f"ZAMETANO_LOG_FORMAT is json or text (or empty: text on a terminal, else json), not {text!r}")
    return value or None


def parse_switch(name: str, text: str, default: bool = False) -> bool:
    """On (y, yes, true, on, 1) or off (n, no, false, off, 0); ``default`` when empty."""
    value = text.strip().lower()
    if not value:
        return default
    if value in ("y", "yes", "true", "on", "1"):
        return True
    if value in ("n", "no", "false", "off", "0"):
        return False
    raise ConfigError(f"{name} is on (y, yes, true, on, 1) or off (n, no, false, off, 0)")


def parse_tokens(text: str) -> dict[str, tuple[str, str]]:
    """``role:token`` or ``role@name:token`` entries separated by commas, e.g.
    ``operator@cage:7f3a9c2e51d84b06,auditor:0b8e4d2a9f61c735``; a token without a name is called
    ``<role>-<n>``, the n-th of its role in the list (``auditor-1``). A token of fewer than MIN_TOKEN_LENGTH
    characters is refused, naming its entry (never the token)."""
    tokens: dict[str, tuple[str, str]] = {}
    counts = dict.fromkeys(ROLES, 0)
    for item in filter(None, (part.strip() for part in text.split(","))):
        holder, sep, token = item.partition(":")
        role, named, name = holder.partition("@")
        if not sep or role not in ROLES or not token or (named and not TOKEN_NAME.fullmatch(name)):
            raise ConfigError(
                f"ZAMETANO_TOKENS entries are role:token or role@name:token, with role one of {', '.join(ROLES)} "
                "and a name of 1 to 40 letters, digits, '.', '_' or '-'"
            )
        counts[role] += 1
        name = name if named else f"{role}-{counts[role]}"
        if len(token) < MIN_TOKEN_LENGTH:
            raise ConfigError(
                f"ZAMETANO_TOKENS: the token of {name} ({role}) has {len(token)} characters; a token has at least "
                f"{MIN_TOKEN_LENGTH} (e.g. openssl rand -hex 24)"
            )
        tokens[token] = (role, name)
    return tokens


def parse_max_body_bytes(text: str) -> int:
    """A whole number of bytes, at least 1 KiB (empty: the default, 64 KiB)."""
    if not text.strip():
        return DEFAULT_MAX_BODY_BYTES
    try:
        value = int(text)
    except ValueError:
        raise ConfigError("ZAMETANO_MAX_BODY_BYTES must be a whole number of bytes, e.g. 65536") from None
    if value < 1024:
        raise ConfigError("ZAMETANO_MAX_BODY_BYTES must be at least 1024: smaller refuses ordinary commands")
    return value


def parse_rate_limit(text: str) -> RateLimit | None:
    """``<requests>/<s|min|h>[:<burst>]``, e.g. ``50/s`` or ``50/s:200``; empty, ``0`` or ``off`` turns it
    off. Without a burst a client may spend one period's worth at once (at least one request)."""
    text = text.strip().lower()
    if text in ("", "0", "off", "none", "no"):
        return None
    problem = (
        "ZAMETANO_RATE_LIMIT is <requests>/<s|min|h>[:<burst>], e.g. 50/s or 50/s:200 "
        "(a positive rate, a burst of at least 1), or off"
    )
    rate, _, burst_text = text.partition(":")
    count_text, slash, period = rate.partition("/")
    if not slash or period.strip() not in RATE_PERIODS:
        raise ConfigError(problem)
    try:
        count = float(count_text)
        if not (math.isfinite(count) and count > 0):
            raise ValueError(count_text)
        burst = int(burst_text) if burst_text else max(1, int(count))
    except ValueError:
        raise ConfigError(problem) from None
    if burst < 1:
        raise ConfigError(problem)
    return RateLimit(per_second=count / RATE_PERIODS[period.strip()], burst=burst)
