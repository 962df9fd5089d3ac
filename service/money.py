"""Money that leaves the table: each command's movements paid from purses or an operator's wallet.

``Money`` is the application's (``app.money``): the commands (service/commands.py) read each player's position
before a command is decided, and hand the decided table to ``settle``, which moves each player's purse by the
command's movements (domain/money.py) and gives back the purses to save in the same transaction as the table.
A purse that does not hold a debit, or a wallet that refuses it, refuses the command: nothing is recorded.

With a wallet (docs/wallet.md "The wallet protocol"), a debit is first recorded as asked in the player's purse,
in a transaction of its own, then asked of the wallet; the stake and the debit counted are saved together. A
debit asked and never counted is rolled back: at once when the command fails, by ``Outbox`` within
``ASK_GRACE`` otherwise (the service stopped). Credits, reversals and rollbacks are owed in the purse,
written with the events that cause them, and delivered by ``Outbox`` until the wallet acknowledges each.
"""

from __future__ import annotations

import json
import logging
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from datetime import timedelta
from typing import Any

from eventsourcing.application import AggregateNotFoundError
from eventsourcing.persistence import IntegrityError
from eventsourcing.utils import get_topic

from domain import chain
from domain import money as M
from domain.purse import PURSES, WALLET, Purse, WalletRefused, purse_id
from service import present
from service.errors import ServiceError
from service.limits import page_size, position

NONE = "none"
# Seconds after which a debit asked and not counted is rolled back: some calls' worth. A command still under way
# then (retrying a save) is not hurt: its save and the rollback cannot both be recorded, and it asks again.
ASK_GRACE = (3.0, 5)  # at least the first, and the second times the wallet's timeout
BACKOFF = (0.2, 10.0)  # the first wait before a delivery is tried again, doubling to the second
BREAKER = (3, 1.0)  # failures in a row after which the wallet is not called, and for how many seconds
log = logging.getLogger("zametano.money")


class ConcurrentPurse(ServiceError):
    """A purse that kept moving under a cashier's command: tried ten times, then a 409."""

    def __init__(self, player: str) -> None:
        super().__init__(f"{player}'s purse moved at every attempt to record this; send it again.")


class WalletUnavailable(ServiceError):
    """The wallet did not answer a debit, or failed: nothing was staked (503, Retry-After)."""

    retry_after = 1


class Money:
    """Where the players' money is: nowhere (``none``: a balance is only a result), purses, or a wallet."""

    def __init__(self, app: Any, kind: str = NONE, currency: str = "EUR", wallet: WalletClient | None = None) -> None:
        self.app, self.kind, self.currency, self.wallet = app, kind, currency, wallet
        self.on = kind != NONE
        self.outbox: Outbox | None = None

    def start(self) -> None:
        """A wallet's outbox delivered by this process from now on (every process of a service runs one)."""
        if self.kind == WALLET and self.outbox is None:
            self.outbox = Outbox(self)
            self.outbox.start()

    def close(self) -> None:
        if self.outbox is not None:
            self.outbox.stop()

    # --- a command's movements --------------------------------------------------------------------------------

    def before(self, table: Any) -> dict[str, int] | None:
        return M.positions(table) if self.on else None

    def settle(self, table: Any, before: dict[str, int] | None, first: int) -> list[Purse]:
        """The purses a decided command moves, their movements pending, to save with the table; a refusal
        (PurseShort, WalletRefused: DomainErrors) or WalletUnavailable if they cannot be paid."""
        if before is None:
            return []
        types = {type(e).__name__ for e in table.pending_events}
        moves = M.movements(before, M.positions(table), types)
        if not moves:
            return []
        where = {"table": str(table.id), "version": first, "round": M.round_of(table)}
        now = self.app.clock()
        purses = {m.player: self.purse(m.player) for m in moves}
        if self.kind == PURSES:
            for m in moves:
                purses[m.player].move(m.kind, m.amount, M.transaction_id(where["table"], first, m.player), where,
                                      m.reason, now)
            return list(purses.values())
        asked: list[Purse] = []
        try:
            for m in moves:
                if m.kind == M.DEBIT:
                    purses[m.player] = self._debit(m, where, asked)
        except BaseException:
            self.abandon(asked, "the command was not recorded")
            raise
        for m in moves:
            if m.kind != M.DEBIT:
                purses[m.player].owe(m.kind, m.amount, M.transaction_id(where["table"], first, m.player), where,
                                     m.reason, now)
        return list(purses.values())

    def _debit(self, m: M.Movement, where: dict[str, Any], asked: list[Purse]) -> Purse:
        """Asks the wallet to debit, recorded as asked first (in its own transaction); the purse with the debit
        counted, pending."""
        first = M.transaction_id(where["table"], where["version"], m.player)
        purse = self._recorded(m.player, lambda p: p.ask(p.next_transaction(first), first, m.amount, where,
                                                         self.app.clock()))
        tx = purse.last_asked(first)
        asked.append(purse)
        request = {"transaction": tx, "player": m.player, "amount": m.amount, "currency": self.currency, **where}
        assert self.wallet is not None
        answer = self.wallet.call("debit", request)  # WalletUnavailable: rolled back by settle
        if answer.get("status") == "refused":
            reason = str(answer.get("reason") or "no reason given")[:300]
            self._recorded(m.player, lambda p: p.refuse(tx, reason, self.app.clock()) if tx in p.asked else None)
            asked.remove(purse)
            raise WalletRefused(m.player, m.amount, reason)
        purse.count(tx, answer.get("balance"), self.app.clock())
        return purse

    def _recorded(self, player: str, step: Any) -> Purse:
        """``step`` recorded on the player's purse as stored now, again on a fresher one after a lost race (the
        outbox records deliveries on the same purse); the purse as saved."""
        for _ in range(10):
            purse = self.purse(player)
            step(purse)
            try:
                self.app.save(purse)
                return purse
            except IntegrityError:
                continue
        raise ConcurrentPurse(player)

    def abandon(self, purses: list[Purse], why: str) -> None:
        """Rolls back every debit these purses asked that is still neither counted nor rolled back, each read
        again: a command whose save committed after all has counted its debits, and a save still under way
        and this rollback cannot both be recorded (each appends the purse's next version)."""
        for purse in purses:
            self.roll_back_asked(purse.player, why, older_than=None)

    def roll_back_asked(self, player: str, why: str, older_than: float | None) -> int:
        """Rolls back the player's debits asked and not counted (only those asked ``older_than`` seconds ago or
        more, if given); how many. A lost race with another save of the purse is tried again."""
        for _ in range(5):
            purse = self.purse(player)
            cutoff = self.app.clock() - timedelta(seconds=older_than) if older_than is not None else None
            stale = [tx for tx, a in purse.asked.items() if cutoff is None or a["at"] <= cutoff]
            if not stale:
                return 0
            for tx in stale:
                purse.roll_back(tx, why, self.app.clock())
            try:
                self.app.save(purse)
            except IntegrityError:
                continue
            if self.outbox is not None:
                self.outbox.kick()
            return len(stale)
        return 0

    def saved(self, purses: list[Purse]) -> None:
        """After a command's save: what it owes the wallet is delivered now rather than at the next look."""
        if self.outbox is not None and any(p.due for p in purses):
            self.outbox.kick()

    # --- a cashier's, and reading a purse ----------------------------------------------------------------------

    def cash(self, player: str, command: str, amount: Any, by: str | None, note: str, key: str | None) -> dict[str, Any]:
        """A cashier's deposit or withdrawal, recorded once per Idempotency-Key (a repeat answers as the first)."""
        for _ in range(10):
            purse = self.purse(player)
            if key is not None and key in purse.keys:
                return self.shown(purse, purse.keys[key] - 1, 1)
            if command == "deposit":
                purse.deposit(amount, by or "cashier", note, self.app.clock(), key)
            else:
                purse.withdraw(amount, by or "cashier", note, self.app.clock(), key)
            try:
                self.app.save(purse)
            except IntegrityError:
                continue  # a movement of a table came first: decided again on the purse as it is now
            return self.shown(purse, purse.version - 1, 1)
        raise ConcurrentPurse(player)

    def shown(self, purse: Purse | str, after: int = 0, limit: int = 100) -> dict[str, Any]:
        """A purse as GET /players/{player}/purse shows it: its balance, its signed head and a page of its log."""
        if isinstance(purse, str):
            found = self.purse(purse)
            if found.version == 0 or found.pending_events:
                return {"player": purse, "money": self.kind, "currency": self.currency, "balance": 0, "deposits": 0,
                        "withdrawals": 0, "version": 0, "head": "", "receipt": None, "movements": [], "next_after": None}
            purse = found
        limit = page_size(limit)
        events = list(self.app.events.get(purse.id, gt=position(after), limit=limit + 1))
        more = len(events) > limit
        events = events[:limit]
        receipt = self.app.signer.sign_receipt(str(purse.id), purse.version, purse.head,
                                               chain.format_timestamp(purse.modified_on))
        return present.purse(purse, events, receipt, events[-1].originator_version if more else None)

    def purse(self, player: str) -> Purse:
        """The player's purse as stored now, or a new one (its opening pending)."""
        try:
            return self.app.repository.get(purse_id(player))  # type: ignore[no-any-return]
        except AggregateNotFoundError:
            return Purse.open(player, self.kind if self.on else PURSES, self.currency, self.app.clock())


class WalletClient:
    """The wallet's HTTP protocol (docs/wallet.md): one POST an operation, its JSON answer, or WalletUnavailable.
    After BREAKER[0] failures in a row the wallet is not called for BREAKER[1] seconds: stakes answer 503 at once."""

    def __init__(self, url: str, token: str | None = None, timeout: float = 2.0, breaker: bool = True) -> None:
        self.url, self.token, self.timeout, self.breaker = url.rstrip("/"), token, timeout, breaker
        self.failures, self.closed_until = 0, 0.0
        self.lock = threading.Lock()

    def call(self, operation: str, body: dict[str, Any]) -> dict[str, Any]:
        if time.monotonic() < self.closed_until:
            raise WalletUnavailable("The wallet is not answering; nothing was staked. Try again in a moment.")
        headers = {"Content-Type": "application/json"}
        if self.token:
            headers["Authorization"] = f"Bearer {self.token}"
        request = urllib.request.Request(f"{self.url}/{operation}", json.dumps(body).encode(), headers, method="POST")
        try:
            with urllib.request.urlopen(request, timeout=self.timeout) as response:
                answer = json.loads(response.read(65536).decode())
            if not isinstance(answer, dict) or answer.get("status") not in ("ok", "refused") or (
                    answer["status"] == "refused" and operation != "debit"):
                raise ValueError(f"an answer that is not the protocol's: {str(answer)[:200]}")
        except (OSError, ValueError, urllib.error.URLError) as exc:
            with self.lock:
                self.failures += 1
                if self.breaker and self.failures >= BREAKER[0]:
                    self.closed_until = time.monotonic() + BREAKER[1]
            log.warning("wallet %s %s failed: %s", operation, body.get("transaction"), exc)
            raise WalletUnavailable(f"The wallet did not answer the {operation}; nothing was staked, and whatever "
                                    "it may have done is rolled back. Try again in a moment.") from None
        with self.lock:
            self.failures = 0
        return answer


class Outbox(threading.Thread):
    """Delivers what purses owe the wallet (credits, reversals, rollbacks), each until the wallet acknowledges it,
    with growing waits; and rolls back debits asked and never counted. It finds the purses to look at in the
    notification log (only the topics that owe or ask), from its start on every start: nothing owed is
    forgotten by a restart."""

    TOPICS = tuple(get_topic(c) for c in (Purse.Credited, Purse.Reversed, Purse.RollbackDue, Purse.DebitAsked))

    def __init__(self, money: Money) -> None:
        super().__init__(name="wallet-outbox", daemon=True)
        self.money, self.app = money, money.app
        # Its own client, without the breaker: deliveries wait by their own backoff, and their failures should not
        # make stakes answer 503 while the wallet answers debits.
        assert money.wallet is not None
        self.wallet = WalletClient(money.wallet.url, money.wallet.token, money.wallet.timeout, breaker=False)
        self.position = 0
        self.watched: set[Any] = set()  # the ids of the purses that may owe or have asked
        self.grace = max(ASK_GRACE[0], ASK_GRACE[1] * self.wallet.timeout)
        self.waits: dict[str, tuple[float, float]] = {}  # transaction -> (next try, wait after it)
        self.woken, self.stopping = threading.Event(), threading.Event()

    def kick(self) -> None:
        self.woken.set()

    def stop(self) -> None:
        self.stopping.set()
        self.woken.set()
        self.join(timeout=5)

    def run(self) -> None:
        while not self.stopping.is_set():
            try:
                self.look()
            except Exception as exc:  # noqa: BLE001 - the store away: looked at again shortly
                log.warning("the wallet's outbox could not look at the store: %s", exc)
            self.woken.wait(0.2)
            self.woken.clear()

    def look(self) -> None:
        while True:
            notes = self.app.recorder.select_notifications(self.position, 500, topics=self.TOPICS,
                                                           inclusive_of_start=False)
            self.watched.update(note.originator_id for note in notes)
            if notes:
                self.position = notes[-1].id
            if len(notes) < 500:
                break
        for pid in list(self.watched):
            if self.stopping.is_set():
                return
            purse = self.app.repository.get(pid)
            if purse.asked:
                if not self.money.roll_back_asked(purse.player, "asked and never counted", older_than=self.grace):
                    continue  # a debit in flight: its command saves the purse soon, and a delivery now would race it
                purse = self.app.repository.get(pid)
                if purse.asked:
                    continue
            if all([self.deliver(purse, tx, owed) for tx, owed in list(purse.due.items())]):
                self.watched.discard(pid)

    def deliver(self, purse: Purse, tx: str, owed: dict[str, Any]) -> bool:
        """Delivers what ``purse`` owes under ``tx`` unless its next try is not due yet; whether it was delivered."""
        now = time.monotonic()
        next_try, wait = self.waits.get(tx, (0.0, BACKOFF[0]))
        if now < next_try:
            return False
        body = {k: owed[k] for k in ("transaction", "amount", "table", "version", "round") if k in owed}
        body.update(player=purse.player, currency=self.money.currency)
        if owed["operation"] == "rollback":
            body["of"] = owed["of"]
        else:
            body["reason"] = owed.get("reason", "payout")
        try:
            answer = self.wallet.call(owed["operation"], body)
        except WalletUnavailable:
            self.waits[tx] = (now + wait, min(wait * 2, BACKOFF[1]))
            return False
        self.waits.pop(tx, None)
        for _ in range(5):
            fresh = self.app.repository.get(purse.id)
            if tx not in fresh.due:
                return True
            fresh.delivered(tx, answer.get("balance"), self.app.clock())
            try:
                self.app.save(fresh)
                return True
            except IntegrityError:
                continue
        return False  # acknowledged but not recorded yet: sent again at the next look, which the wallet answers as first


# --- the transactions, as GET /wallet/transactions and scripts/reconcile read them -------------------------

TRANSACTION_TOPICS = tuple(get_topic(c) for c in (
    Purse.Opened, Purse.Debited, Purse.Credited, Purse.Reversed, Purse.DebitAsked, Purse.DebitRefused,
    Purse.RollbackDue, Purse.Delivered))
COUNTED, REFUSED, ASKED, DUE, DELIVERED, ROLLED_BACK, ROLLING_BACK = (
    "counted", "refused", "asked", "due", "delivered", "rolled back", "rolling back")
STATES = (COUNTED, REFUSED, ASKED, DUE, DELIVERED, ROLLED_BACK, ROLLING_BACK)


def transactions(app: Any) -> list[dict[str, Any]]:
    """Every transaction the purses recorded, with its state now, in the order each was first recorded."""
    players: dict[Any, tuple[str, str]] = {}
    rows: dict[str, dict[str, Any]] = {}
    start = 0
    while True:
        notes = app.recorder.select_notifications(start, 1000, topics=TRANSACTION_TOPICS, inclusive_of_start=False)
        for note in notes:
            e = app.mapper.to_domain_event(note)
            _fold(rows, players, note.id, e)
        if len(notes) < 1000:
            break
        start = notes[-1].id
    return list(rows.values())


def _fold(rows: dict[str, dict[str, Any]], players: dict[Any, tuple[str, str]], at: int, e: Any) -> None:
    if isinstance(e, Purse.Opened):
        players[e.originator_id] = (e.player, e.money)
        return
    player, kind = players.get(e.originator_id, ("", WALLET))
    when = chain.format_timestamp(e.timestamp)
    tx = e.transaction
    row = rows.get(tx)
    if row is None and not isinstance(e, (Purse.DebitRefused, Purse.Delivered)):
        operation = {Purse.Reversed: "reversal", Purse.Credited: "credit", Purse.RollbackDue: "rollback"}.get(
            type(e), "debit")
        row = rows[tx] = {"position": at, "transaction": tx, "operation": operation,
                          "player": player, "table": e.table, "version": e.version,
                          "round": e.round, "amount": e.amount, "reason": getattr(e, "reason", None),
                          "state": ASKED, "recorded_at": when, "settled_at": None,
                          **({"of": e.of} if isinstance(e, Purse.RollbackDue) else {})}
    if row is None:
        return
    if isinstance(e, Purse.Debited):
        row.update(state=COUNTED, settled_at=when)
    elif isinstance(e, Purse.DebitRefused):
        row.update(state=REFUSED, settled_at=when, reason=e.reason)
    elif isinstance(e, (Purse.Credited, Purse.Reversed)):
        # a purse is paid as the credit is recorded; a wallet once it acknowledged it
        row.update(state=DELIVERED, settled_at=when) if kind == PURSES else row.update(state=DUE)
    elif isinstance(e, Purse.RollbackDue):
        row.update(state=DUE)
        if e.of in rows:
            rows[e.of].update(state=ROLLING_BACK)
    elif isinstance(e, Purse.Delivered):
        row.update(state=DELIVERED, settled_at=when)
        if row["operation"] == "rollback" and row.get("of") in rows:
            rows[row["of"]].update(state=ROLLED_BACK, settled_at=when)


def transactions_page(app: Any, match: Any, after: int, limit: int) -> dict[str, Any]:
    limit = page_size(limit)
    found = [r for r in transactions(app) if r["position"] > position(after) and match(r)]
    more = len(found) > limit
    found = found[:limit]
    return {"transactions": found, "next_after": found[-1]["position"] if more else None}


def iter_transactions(app: Any, match: Any, after: int) -> Iterator[dict[str, Any]]:
    return (r for r in transactions(app) if r["position"] > position(after) and match(r))


# --- a table's movements, recomputed from its log ----------------------------------------------------------

def table_movements(app: Any, table_id: str) -> list[dict[str, Any]]:
    """Every movement the table's commands made, recomputed from its log (domain/money.py): for each command,
    each player whose position it changed, with the transaction id it was paid under (less any attempt's number)."""
    from service import replay  # the commands' module imports this one

    out: list[dict[str, Any]] = []
    table = None
    before: dict[str, int] = {}
    command, first, types = None, 0, set()
    after = 0
    while True:
        events = app.read_events(table_id, after=after, limit=1000)
        for e in events:
            if command is not None and e.command != command:
                out += _moved(table, before, first, types)
                before, types = M.positions(table), set()
            if e.command != command:
                command, first = e.command, e.originator_version
            table = replay.projected([e], table)
            types.add(type(e).__name__)
        if len(events) < 1000:
            break
        after = events[-1].originator_version
    if table is not None:
        out += _moved(table, before, first, types)
    return out


def _moved(table: Any, before: dict[str, int], first: int, types: set[str]) -> list[dict[str, Any]]:
    round_ = M.round_of(table)
    return [{"table": str(table.id), "version": first, "player": m.player, "operation": m.kind, "amount": m.amount,
             "reason": m.reason, "round": round_, "transaction": M.transaction_id(str(table.id), first, m.player)}
            for m in M.movements(before, M.positions(table), types)]
