"""The per-client rate limit (ZAMETANO_RATE_LIMIT): a token bucket per client and worker, 429 past it."""

from __future__ import annotations

import re

import pytest

from api.app import create_app
from api.ratelimit import TokenBuckets
from service.application import TablesService
from service.config import ConfigError, RateLimit, load, parse_rate_limit
from tests.helpers import Seeds, StepClock


class ManualClock:
    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def limited(tmp_path):
    """An app allowing 3 requests at once per client, refilled at 1 a second, on a clock the test moves."""

    def make(tokens: str = "") -> tuple:  # type: ignore[type-arg]
        settings = load({
            "PERSISTENCE_MODULE": "eventsourcing.sqlite",
            "SQLITE_DBNAME": str(tmp_path / "rate.sqlite"),
            "ZAMETANO_RATE_LIMIT": "1/s:3",
            "ZAMETANO_TOKENS": tokens,
        })
        service = TablesService(settings, clock=StepClock(), new_seed=Seeds())
        made.append(service)
        app = create_app(settings, service=service)
        clock = ManualClock()
        app.extensions["zametano_rate_limit"].clock = clock
        return app.test_client(), clock

    made: list[TablesService] = []
    yield make
    for service in made:
        service.close()


def from_address(address: str) -> dict:  # type: ignore[type-arg]
    return {"environ_base": {"REMOTE_ADDR": address}}


def test_past_the_burst_a_client_gets_a_429_with_retry_after_and_the_error_body(limited):
    client, clock = limited()
    assert [client.get("/tables").status_code for _ in range(3)] == [200, 200, 200]
    r = client.get("/tables")
    assert r.status_code == 429
    assert r.headers["Retry-After"] == "1"
    body = r.json
    assert body["code"] == 429 and body["status"] == "Too Many Requests" and body["retry_after"] == 1
    assert "1 a second" in body["message"] and "bursts of 3" in body["message"]
    clock.now += 1.0  # one token back
    assert client.get("/tables").status_code == 200
    assert client.get("/tables").status_code == 429


def test_refused_requests_spend_nothing_and_the_wait_is_rounded_up(limited):
    client, clock = limited()
    for _ in range(3):
        client.get("/tables")
    clock.now += 0.25
    r = client.get("/tables")
    assert r.status_code == 429 and r.headers["Retry-After"] == "1"
    clock.now += 0.75
    assert client.get("/tables").status_code == 200


def test_each_client_address_has_its_own_bucket(limited):
    client, _ = limited()  # loopback addresses: without tokens the service answers no others
    for _ in range(3):
        assert client.get("/tables", **from_address("127.0.0.11")).status_code == 200
    assert client.get("/tables", **from_address("127.0.0.11")).status_code == 429
    assert client.get("/tables", **from_address("127.0.0.12")).status_code == 200


def test_a_known_token_is_the_client_and_an_unknown_token_buys_no_fresh_bucket(limited):
    client, _ = limited(tokens="operator:op-secret-0f3a9c2e,auditor:au-secret-7b1d4e86")
    operator = {"Authorization": "Bearer op-secret-0f3a9c2e"}
    for _ in range(3):
        assert client.get("/tables", headers=operator).status_code == 200
    assert client.get("/tables", headers=operator).status_code == 429
    auditor = {"Authorization": "Bearer au-secret-7b1d4e86"}
    assert client.get("/tables", headers=auditor).status_code == 200  # another token, same address
    for n in range(3):
        assert client.get("/tables", headers={"Authorization": f"Bearer guess-{n}"}).status_code == 401
    assert client.get("/tables", headers={"Authorization": "Bearer guess-4"}).status_code == 429


def test_health_readiness_and_metrics_are_never_limited(limited):
    client, _ = limited()
    for _ in range(10):
        for path in ("/healthz", "/readyz", "/metrics"):
            assert client.get(path).status_code == 200


def test_the_default_is_no_limit(client):
    assert all(client.get("/tables").status_code == 200 for _ in range(200))


def test_the_bucket_refills_at_the_rate_up_to_the_burst():
    clock = ManualClock()
    buckets = TokenBuckets(RateLimit(per_second=2.0, burst=4), clock=clock)
    assert [buckets.take("a") for _ in range(4)] == [0.0] * 4
    assert buckets.take("a") == pytest.approx(0.5)
    clock.now += 100  # a long pause refills to the burst, no more
    assert [buckets.take("a") for _ in range(4)] == [0.0] * 4
    assert buckets.take("a") > 0


def test_the_buckets_forget_the_least_recently_seen_client_past_their_bound():
    buckets = TokenBuckets(RateLimit(per_second=1.0, burst=1), clock=ManualClock(), max_clients=2)
    assert buckets.take("a") == 0.0 and buckets.take("b") == 0.0
    assert buckets.take("a") > 0  # seen again: most recent now
    assert buckets.take("c") == 0.0  # "b" is forgotten
    assert len(buckets._buckets) == 2
    assert buckets.take("a") > 0 and buckets.take("b") == 0.0


@pytest.mark.parametrize(
    "text,per_second,burst",
    [("50/s", 50.0, 50), ("50/s:200", 50.0, 200), ("120/min", 2.0, 120), ("3600/h:10", 1.0, 10), (" 0.5/s ", 0.5, 1)],
)
def test_rate_limit_settings_are_read(text, per_second, burst):
    assert parse_rate_limit(text) == RateLimit(per_second=per_second, burst=burst)


@pytest.mark.parametrize("text", ["", "0", "off", "OFF"])
def test_the_rate_limit_turns_off(text):
    assert parse_rate_limit(text) is None


@pytest.mark.parametrize("text", ["50", "50/day", "x/s", "-5/s", "nan/s", "inf/s", "50/s:0", "50/s:x", "0/s"])
def test_a_malformed_rate_limit_is_refused_with_its_format(text):
    with pytest.raises(ConfigError, match=re.escape("<requests>/<s|min|h>[:<burst>]")):
        parse_rate_limit(text)


def test_the_body_limit_setting_is_read_and_checked():
    base = {"PERSISTENCE_MODULE": "eventsourcing.popo"}
    assert load(base).max_body_bytes == 65536
    assert load({**base, "ZAMETANO_MAX_BODY_BYTES": "1048576"}).max_body_bytes == 1048576
    for bad in ("lots", "100", "-1"):
        with pytest.raises(ConfigError, match="ZAMETANO_MAX_BODY_BYTES"):
            load({**base, "ZAMETANO_MAX_BODY_BYTES": bad})
