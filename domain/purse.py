"""A player's purse: his money kept by the service, or the service's ledger of his operator's wallet.

One aggregate a player, its log chained as a table's is (domain/chain.py ``digest``: each event's digest covers
the previous one), so that a purse is audited and receipted as a table is. With purses (docs/wallet.md) it holds
the money: a cashier's deposits and withdrawals, and the debits, credits and reversals the tables' commands move
(recorded in the same transaction as the table's events). With a wallet it holds the service's side of every
transaction: a debit asked (before the wallet is called), counted with its stake or refused, and the credits,
reversals and rollbacks owed to the wallet until it acknowledged each (the outbox).

Decide, then record, as a table: a method refuses before anything is recorded; applying only assigns.
"""

from __future__ import annotations

from datetime import datetime, timedelta
from typing import Any
from uuid import NAMESPACE_URL, UUID, uuid5

from eventsourcing.domain import Aggregate

from domain import chain
from domain.errors import BadArgument, DomainError
from domain.money import CREDIT, DEBIT, REVERSAL, rollback_id

PURSES, WALLET = "purses", "wallet"
MAX_AMOUNT = 10**12  # a deposit or withdrawal above it is a typing mistake, not money


class MoneyRefused(DomainError):
    """A command the rules allow, refused for its money: decided again on a fresher table it would be the same."""


class PurseShort(MoneyRefused):
    """A debit a purse does not hold: the command that needs it is refused (422), saying what it holds."""

    def __init__(self, player: str, holds: int, needs: int) -> None:
        super().__init__(f"{player}'s purse holds {holds}; this needs {needs}. Nothing was recorded: a cashier's "
                         "deposit first.", player=player, holds=holds, needs=needs)


class WalletRefused(MoneyRefused):
    """The wallet refused a debit: the command that needs it is refused (422) with the wallet's reason."""

    def __init__(self, player: str, amount: int, reason: str) -> None:
        super().__init__(f"The wallet refused to debit {amount} from {player}: {reason}. Nothing was recorded.",
                         player=player, amount=amount, wallet_reason=reason)


_ENVELOPE = frozenset({"originator_id", "originator_version", "timestamp", "actor", "digest", "originator_topic"})


def purse_id(player: str) -> UUID:
    return uuid5(NAMESPACE_URL, f"zametano:purse:{player}")


class PurseEvent(Aggregate.Event):
    """A past-tense fact about a purse: who did it (``actor``) and the chain's digest."""

    actor: str
    digest: str

    @property
    def type(self) -> str:
        return type(self).__name__

    @property
    def data(self) -> dict[str, Any]:
        return {k: v for k, v in self.__dict__.items() if v is not None and k not in _ENVELOPE}

    def public(self) -> dict[str, Any]:
        """As GET /players/{player}/purse shows it: the envelope of a table's events."""
        return {"version": self.originator_version, "type": self.type, "timestamp": chain.format_timestamp(self.timestamp),
                "actor": self.actor, "data": self.data, "digest": self.digest}

    def apply(self, purse: Any) -> None:
        purse.head = self.digest
        self.assign(purse)

    def assign(self, purse: Any) -> None:
        """The event's effect: assignments only."""


class _Cash(PurseEvent):
    """A cashier's deposit or withdrawal (its ``key``: the Idempotency-Key it was recorded under)."""

    amount: int
    note: str
    balance: int
    key: str | None = None

    def assign(self, purse: Any) -> None:
        purse.balance = self.balance
        if self.key:
            purse.keys[self.key] = self.originator_version


class _Moved(PurseEvent):
    """Money a table's command moved: the transaction, where (table, version, round), and the balance after it."""

    transaction: str
    table: str
    version: int
    round: str
    amount: int
    reason: str
    balance: int

    def assign(self, purse: Any) -> None:
        purse.balance = self.balance

    def owed(self, purse: Any, operation: str) -> None:
        """With a wallet, owed to it until it acknowledges it (the outbox)."""
        if purse.money == WALLET:
            purse.due[self.transaction] = {"operation": operation, **self.data}


class Purse(Aggregate):
    """A player's purse (see the module)."""

    class Opened(PurseEvent, Aggregate.Created):
        player: str
        money: str
        currency: str

    def __init__(self, player: str, money: str, currency: str) -> None:
        self.player, self.money, self.currency = player, money, currency
        self.head = ""
        self.balance = 0
        self.deposits = 0
        self.withdrawals = 0
        self.asked: dict[str, dict[str, Any]] = {}  # debits asked of the wallet, neither counted nor rolled back
        self.due: dict[str, dict[str, Any]] = {}  # what is owed to the wallet until it acknowledges it
        self.attempts: dict[str, int] = {}  # debits asked for a movement, by its first transaction id
        self.keys: dict[str, int] = {}  # a cashier's Idempotency-Keys, each with the version it recorded

    @classmethod
    def open(cls, player: str, money: str, currency: str, now: datetime) -> Purse:
        data = {"player": player, "money": money, "currency": currency}
        head = chain.digest("", 1, "Opened", chain.format_timestamp(now), "service", data)
        return cls._create(cls.Opened, id=purse_id(player), timestamp=now, actor="service", digest=head, **data)

    def _record(self, event_class: type[PurseEvent], actor: str, now: datetime, **data: Any) -> None:
        # A purse's timestamps strictly rise, as a table's do, so that a moment names one version.
        moment = max(now, self.modified_on + timedelta(microseconds=1))
        data = {k: v for k, v in data.items() if v is not None}  # a field not given is not in the chain either
        digest = chain.digest(self.head, self.version + 1, event_class.__name__, chain.format_timestamp(moment), actor, data)
        self.trigger_event(event_class, timestamp=moment, actor=actor, digest=digest, **data)

    # --- a cashier's ------------------------------------------------------------------------------------------

    def deposit(self, amount: Any, by: str, note: str, now: datetime, key: str | None = None) -> None:
        self._check_cash(amount, "deposit")
        self._record(self.Deposited, by, now, amount=amount, note=note, balance=self.balance + amount, key=key)

    def withdraw(self, amount: Any, by: str, note: str, now: datetime, key: str | None = None) -> None:
        self._check_cash(amount, "withdraw")
        if amount > self.balance:
            raise PurseShort(self.player, self.balance, amount)
        self._record(self.Withdrawn, by, now, amount=amount, note=note, balance=self.balance - amount, key=key)

    def _check_cash(self, amount: Any, command: str) -> None:
        if self.money != PURSES:
            raise BadArgument("command", f"{self.player}'s money is kept by the operator's wallet: a {command} is made "
                                         "there, not here.")
        if isinstance(amount, bool) or not isinstance(amount, int) or not 1 <= amount <= MAX_AMOUNT:
            raise BadArgument("amount", f"'amount' is a whole number of units from 1 to {MAX_AMOUNT}; got {amount!r}.")

    # --- a table's movements, with purses ---------------------------------------------------------------------

    def move(self, kind: str, amount: int, transaction: str, where: dict[str, Any], reason: str, now: datetime) -> None:
        """A movement a table's command makes (domain/money.py): a debit the purse must hold, a credit, or a
        reversal (which may take the balance below zero: a void is not refused for a payout already spent)."""
        if kind == DEBIT and amount > self.balance:
            raise PurseShort(self.player, self.balance, amount)
        after = self.balance + (amount if kind == CREDIT else -amount)
        event = {DEBIT: self.Debited, CREDIT: self.Credited, REVERSAL: self.Reversed}[kind]
        self._record(event, "service", now, transaction=transaction, amount=amount, reason=reason, balance=after,
                     **where)

    # --- a table's movements, with a wallet -------------------------------------------------------------------

    def next_transaction(self, first: str) -> str:
        """The id of the next debit asked for a movement whose first id is ``first``: ``first`` the first time."""
        attempt = self.attempts.get(first, 0) + 1
        return first if attempt == 1 else f"{first}:{attempt}"

    def last_asked(self, first: str) -> str:
        """The id of the debit asked last for a movement whose first id is ``first``."""
        attempt = self.attempts.get(first, 1)
        return first if attempt == 1 else f"{first}:{attempt}"

    def ask(self, transaction: str, first: str, amount: int, where: dict[str, Any], now: datetime) -> None:
        """Recorded before the wallet is asked to debit: a debit asked and never counted is rolled back."""
        self._record(self.DebitAsked, "service", now, transaction=transaction, first=first, amount=amount, **where)

    def count(self, transaction: str, balance: Any, now: datetime) -> None:
        """The wallet debited: the stake counts, recorded with this in one transaction."""
        asked = self.asked[transaction]
        self._record(self.Debited, "service", now, transaction=transaction, amount=asked["amount"], reason="stake",
                     balance=self.balance - asked["amount"], wallet_balance=balance,
                     **{k: asked[k] for k in ("table", "version", "round")})

    def refuse(self, transaction: str, reason: str, now: datetime) -> None:
        self._record(self.DebitRefused, "service", now, transaction=transaction, reason=reason)

    def roll_back(self, transaction: str, why: str, now: datetime) -> None:
        """A debit asked and not counted (no answer, a failure, or its command not recorded): its rollback owed."""
        asked = self.asked[transaction]
        self._record(self.RollbackDue, "service", now, transaction=rollback_id(transaction), of=transaction,
                     amount=asked["amount"], why=why, **{k: asked[k] for k in ("table", "version", "round")})

    def owe(self, kind: str, amount: int, first: str, where: dict[str, Any], reason: str, now: datetime) -> None:
        """A credit or reversal owed to the wallet (the outbox), recorded with the table's events that cause it.
        ``first``: the movement's first id. A debit asked under that id and rolled back (its command was never
        recorded, and this one took its version) holds it at the wallet, which answers a repeated id with its first
        answer: this movement takes the next attempt's id."""
        after = self.balance + (amount if kind == CREDIT else -amount)
        event = self.Credited if kind == CREDIT else self.Reversed
        self._record(event, "service", now, transaction=self.next_transaction(first), amount=amount, reason=reason,
                     balance=after, **where)

    def delivered(self, transaction: str, balance: Any, now: datetime) -> None:
        self._record(self.Delivered, "service", now, transaction=transaction, wallet_balance=balance)

    # --- applying ---------------------------------------------------------------------------------------------

    class Deposited(_Cash):
        def assign(self, purse: Any) -> None:
            super().assign(purse)
            purse.deposits += self.amount

    class Withdrawn(_Cash):
        def assign(self, purse: Any) -> None:
            super().assign(purse)
            purse.withdrawals += self.amount

    class Debited(_Moved):
        wallet_balance: Any = None  # the wallet's balance after the debit, as it answered

        def assign(self, purse: Any) -> None:
            super().assign(purse)
            purse.asked.pop(self.transaction, None)

    class Credited(_Moved):
        def assign(self, purse: Any) -> None:
            super().assign(purse)
            self.owed(purse, "credit")

    class Reversed(_Moved):
        def assign(self, purse: Any) -> None:
            super().assign(purse)
            self.owed(purse, "reversal")

    class DebitAsked(PurseEvent):
        transaction: str
        first: str
        table: str
        version: int
        round: str
        amount: int

        def assign(self, purse: Any) -> None:
            purse.asked[self.transaction] = {**self.data, "at": self.timestamp}
            purse.attempts[self.first] = purse.attempts.get(self.first, 0) + 1

    class DebitRefused(PurseEvent):
        transaction: str
        reason: str

        def assign(self, purse: Any) -> None:
            purse.asked.pop(self.transaction, None)

    class RollbackDue(PurseEvent):
        transaction: str
        of: str
        table: str
        version: int
        round: str
        amount: int
        why: str

        def assign(self, purse: Any) -> None:
            purse.asked.pop(self.of, None)
            purse.due[self.transaction] = {"operation": "rollback", **self.data}

    class Delivered(PurseEvent):
        transaction: str
        wallet_balance: Any

        def assign(self, purse: Any) -> None:
            purse.due.pop(self.transaction, None)
