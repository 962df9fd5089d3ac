"""What money costs a command: a coup of punto banco with 8 bettors, staked and settled through the service, with
money off, with purses and with the reference wallet, on SQLite and PostgreSQL (see scripts/bench-money)."""

from __future__ import annotations

import statistics
import sys
import tempfile
import time
from datetime import datetime, timezone
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from _bench import drop_schema, markdown_table, postgres_env, progress, write_section  # noqa: E402
from bench_http import machine  # noqa: E402
from scripts._args import Parser, whole  # noqa: E402

SECTION = "## Money (bench-money)"
BETTORS = [f"b{n:02d}" for n in range(8)]
KINDS = ("none", "purses", "wallet")


def coups(env: dict[str, str], kind: str, count: int, wallet_url: str | None) -> list[float]:
    """Milliseconds a command over ``count`` coups (each: 8 stakes, the close, the deal and its settlement)."""
    from service.application import TablesService
    from service.config import load

    money = {"none": {}, "purses": {"ZAMETANO_MONEY": "purses"}, "wallet": {"ZAMETANO_WALLET_URL": wallet_url or ""}}
    service = TablesService(load({**env, **money[kind]}))
    try:
        if kind == "wallet":
            service.money.start()
        table = service.open_table("punto-banco", ["marta"], {"open_seats": True, "min_stake": 1, "max_stake": 100},
                                   croupier="marta")["table_id"]
        for bettor in BETTORS:
            if kind == "purses":
                service.money.cash(bettor, "deposit", 10**9, "bench", "", None)
        state = service.current_state(table)
        while state["phase"] not in ("stakes",):
            entry = state["expects"][0]
            player = BETTORS[0] if entry["player"] == "*" else entry["player"]
            fields = {"position": 100} if entry["command"] == "cut" else {}
            state = service.execute(table, entry["command"], player, fields)["state"]
        timings = []
        for _ in range(count):
            started, commands = time.perf_counter(), 0
            for bettor in BETTORS:
                service.execute(table, "place_stake", bettor, {"spot": "player", "amount": 10})
                commands += 1
            service.execute(table, "close_stakes", "marta", {})
            state = service.execute(table, "deal", "marta", {})["state"]
            commands += 2
            timings.append((time.perf_counter() - started) * 1000 / commands)
            if state["phase"] != "stakes":
                break  # the shoe's end: enough coups for a measure
        return timings
    finally:
        service.close()


def main(argv: list[str] | None = None) -> int:
    parser = Parser(prog="bench-money", description=__doc__)
    parser.add_argument("--coups", type=whole(2, 60), default=20, help="coups a run (default 20)")
    parser.add_argument("--repeat", type=whole(1, 20), default=3, help="runs of each cell (default 3)")
    parser.add_argument("--no-postgres", action="store_true", help="SQLite only")
    args = parser.parse_args(argv)
    from tests.wallets import Wallet

    rows = []
    with tempfile.TemporaryDirectory() as folder:
        wallet = Wallet(Path(folder))
        try:
            for bettor in BETTORS:
                wallet.deposit(bettor, 10**9)
            stores = [("SQLite", None)] + ([] if args.no_postgres else [("PostgreSQL", True)])
            for label, postgres in stores:
                medians = {}
                for kind in KINDS:
                    runs = []
                    for run in range(args.repeat):
                        progress(f"{label}, money {kind}, run {run + 1}/{args.repeat}")
                        if postgres:
                            made = postgres_env()
                            if made is None:
                                return 2
                            env, schema = made
                        else:
                            env, schema = {"PERSISTENCE_MODULE": "eventsourcing.sqlite",
                                           "SQLITE_DBNAME": f"{folder}/{kind}-{run}.sqlite",
                                           "ZAMETANO_DATA_DIR": folder}, None
                        try:
                            runs.append(statistics.median(coups(env, kind, args.coups, wallet.url)))
                        finally:
                            if schema:
                                drop_schema(schema)
                    medians[kind] = statistics.median(runs)
                for kind in KINDS:
                    rows.append([label, kind, f"{medians[kind]:.2f}", f"{medians[kind] / medians['none']:.2f}"])
        finally:
            wallet.kill()
    stamp = datetime.now(timezone.utc).strftime("%Y-%m-%d %H:%M UTC")
    table = markdown_table(["store", "money", "ms a command (median)", "against none"], rows, "llrr")
    print(table)
    write_section(ROOT / "docs" / "benchmarks.md", SECTION, f"""{SECTION}

What paying each command's money costs, through the service (no HTTP): a punto banco coup of 8 bettors (8 stakes,
the close, the deal and its settlement, which pays the 8 back), {args.coups} coups a run, the median of
{args.repeat} runs; `none` is a balance as a result only, `purses` pays each stake from the bettor's purse in the
same transaction, `wallet` asks the reference wallet (scripts/wallet, on the same machine) before each stake and
delivers the settlement's credits from the outbox. `./scripts/bench-money`, {stamp}, {machine()}.

{table}
""")
    return 0


if __name__ == "__main__":
    sys.exit(main())
