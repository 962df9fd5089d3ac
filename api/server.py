"""Serving under gunicorn: the event store's tables are created once, before workers fork, and each
worker builds its own service through the app factory.

    python -m api.server [--host H] [--port P] [--workers N]
"""

from __future__ import annotations

import argparse
import ipaddress
import os
import sys
from typing import Any

from gunicorn.app.base import BaseApplication

from service.config import ConfigError, load


def is_loopback(host: str) -> bool:
    if host == "localhost":
        return True
    try:
        return ipaddress.ip_address(host.strip("[]")).is_loopback
    except ValueError:
        return False


def prepare_store() -> str:
    """Creates the event store's tables in this (master) process, then tells workers not to: several
    processes creating tables at once race in PostgreSQL ("tuple concurrently updated"). Makes the
    signing key here too (or records a new one in the keyring), so every worker reads the same key."""
    from service.application import TablesService
    from service.signing import load_signer

    settings = load()
    signer = load_signer(settings)
    service = TablesService(settings, signer=signer)  # creates the tables unless CREATE_TABLE says not to
    try:
        service.check_store()  # a CIPHER_KEY that cannot read the store: a clear error, before any worker starts
    finally:
        service.close()
    os.environ["CREATE_TABLE"] = "n"
    where = settings.persistence.get("SQLITE_DBNAME") or (
        f"PostgreSQL {settings.persistence.get('POSTGRES_HOST')}/{settings.persistence.get('POSTGRES_DBNAME')}"
    )
    return f"{settings.module} ({where}); {signer.describe()}"


def check_exposure(host: str) -> str | None:
    """API.md: with no tokens the service runs open, only on loopback; elsewhere it refuses to listen."""
    if load().tokens:
        return None
    if not is_loopback(host):
        raise ConfigError(
            f"Refusing to listen on {host} without tokens: set ZAMETANO_TOKENS (e.g. operator:<secret>) "
            "or listen on 127.0.0.1."
        )
    return "No tokens configured (ZAMETANO_TOKENS): the API is open to anyone on this machine, listening on loopback only."


class Server(BaseApplication):  # type: ignore[misc]
    def __init__(self, options: dict[str, Any]) -> None:
        self.options = options
        super().__init__()

    def load_config(self) -> None:
        for key, value in self.options.items():
            self.cfg.set(key, value)
        if "control_socket_disable" in self.cfg.settings:
            # several servers (tests, benchmarks) may run at once; none needs gunicorn's control socket
            self.cfg.set("control_socket_disable", True)

    def load(self) -> Any:
        from api.app import create_app

        return create_app()


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="scripts/run", description="Serve the Zametano API under gunicorn.")
    parser.add_argument("--host", default=os.environ.get("HOST", "127.0.0.1"))
    parser.add_argument("--port", type=int, default=int(os.environ.get("PORT", "8000")))
    parser.add_argument("--workers", type=int, default=int(os.environ.get("WEB_CONCURRENCY", "2")))
    args = parser.parse_args(argv)
    try:
        warning = check_exposure(args.host)
        store = prepare_store()
    except ConfigError as exc:
        print(f"error: {exc}", file=sys.stderr)
        return 2
    if warning:
        print(f"warning: {warning}", file=sys.stderr)
    print(f"Zametano on http://{args.host}:{args.port}  events in {store}", file=sys.stderr, flush=True)
    bind = f"[{args.host}]:{args.port}" if ":" in args.host else f"{args.host}:{args.port}"
    Server({"bind": bind, "workers": args.workers, "accesslog": "-", "timeout": 60}).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
