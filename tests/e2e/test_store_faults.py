"""The real server on SQLite, its store on a small filesystem of its own, while clients with and without
Idempotency-Key play: the disk filled with dd, the file and then its folder made read-only (the server runs
without CAP_DAC_OVERRIDE, so that modes bind it), the file moved away; each fault in turn, then its end.

Every answer is 200 or a JSON 503 with Retry-After, the first 503 within a second of the fault, /readyz not
ready while it lasts, commands recorded again within a second of its end; no command answered as failed is
in the log, nothing acknowledged is lost, nothing resent with a key is doubled. scripts/bench-faults makes
the same faults longer and prints the figures (docs/benchmarks.md)."""

from __future__ import annotations

import pytest
import requests

from tests.e2e.store_faults import FAULTS, faulty_server, lost_or_doubled, open_clients, small_filesystem, \
    under_faults, why_not_possible

pytestmark = [pytest.mark.e2e]

CLIENTS = 4  # every other one with keys
LASTING = 1.3  # seconds each fault lasts
SETTLE = 0.7  # seconds of calm around each
PAUSE = 0.02  # seconds between a client's commands: tables short enough to check at once
WITHIN = 1.0  # seconds: to the first 503, and from the fault's end to commands recorded and /readyz ready


@pytest.fixture
def filesystem():
    reason = why_not_possible()
    if reason is not None:
        pytest.skip(f"the store's file faults cannot be made here: {reason}")
    with small_filesystem(48) as folder:
        yield folder


def test_the_embedded_stores_file_faults_are_503s_that_follow_the_fault_and_lose_or_double_nothing(filesystem,
                                                                                                   tmp_path):
    with faulty_server(filesystem, tmp_path / "server.log") as (base, data, db):
        clients = open_clients(base, CLIENTS, pause=PAUSE)
        measured = under_faults(base, data, db, clients, list(FAULTS), lasting=LASTING, settle=SETTLE)
        problems = [p for c in clients for p in lost_or_doubled(base, c)]
        verified = [requests.get(f"{base}/tables/{c.table_id}/verify", timeout=60).json()["ok"] for c in clients]
        log = (tmp_path / "server.log").read_text()

    answers = [a for c in clients for a in c.answers]
    assert {a.status for a in answers} <= {200, 503}, sorted({a.status for a in answers} - {200, 503})
    for answer in answers:
        assert answer.content_type.startswith("application/json"), answer
        if answer.status == 503:
            assert answer.body["code"] == 503 and int(answer.retry_after) >= 1, answer
    for m in measured:
        assert m.count(503) > 0, f"{m.fault}: no command was refused, so the fault was not made"
        assert m.behind == 0, f"{m.fault}: {m.behind} commands answered as failed are in the log"
        assert m.first_503 is not None and m.first_503 < WITHIN, (m.fault, m.first_503)
        assert m.unready_during, f"{m.fault}: /readyz said ready during the fault"
        assert m.ready_again is not None and m.ready_again < WITHIN, (m.fault, m.ready_again)
        assert m.recovered is not None and m.recovered < WITHIN, (m.fault, m.recovered)
    assert problems == []
    assert verified == [True] * CLIENTS
    assert any(c.keyed for c in clients) and not all(c.keyed for c in clients)
    assert log.count("Booting worker") == 2 and "WORKER TIMEOUT" not in log  # the same workers throughout
