"""Corrections under two signatures: a round voided, requested by one supervisor and approved by another.

Every table goes wrong sometimes (a card falls face up, the croupier deals before the stakes are closed in the
room): the round is then void, its stakes go back or its payments are reversed, and the correction is logged
with who asked for it, who approved it, why, and the balances before and after. Nothing recorded is ever
changed: a correction is new events after the ones it corrects.

Two people: ``request_correction`` records the request (``CorrectionRequested``); it takes effect only when a
second, different supervisor approves it (``approve_correction``: ``CorrectionApproved`` and the effects), or
is dropped when one refuses it (``refuse_correction``: ``CorrectionRefused``, no money moves). Each is one
command, so a request, an approval or a refusal is recorded whole or not at all.

What may be voided: the table's latest round, while it is open (its stakes go back: ``StakeReturned``, and
any money it already moved, such as the Card lottery's contributions, is reversed) or once settled, as long as
no later round has begun and the shoe it was dealt from is still the table's (each payment reversed:
``PaymentReversed``). A later round's stakes rest on the balances a void would change, and a new shoe has
revealed the cards the voided round was dealt from. Cards dealt stay dealt: the shuffle's proof is untouched.
Each game's ``Void`` (domain/game.py) says which of its stakes are out on the table and when it may not be
voided; its table's handler of ``RoundVoided`` puts the game back between rounds.

The supervisor's name is the command's ``player``; a supervisor is never a player of the table, nor one of the
names the game reserves, so that nobody approves the voiding of his own round.
"""

from __future__ import annotations

from dataclasses import field
from typing import Any

from domain.errors import BadArgument, NotYourSeat
from domain.events import DEALER_RULE, SERVICE, PaymentMade, TableEvent, keep_topics
from domain.game import TEXT_LONGEST, FieldSpec, applies, command
from domain.recorder import Recorder

# The documented reasons (docs/api.md "Corrections"); the free text ``note`` says the rest.
REASONS = (
    "card-exposed",        # a card fell or was shown face up before its time
    "misdeal",             # cards dealt out of order, to the wrong hand, or too many
    "dealt-before-close",  # the croupier dealt before the stakes were closed in the room
    "shoe-fault",          # the shoe was dropped, damaged or wrongly built
    "wrong-stake",         # a stake recorded for the wrong player, spot or amount
    "equipment-failure",   # a terminal or the service failed during the round
    "other",               # anything else: the note says what
)
VOID, CORRECT_STAKE = "void_round", "correct_stake"
KINDS = (VOID, CORRECT_STAKE)
COMMANDS = ("request_correction", "approve_correction", "refuse_correction")
APPROVED, REFUSED = "approved", "refused"

KIND = FieldSpec("choice", choices=KINDS, doc="What is corrected: `void_round`, a round voided; `correct_stake`, a "
                                                "stake recorded for the wrong player or amount, before the stakes close.")
ROUND = FieldSpec("int", doc="The round, numbered as GET /tables/{table_id}/rounds numbers it: the table's latest.")
REASON = FieldSpec("choice", choices=REASONS, doc="Why, from the documented list; `note` says the rest.")
NOTE = FieldSpec("text", optional=True, doc=f"Free text, up to {TEXT_LONGEST} characters.")
REQUEST = FieldSpec("int", doc="The request's number, as `corrections` in the state lists it.")
# A stake's correction (``correct_stake`` only): which stake, and what it should have been.
STAKE_FIELDS = {
    "stake_player": FieldSpec("text", optional=True, doc="correct_stake: the player the stake was recorded for."),
    "stake_spot": FieldSpec("text", optional=True, doc="correct_stake: the stake's spot (punto banco: `player`, "
                                                       "`banker`, `tie`; Chemin de fer: `bank`)."),
    "stake_amount": FieldSpec("int", optional=True, doc="correct_stake: the right amount (0: no stake at all)."),
    "stake_to": FieldSpec("text", optional=True, doc="correct_stake: the player it should have been recorded for "
                                                     "(left out: the same player)."),
}


class CorrectionRequested(TableEvent):
    """A supervisor asks for a correction; nothing changes until a second supervisor approves it."""

    request: int
    kind: str
    round: int
    reason: str
    note: str
    requested_by: str
    # A stake's correction: {player, spot, amount, to}; None for a void.
    stake: dict[str, Any] | None = field(default=None, kw_only=True)


class CorrectionApproved(TableEvent):
    """A second supervisor approves a request: the request repeated, who approved it, and every balance and
    account before and after its effects (the events that follow in the same command)."""

    request: int
    kind: str
    round: int
    reason: str
    note: str
    requested_by: str
    requested_at: str
    approved_by: str
    players: list[str]
    before: dict[str, int]
    after: dict[str, int]
    stake: dict[str, Any] | None = field(default=None, kw_only=True)


class CorrectionRefused(TableEvent):
    """A second supervisor refuses a request: nothing changes."""

    request: int
    kind: str
    round: int
    reason: str
    note: str
    requested_by: str
    requested_at: str
    refused_by: str
    why: str
    stake: dict[str, Any] | None = field(default=None, kw_only=True)


class StakeCorrected(TableEvent):
    """A stake of the open round corrected: ``player``'s stake on ``spot`` was ``was`` and is now ``amount`` (0:
    none). A stake moved to another player is two of them."""

    round: int
    player: str
    spot: str
    was: int
    amount: int


class StakeReturned(TableEvent):
    """A stake of a voided round, not yet taken from its player, goes back to him (no balance moves)."""

    round: int
    player: str
    spot: str
    amount: int


class PaymentReversed(TableEvent):
    """A payment of a voided round reversed: ``payer`` pays ``amount`` back to ``payee`` (the payment's payee
    and payer), ``reverses`` the version of the payment."""

    round: int
    payer: str
    payee: str
    amount: int
    reverses: int


class RoundVoided(TableEvent):
    """The round is void, with its reason; ``settled``: whether its payments had been made (then reversed)."""

    round: int
    request: int
    reason: str
    settled: bool


keep_topics("domain.corrections", CorrectionRequested, CorrectionApproved, CorrectionRefused, StakeReturned,
            PaymentReversed, RoundVoided, StakeCorrected)
# The types that move money besides PaymentMade (read by the money check, the seats and the audits).
MOVEMENTS = ("PaymentMade", "PaymentReversed")


def new_book() -> dict[str, Any]:
    """The latest round as the table keeps it for a void: its number (as the rounds list numbers it), whether
    it is open, the shoe it began in, the payments it made (version, payer, payee, amount) and whether it is void."""
    return {"number": 0, "open": False, "shoe": 0, "payments": [], "void": False}


class Correctable:
    """The correction commands and their bookkeeping, shared by every table (domain/table.py's ``Table``)."""

    # Tables snapshotted before corrections existed have none of these: their requests and voids start empty, and
    # their latest round is unknown (``number`` None: such a table's rounds cannot be voided, the snapshot having
    # been taken in the middle of a count it does not hold).
    corrections: Any = None
    round_book: Any = None
    round_marks: Any = None
    voided: Any = None

    def start_corrections(self) -> None:
        self.corrections = {"next": 1, "pending": {}}
        self.round_book = new_book()
        self.round_marks = {}
        self.voided = {}

    def track_round(self, e: TableEvent) -> None:
        """The latest round after an event, read with the game's own round marks (domain/rounds.py), so that
        its number is the one GET /tables/{id}/rounds shows; its payments, for a void."""
        if self.round_book is None:
            self.round_book, self.round_marks = {**new_book(), "number": None}, {}
        marks, book = self.GAME.rounds, self.round_book  # type: ignore[attr-defined]
        shown = _Shown(type=type(e).__name__)
        shown.event = e
        if marks.opens(shown, self.round_marks):
            number = None if book["number"] is None else book["number"] + 1
            book.update(new_book(), number=number, open=True, shoe=self.shoes,  # type: ignore[attr-defined]
                        first=e.originator_version)
        if marks.closes(shown, self.round_marks):
            book["open"] = False
        if isinstance(e, PaymentMade) and book["number"]:
            book["payments"].append([e.originator_version, e.payer, e.payee, e.amount])

    # --- commands ----------------------------------------------------------------------------------------

    @command("request_correction", kind=KIND, round=ROUND, reason=REASON, note=NOTE, **STAKE_FIELDS)
    def _request_correction(self, rec: Recorder, player: str, kind: str, round: int, reason: str,
                            note: str = "", **stake: Any) -> None:
        """A supervisor asks for a correction (a round voided, a stake corrected); a second supervisor approves
        or refuses it."""
        self._check_supervisor(player)
        asked = _stake_asked(kind, stake)
        self._check_voidable(round)
        if asked is not None:
            self._stake_effects(asked)  # refused now if the game would refuse it
        number = self.corrections["next"]
        rec(CorrectionRequested, player, request=number, kind=kind, round=round, reason=reason, note=note,
            requested_by=player, stake=asked)

    @command("approve_correction", request=REQUEST)
    def _approve_correction(self, rec: Recorder, player: str, request: int) -> None:
        """A second supervisor approves a request: it takes effect now."""
        asked = self._pending(request, player, "approve")
        self._check_voidable(asked["round"])
        if asked.get("stake") is not None:
            self._correct_stake(rec, player, asked)
            return
        returned, reversed_ = self._void_effects()
        before = self.money()
        after = dict(before)
        for _, payer, payee, amount in reversed_:
            after[payee] -= amount
            after[payer] += amount
        players = sorted({p for p, _, _ in returned} | {n for _, a, b, _ in reversed_ for n in (a, b)
                                                          if n in self.players})  # type: ignore[attr-defined]
        rec(CorrectionApproved, player, **_request_fields(asked), approved_by=player, players=players,
            before=before, after=after)
        number = asked["round"]
        for version, payer, payee, amount in reversed_:
            rec(PaymentReversed, SERVICE, round=number, payer=payee, payee=payer, amount=amount, reverses=version)
        for name, spot, amount in returned:
            rec(StakeReturned, SERVICE, round=number, player=name, spot=spot, amount=amount)
        rec(RoundVoided, SERVICE, round=number, request=request, reason=asked["reason"],
            settled=not self.round_book["open"])

    def _correct_stake(self, rec: Recorder, player: str, asked: dict[str, Any]) -> None:
        """The approval of a stake's correction: the stakes it changes, no money moved."""
        changes = self._stake_effects(asked["stake"])
        money = self.money()
        rec(CorrectionApproved, player, **_request_fields(asked), approved_by=player,
            players=sorted({name for name, _, _, _ in changes}), before=money, after=money)
        for name, spot, was, amount in changes:
            rec(StakeCorrected, SERVICE, round=asked["round"], player=name, spot=spot, was=was, amount=amount)

    def _stake_effects(self, stake: dict[str, Any]) -> list[tuple[str, str, int, int]]:
        """The stakes a correction changes, each (player, spot, was, now), as the game takes it (BadArgument in its
        words where it may not: the stakes closed, an amount out of the limits, a player who does not stake)."""
        if not self.round_book["open"]:
            raise BadArgument("round", "A stake is corrected while its round is open, before the stakes close.")
        for name in {stake["player"], stake["to"]}:
            if name not in self.players:  # type: ignore[attr-defined]
                raise BadArgument("stake_player", f"'{name}' is not a player at this table "
                                                  f"({', '.join(self.players)}).")  # type: ignore[attr-defined]
        return self.GAME.void.corrected(self, stake)  # type: ignore[attr-defined]

    @command("refuse_correction", request=REQUEST, note=NOTE)
    def _refuse_correction(self, rec: Recorder, player: str, request: int, note: str = "") -> None:
        """A second supervisor refuses a request: nothing changes."""
        asked = self._pending(request, player, "refuse")
        rec(CorrectionRefused, player, **_request_fields(asked), refused_by=player, why=note)

    # --- the rules -----------------------------------------------------------------------------------------

    def _check_supervisor(self, name: str) -> None:
        """A supervisor is nobody seated at the table and none of the names the game or the service acts by."""
        if name in self.players or name in self.GAME.reserved_names or name in (SERVICE, DEALER_RULE):  # type: ignore[attr-defined]
            raise NotYourSeat(f"'{name}' is a player or a name of this table: a correction is requested and "
                              "approved by supervisors, who take no part in the game.", name)

    def _check_voidable(self, number: int) -> None:
        """Refuses a void of any round but the latest one, still in its shoe, not yet void, that the game lets go."""
        book = self.round_book if self.round_book is not None else new_book()
        latest = book["number"]
        if latest is None:
            raise BadArgument("round", "This table was restored from a snapshot taken before corrections existed, "
                                       "which does not hold its count of rounds: its rounds cannot be voided.")
        if not latest:
            raise BadArgument("round", "No round has begun at this table yet: there is nothing to void.")
        if number != latest:
            raise BadArgument("round", f"Only the table's latest round ({latest}) may be voided; got {number}: "
                                       "a later round's stakes rest on the balances a void would change.")
        if book["void"]:
            raise BadArgument("round", f"Round {number} is already void.")
        if book["shoe"] != self.shoes:  # type: ignore[attr-defined]
            raise BadArgument("round", f"Round {number} was dealt from an earlier shoe: a void goes back within "
                                       "the shoe its round was dealt from only.")
        why = self.GAME.void.refused(self)  # type: ignore[attr-defined]
        if why:
            raise BadArgument("round", why)

    def _pending(self, request: int, player: str, verb: str) -> dict[str, Any]:
        """The pending request numbered ``request``, which ``player`` (a supervisor, not its requester) decides."""
        self._check_supervisor(player)
        asked = self.corrections["pending"].get(str(request))
        if asked is None:
            pending = ", ".join(self.corrections["pending"]) or "none"
            raise BadArgument("request", f"There is no pending request {request} at this table (pending: {pending}); "
                                         "a request is decided once.")
        if asked["requested_by"] == player:
            raise NotYourSeat(f"{player} requested correction {request}: a second supervisor must {verb} it.", player)
        return asked

    def _void_effects(self) -> tuple[list[tuple[str, str, int]], list[list[Any]]]:
        """The stakes a void returns (the game's, still on the table) and the payments it reverses (every one the
        round made)."""
        returned = self.GAME.void.stakes(self) if self.round_book["open"] else []  # type: ignore[attr-defined]
        return returned, list(self.round_book["payments"])

    def money(self) -> dict[str, int]:
        """Every balance and account of the game, by name."""
        return {**self.balances, **{a: self.accounts.get(a, 0) for a in self.GAME.accounts}}  # type: ignore[attr-defined]

    # --- applying --------------------------------------------------------------------------------------------

    @applies(CorrectionRequested)
    def _correction_requested(self, e: CorrectionRequested) -> None:
        self._ensure_corrections()
        self.corrections["next"] = e.request + 1
        self.corrections["pending"][str(e.request)] = {
            "request": e.request, "kind": e.kind, "round": e.round, "reason": e.reason, "note": e.note,
            "requested_by": e.requested_by, "requested_at": e.timestamp_text, "version": e.originator_version,
            **({"stake": dict(e.stake)} if e.stake else {})}

    @applies(CorrectionApproved, CorrectionRefused)
    def _correction_decided(self, e: CorrectionApproved | CorrectionRefused) -> None:
        self._ensure_corrections()
        self.corrections["pending"].pop(str(e.request), None)

    @applies(PaymentReversed)
    def _payment_reversed(self, e: PaymentReversed) -> None:
        for name, delta in ((e.payer, -e.amount), (e.payee, e.amount)):
            if name in self.balances:  # type: ignore[attr-defined]
                self.balances[name] += delta  # type: ignore[attr-defined]
            else:
                self.accounts[name] = self.accounts.get(name, 0) + delta  # type: ignore[attr-defined]

    @applies(RoundVoided)
    def _round_voided(self, e: RoundVoided) -> None:
        self._ensure_corrections()
        if self.round_book is not None:
            self.round_book.update(void=True, open=False)
            # Its face-down cards stay face down for the table until the shoe's seed shows them (domain/sight.py);
            # the round being over, an auditor may see them, as any finished round's.
            first = self.round_book.get("first", 0)
            self.hidden = [{**h, "void": True, "over": True} if h["version"] >= first else h for h in self.hidden or []]
        self.voided[str(e.round)] = {"round": e.round, "request": e.request, "reason": e.reason,
                                     "settled": e.settled, "version": e.originator_version}

    def _ensure_corrections(self) -> None:
        if self.corrections is None:
            self.corrections = {"next": 1, "pending": {}}
        if self.voided is None:
            self.voided = {}


class _Shown(dict):  # type: ignore[type-arg]
    """An event as the round marks read it (domain/rounds.py), its data built only if they ask for it: the marks
    look at every event applied, and at the data of few (a replay would otherwise build every event's twice)."""

    event: TableEvent

    def __missing__(self, key: str) -> Any:
        if key != "data":  # the marks read a round's bounds from the type and the data alone
            raise KeyError(key)
        self[key] = data = self.event.data
        return data


def command_of(first: dict[str, Any]) -> tuple[str, str, dict[str, Any]] | None:
    """The correction command a group of events begins with (as the events API shows them), for the audit to run
    it again; None for any other first event."""
    data, actor = first["data"], first["actor"]
    if first["type"] == "CorrectionRequested":
        stake = data.get("stake") or {}
        fields = {f"stake_{k}": v for k, v in stake.items() if k != "to" or v != stake.get("player")}
        return "request_correction", actor, {**{k: data[k] for k in ("kind", "round", "reason", "note")}, **fields}
    if first["type"] == "CorrectionApproved":
        return "approve_correction", actor, {"request": data["request"]}
    if first["type"] == "CorrectionRefused":
        return "refuse_correction", actor, {"request": data["request"], "note": data["why"]}
    return None


def _request_fields(asked: dict[str, Any]) -> dict[str, Any]:
    fields = {k: asked[k] for k in ("request", "kind", "round", "reason", "note", "requested_by", "requested_at")}
    return {**fields, "stake": asked.get("stake")}


def _stake_asked(kind: str, fields: dict[str, Any]) -> dict[str, Any] | None:
    """The stake a ``correct_stake`` names (player, spot, amount, to); a void takes none of its fields."""
    given = {k: v for k, v in fields.items() if v is not None}
    if kind == VOID:
        if given:
            raise BadArgument(next(iter(given)), f"A void takes no stake fields; got '{next(iter(given))}'.")
        return None
    for name in ("stake_player", "stake_spot", "stake_amount"):
        if name not in given:
            raise BadArgument(name, f"'correct_stake' needs '{name}' ({STAKE_FIELDS[name].doc})")
    if given["stake_amount"] < 0:
        raise BadArgument("stake_amount", f"'stake_amount' is 0 or more; got {given['stake_amount']}.")
    return {"player": given["stake_player"], "spot": given["stake_spot"], "amount": given["stake_amount"],
            "to": given.get("stake_to", given["stake_player"])}
