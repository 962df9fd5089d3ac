"""Faults of the embedded (SQLite) store's file under load, for tests/e2e/test_store_faults.py and
scripts/bench-faults: a small filesystem of its own (tmpfs) filled, the file or its folder made read-only,
the file gone; the real server serving clients that play tables all along.

The server runs without CAP_DAC_OVERRIDE when started as root (``setpriv``), for root otherwise ignores a
file's mode. Every answer is kept, and after each command answered with a failure the client reads its
table: a table that moved on although its command failed is a command recorded behind a failure.
"""

from __future__ import annotations

import contextlib
import os
import random
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import requests

from tests.e2e.servers import api_server, free_port, running_server
from tests.helpers import pick

PLAYERS = ["anna", "boris", "vera"]
ANSWER_WITHIN = 6.0  # seconds; slower is a hang
SETPRIV = ("setpriv", "--inh-caps=-dac_override", "--bounding-set=-dac_override", "--")
# The words of the 503 that says a command's outcome is unknown (service/errors.py OutcomeUnknown).
OUTCOME_UNKNOWN = "say whether it was recorded"


def why_not_possible() -> str | None:
    """Why these faults cannot be made here (None: they can): a tmpfs needs root, and so does dropping the
    capability that lets root write whatever a file's mode says."""
    if os.geteuid() != 0:
        return "mounting a small filesystem (tmpfs) needs root"
    if shutil.which("setpriv") is None:
        return "setpriv (util-linux) is needed to serve without CAP_DAC_OVERRIDE, so that modes bind root"
    with tempfile.TemporaryDirectory(prefix="zametano-faults-") as folder:
        done = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=1m", "tmpfs", folder], capture_output=True,
                              text=True)
        if done.returncode != 0:
            return f"mount -t tmpfs is refused here: {done.stderr.strip()}"
        subprocess.run(["umount", folder], check=False)
    return None


@contextlib.contextmanager
def small_filesystem(megabytes: int = 48) -> Iterator[Path]:
    """A tmpfs of its own, removed afterwards."""
    folder = Path(tempfile.mkdtemp(prefix="zametano-faults-"))
    subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={megabytes}m,mode=0700", "tmpfs", str(folder)], check=True)
    try:
        yield folder
    finally:
        subprocess.run(["umount", "-l", str(folder)], check=False)
        folder.rmdir()


@dataclass
class Fault:
    name: str
    begin: Callable[[Path, Path], None]  # (data folder, SQLite file)
    end: Callable[[Path, Path], None]


def _fill(folder: Path, db: Path) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={folder.parent / 'filler'}", "bs=1M"], capture_output=True, check=False)


def _unfill(folder: Path, db: Path) -> None:
    (folder.parent / "filler").unlink()


FAULTS = {
    "full disk": Fault("full disk", _fill, _unfill),
    "read-only file": Fault("read-only file", lambda f, db: db.chmod(0o400), lambda f, db: db.chmod(0o600)),
    "read-only folder": Fault("read-only folder", lambda f, db: f.chmod(0o500), lambda f, db: f.chmod(0o700)),
    "vanished file": Fault("vanished file", lambda f, db: db.rename(db.with_suffix(".away")),
                           lambda f, db: db.with_suffix(".away").rename(db)),
}


@dataclass
class Answer:
    at: float  # monotonic, when asked
    method: str
    path: str
    status: int | None  # None: no answer in time
    content_type: str = ""
    retry_after: str | None = None
    body: Any = None
    done: float = 0.0  # monotonic, when answered


@dataclass
class Client:
    """Plays one table with random legal commands. After a command answered with anything but 200 it reads
    the table: moved on, the command was recorded behind a failure (``behind``; ``unknown`` when the 503 said
    the outcome was unknown). With keys it then resends the same command until it is answered; without, it
    decides anew on the table read."""

    base: str
    table_id: str
    state: dict[str, Any]
    seed: int
    keyed: bool
    pause: float = 0.0  # seconds between two commands
    answers: list[Answer] = field(default_factory=list)
    receipts: list[dict[str, Any]] = field(default_factory=list)
    behind: list[Answer] = field(default_factory=list)
    unknown: int = 0

    def ask(self, method: str, path: str, **kwargs: Any) -> Answer:
        at = time.monotonic()
        try:
            r = requests.request(method, self.base + path, timeout=ANSWER_WITHIN, **kwargs)
        except requests.RequestException:
            answer = Answer(at, method, path, None)
        else:
            try:
                body = r.json()
            except ValueError:
                body = r.text
            answer = Answer(at, method, path, r.status_code, r.headers.get("Content-Type", ""),
                            r.headers.get("Retry-After"), body)
        answer.done = time.monotonic()
        self.answers.append(answer)
        return answer

    def run(self, stop: threading.Event) -> None:
        rng = random.Random(self.seed)
        while not stop.is_set():
            name, player, fields = pick(self.state, rng)
            body = {"command": name, "player": player, **fields}
            key = {"Idempotency-Key": f"fault-client-{self.seed}-{len(self.receipts):06d}"} if self.keyed else {}
            answer = self.command(body, key)
            while answer.status != 200 and not stop.is_set():
                self.after_failure(answer)
                if not self.keyed:
                    break
                time.sleep(0.05)
                answer = self.command(body, key)
            if answer.status == 200:
                self.receipts.append(answer.body)
                self.state = answer.body["state"]
            time.sleep(self.pause)

    def command(self, body: dict[str, Any], key: dict[str, str]) -> Answer:
        return self.ask("POST", f"/tables/{self.table_id}/commands", json=body, headers=key)

    def after_failure(self, answer: Answer) -> None:
        """Reads the table until it answers; a table past the version this client knew moved on by the
        command that failed."""
        known = self.state["version"]
        while True:
            fresh = self.ask("GET", f"/tables/{self.table_id}")
            if fresh.status == 200:
                break
            time.sleep(0.05)
        if fresh.body["version"] > known:
            if isinstance(answer.body, dict) and OUTCOME_UNKNOWN in str(answer.body.get("message")):
                self.unknown += 1
            else:
                self.behind.append(answer)
        if not self.keyed:
            self.state = fresh.body


@dataclass
class Measured:
    fault: str
    began: float
    ending: float  # when the fault's end was begun
    ended: float  # when it was done
    answers: list[Answer]
    readiness: list[Answer]
    behind: int  # commands recorded behind an answer that said they failed
    unknown: int  # commands recorded behind a 503 that said their outcome was unknown

    def count(self, status: int) -> int:
        return sum(a.status == status for a in self.answers if self.began <= a.at)

    @property
    def first_503(self) -> float | None:
        late = [a.at for a in self.answers if a.at >= self.began and a.status == 503]
        return min(late) - self.began if late else None

    @property
    def recovered(self) -> float | None:
        """Seconds from the fault's end to the first command answered 200 asked after it."""
        back = [a.at for a in self.answers if a.at >= self.ended and a.status == 200 and a.method == "POST"]
        return min(back) - self.ended if back else None

    @property
    def ready_again(self) -> float | None:
        back = [a.at for a in self.readiness if a.at >= self.ended and a.status == 200]
        return min(back) - self.ended if back else None

    @property
    def unready_during(self) -> bool:
        """/readyz said not ready from half a second into the fault until its end (answered before it ended):
        the gate looks at the file every GATE_EVERY seconds, and a probe asked just as the fault began may
        have been answered before."""
        during = [a for a in self.readiness if self.began + 0.5 <= a.at and a.done < self.ending]
        return bool(during) and all(a.status == 503 for a in during)


def server_command(port: int, workers: int) -> list[str]:
    command = api_server(port, workers)
    return [*SETPRIV, *command] if os.geteuid() == 0 else command


@contextlib.contextmanager
def faulty_server(folder: Path, log: Path, workers: int = 2) -> Iterator[tuple[str, Path, Path]]:
    """The real server on an SQLite store in ``folder``'s data folder: (its URL, the data folder, the file)."""
    data = folder / "data"
    data.mkdir(mode=0o700)
    db = data / "zametano.sqlite"
    port = free_port()
    env = {"ZAMETANO_DATA_DIR": str(data), "PERSISTENCE_MODULE": "eventsourcing.sqlite"}
    with running_server(env, log, port=port, command=server_command(port, workers)) as server:
        yield str(server), data, db


def open_clients(base: str, count: int, pause: float = 0.0) -> list[Client]:
    clients = []
    for i in range(count):
        r = requests.post(f"{base}/tables", json={"game": "chemin-de-fer", "players": PLAYERS, "rules": {"decks": 2}},
                          timeout=ANSWER_WITHIN)
        r.raise_for_status()
        clients.append(Client(base, r.json()["table_id"], r.json(), seed=i, keyed=i % 2 == 0, pause=pause))
    return clients


def watch_readiness(base: str, stop: threading.Event, into: list[Answer], every: float = 0.1) -> None:
    probe = Client(base, "", {}, seed=-1, keyed=False)
    while not stop.is_set():
        into.append(probe.ask("GET", "/readyz"))
        time.sleep(every)


def under_faults(base: str, data: Path, db: Path, clients: list[Client], faults: list[str], *, lasting: float,
                 settle: float, say: Callable[[str], None] = lambda line: None) -> list[Measured]:
    """Each fault in turn, ``lasting`` seconds, with ``settle`` seconds of calm before and after, the clients
    playing all along; what each fault's stretch measured."""
    stop = threading.Event()
    readiness: list[Answer] = []
    threads = [threading.Thread(target=c.run, args=(stop,)) for c in clients]
    threads.append(threading.Thread(target=watch_readiness, args=(base, stop, readiness)))
    for t in threads:
        t.start()
    measured = []
    try:
        for name in faults:
            time.sleep(settle)
            behind_before = sum(len(c.behind) for c in clients)
            unknown_before = sum(c.unknown for c in clients)
            say(f"{name}: {lasting:g} s")
            FAULTS[name].begin(data, db)
            began = time.monotonic()  # the fault in place (a disk filled takes dd a moment)
            time.sleep(lasting)
            ending = time.monotonic()
            FAULTS[name].end(data, db)
            ended = time.monotonic()
            time.sleep(settle)
            answers = [a for c in clients for a in c.answers if a.at >= began - 0.001]
            behind = sum(len(c.behind) for c in clients) - behind_before
            unknown = sum(c.unknown for c in clients) - unknown_before
            measured.append(Measured(name, began, ending, ended, answers, list(readiness), behind, unknown))
    finally:
        stop.set()
        for t in threads:
            t.join()
    return measured


def lost_or_doubled(base: str, client: Client) -> list[str]:
    """What the log says against the client's receipts: an acknowledged event missing or changed (lost), two
    receipts claiming a version, a keyed command recorded twice (doubled)."""
    events = log_of(base, client.table_id)
    by_version = {e["version"]: e for e in events}
    problems, acknowledged = [], set()
    for receipt in client.receipts:
        for event in receipt["events"]:
            if by_version.get(event["version"]) != event:
                problems.append(f"lost: version {event['version']} of table {client.table_id}")
        versions = {e["version"] for e in receipt["events"]}
        if versions & acknowledged:
            problems.append(f"doubled: versions {sorted(versions & acknowledged)} acknowledged twice")
        acknowledged |= versions
    if client.keyed and acknowledged:
        # a keyed command is resent until answered: only the last one, cut short by the end, may lack a receipt
        last = max(acknowledged)
        stray = {e["command"] for e in events[1:] if e["version"] not in acknowledged and e["version"] < last}
        problems += [f"doubled: command {c} of keyed table {client.table_id} recorded without a receipt" for c in stray]
    return problems


def log_of(base: str, table_id: str) -> list[dict[str, Any]]:
    """The table's whole log, page by page."""
    events: list[dict[str, Any]] = []
    while True:
        page = requests.get(f"{base}/tables/{table_id}/events", params={"after": len(events), "limit": 1000},
                            timeout=60).json()["events"]
        events += page
        if len(page) < 1000:
            return events
