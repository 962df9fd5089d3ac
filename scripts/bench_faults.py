"""The embedded (SQLite) store's file faults under load, measured on the real server.

    ./scripts/bench-faults [--seconds S] [--settle S] [--clients C] [--workers W] [--faults NAME,...] [--no-docs]

The server (api/server.py, W workers, 4 by default) keeps its SQLite store on a small filesystem of its own
(a 48 MiB tmpfs) and runs without CAP_DAC_OVERRIDE, so that a file's mode binds it as it binds any other user.
C clients (4 by default) each play a table with random legal commands, every other one with Idempotency-Key
(resending a failed command with its key until it is answered), the others deciding anew after a failure.
Each fault lasts S seconds (20 by default), with calm before and after: the disk filled with dd, the file made
read-only, its folder made read-only, the file moved away. For each it prints and writes to section "Store
faults (bench-faults)" of docs/benchmarks.md: the commands asked during the fault and after it, the answers
500 and 503, the commands recorded behind an answer that said they failed (a table that moved on after its
command failed, the 503 not saying the outcome was unknown), the acknowledged events lost or doubled, the
seconds to the first 503, and from the fault's end to the first command recorded and to /readyz ready.

Needs root (a tmpfs is mounted, and setpriv drops the capability); exit 2 with the reason otherwise.
"""

from __future__ import annotations

import argparse
import os
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from scripts._args import Parser, seconds, whole  # noqa: E402
from _bench import markdown_table, number, progress, write_section  # noqa: E402
from tests.e2e.store_faults import FAULTS, Measured, faulty_server, lost_or_doubled, open_clients, \
    small_filesystem, under_faults, why_not_possible  # noqa: E402

SECTION = "## Store faults (bench-faults)"
HEADERS = ["fault", "commands", "answers 500", "answers 503", "recorded behind a failure", "outcome unknown",
           "first 503 (s)", "commands again (s)", "/readyz ready again (s)", "/readyz not ready during"]


def fault_names(text: str) -> list[str]:
    names = [name.strip() for name in text.split(",") if name.strip()]
    unknown = [name for name in names if name not in FAULTS]
    if not names or unknown:
        raise argparse.ArgumentTypeError(f"names faults among {', '.join(FAULTS)}, comma-separated, not {text!r}")
    return names


def row(m: Measured) -> list[str]:
    commands = sum(a.method == "POST" for a in m.answers)
    return [m.fault, f"{commands:,}", f"{m.count(500):,}", f"{m.count(503):,}", f"{m.behind:,}", f"{m.unknown:,}",
            number(m.first_503, 2), number(m.recovered, 2), number(m.ready_again, 2),
            "yes" if m.unready_during else "no"]


def section(args: argparse.Namespace, rows: list[list[str]], problems: list[str], when: str) -> str:
    lost = "none" if not problems else f"{len(problems)}: " + "; ".join(problems[:5])
    return (
        f"{SECTION}\n\n`./scripts/bench-faults --seconds {args.seconds:g} --clients {args.clients} --workers "
        f"{args.workers}` ({when}, {os.cpu_count()} cores, load average {os.getloadavg()[0]:.1f} at the end): the "
        f"real server on SQLite in a 48 MiB tmpfs, without CAP_DAC_OVERRIDE, {args.clients} clients playing a "
        f"table each (every other one with Idempotency-Key), each fault {args.seconds:g} s with {args.settle:g} s "
        "of calm around it. The commands counted are those asked from the fault's start to the end of the calm "
        "after it; the times are from the fault in place to the first 503, and from its end to the first command "
        "recorded and to /readyz answering 200.\n\n"
        + markdown_table(HEADERS, rows, "l" + "r" * 8 + "l")
        + f"\n\nAcknowledged events lost or doubled, on every table: {lost}.\n"
    )


def main(argv: list[str] | None = None) -> int:
    parser = Parser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--seconds", type=seconds(0.5), default=20.0, help="seconds each fault lasts (default 20)")
    parser.add_argument("--settle", type=seconds(0.5), default=3.0, help="seconds of calm around each (default 3)")
    parser.add_argument("--clients", type=whole(1), default=4, help="clients, each playing a table (default 4)")
    parser.add_argument("--workers", type=whole(1), default=4, help="the server's workers (default 4)")
    parser.add_argument("--faults", type=fault_names, default=list(FAULTS), help=f"among {', '.join(FAULTS)}")
    parser.add_argument("--no-docs", action="store_true", help="print the table, leave docs/benchmarks.md alone")
    parser.add_argument("--output", default=str(ROOT / "docs" / "benchmarks.md"))
    args = parser.parse_args(argv)
    reason = why_not_possible()
    if reason is not None:
        print(f"bench-faults: error: {reason}", file=sys.stderr)
        return 2
    with tempfile.TemporaryDirectory(prefix="zametano-bench-faults-") as logs, small_filesystem(48) as folder:
        log = Path(logs) / "server.log"
        progress(f"serving on a 48 MiB tmpfs, {args.workers} workers; the server's log: {log}")
        with faulty_server(folder, log, workers=args.workers) as (base, data, db):
            clients = open_clients(base, args.clients)
            measured = under_faults(base, data, db, clients, args.faults, lasting=args.seconds, settle=args.settle,
                                    say=lambda line: progress(f"fault {line}"))
            problems = [p for c in clients for p in lost_or_doubled(base, c)]
    rows = [row(m) for m in measured]
    print(markdown_table(HEADERS, rows, "l" + "r" * 8 + "l"))
    print(f"acknowledged events lost or doubled: {len(problems)}")
    if not args.no_docs:
        write_section(Path(args.output), SECTION, section(args, rows, problems, time.strftime("%Y-%m-%d %H:%M UTC",
                                                                                            time.gmtime())))
        progress(f"written to {args.output}, section {SECTION[3:]!r}")
    return 0 if not problems and all(m.count(500) == 0 and m.behind == 0 for m in measured) else 1


if __name__ == "__main__":
    sys.exit(main())
