"""scripts/audit --adjustments: each correction of GET /adjustments checked (two identities, the money moved by
exactly the reversals its table's log records) and every void of an audited log found there, against answers
given here (the whole run against the real server is tests/e2e/test_corrections_over_http.py)."""

from __future__ import annotations

from typing import Any

from tests.served import audit

TABLE = "3ea4ab25-8eb9-4fec-9c6e-e9748063a308"
BEFORE = {"marta": 0, "anna": -100, "boris": 50, "house": 50}
AFTER = {"marta": 0, "anna": 0, "boris": 0, "house": 0}


def entry(**changed: Any) -> dict[str, Any]:
    return {"table_id": TABLE, "version": 27, "request": 1, "kind": "void_round", "round": 1, "reason": "misdeal",
            "status": "approved", "requested_by": "sara", "decided_by": "simon", "decided_at": "2026-11-29T20:15:12Z",
            "players": ["anna", "boris"], "before": BEFORE, "after": AFTER, **changed}


def event(version: int, kind: str, **data: Any) -> dict[str, Any]:
    return {"version": version, "type": kind, "command": 9, "data": data}


LOG = [event(27, "CorrectionApproved"), event(28, "PaymentReversed", payer="house", payee="anna", amount=100),
       event(29, "PaymentReversed", payer="boris", payee="house", amount=50), event(30, "RoundVoided", round=1)]


class Answers:
    """The service's answers: the adjustments listed, and the events of the approval's command."""

    def __init__(self, listed: list[dict[str, Any]], log: list[dict[str, Any]] = LOG) -> None:
        self.listed, self.log = listed, log

    def page_through(self, url_of_page: Any, key: str) -> Any:
        assert key == "adjustments" and "/adjustments" in url_of_page(None)
        return iter(self.listed)

    def get(self, url: str) -> Any:
        return {"events": self.log}


class Quiet:
    def status(self, text: str) -> None:
        pass

    def line(self, text: str) -> None:
        pass


def checked(listed: list[dict[str, Any]], voided: list[int] = [1], log: list[dict[str, Any]] = LOG) -> list[str]:
    table = audit.TableAudit(TABLE, voided=list(voided))
    return audit.check_adjustments(Answers(listed, log), "http://x", [table], Quiet()).problems


def test_an_honest_void_is_listed_and_adds_up():
    assert checked([entry()]) == []


def test_a_void_of_the_log_missing_from_the_adjustments_is_a_problem():
    assert checked([]) == [f"{TABLE}: round 1 is void in the log but missing from GET /adjustments"]


def test_a_correction_approved_by_its_own_requester_is_a_problem():
    assert any("same identity" in p for p in checked([entry(decided_by="sara")]))


def test_balances_the_recorded_reversals_do_not_give_are_a_problem():
    assert any("reversals move the balances" in p for p in checked([entry(after={**AFTER, "anna": 5, "house": -5})]))
    assert any("does not end with round 1 voided" in p for p in checked([entry()], log=LOG[:-1]))
