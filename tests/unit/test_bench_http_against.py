"""scripts/bench-http --against REV: each Zametano configuration gets a twin that runs the other revision's
code on a store of its own, and the two are set side by side."""

from __future__ import annotations

from pathlib import Path

import pytest

from tests.helpers import load_script

SCRIPTS = Path(__file__).resolve().parents[2] / "scripts"


@pytest.fixture
def bench(monkeypatch):  # type: ignore[no-untyped-def]
    monkeypatch.syspath_prepend(str(SCRIPTS))  # it imports _bench beside it
    return load_script("bench_http.py", "zametano_bench_http")


def test_each_zametano_configuration_is_followed_by_its_twin_and_the_echo_and_library_have_none(bench):
    configs = bench.twins(bench.select("echo,library-1,http-1w-1c,sqlite-2w-4c"))
    assert [(c.name, c.server) for c in configs] == [
        ("library-1", None), ("echo", "echo"), ("http-1w-1c", "pg-1"), ("http-1w-1c@", "pg-1@"),
        ("sqlite-2w-4c", "sqlite-2"), ("sqlite-2w-4c@", "sqlite-2@"),
    ]


def test_the_twin_server_runs_on_a_store_of_its_own(bench, tmp_path):
    pg = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_SCHEMA": "zametano_bench_http_x"}
    servers = bench.Servers(tmp_path, pg, "app", bench.Against("HEAD~1", tmp_path / "against", "zametano_bench_against_x"))
    this, twin = servers.environment("pg-1"), servers.environment("pg-1@")
    assert this["POSTGRES_SCHEMA"] == "zametano_bench_http_x" and twin["POSTGRES_SCHEMA"] == "zametano_bench_against_x"
    assert this["ZAMETANO_DATA_DIR"] != twin["ZAMETANO_DATA_DIR"]
    lite, lite_twin = servers.environment("sqlite-2"), servers.environment("sqlite-2@")
    assert lite["SQLITE_DBNAME"] != lite_twin["SQLITE_DBNAME"]
    assert {k: v for k, v in twin.items() if k not in ("POSTGRES_SCHEMA", "ZAMETANO_DATA_DIR")} == {
        k: v for k, v in this.items() if k not in ("POSTGRES_SCHEMA", "ZAMETANO_DATA_DIR")}


def test_the_comparison_gives_each_measure_on_both_revisions_and_their_ratio(bench):
    configs = bench.twins(bench.select("http-1w-1c"))
    med = {"http-1w-1c": {"rate": 300.0, "p50": 3.0, "cpu": 3.0}, "http-1w-1c@": {"rate": 250.0, "p50": 4.0, "cpu": 4.0}}
    table = bench.against_table(med, configs, "abc123")
    assert "| Zametano PostgreSQL, 1 worker, 1 client | per second | 250.00 | 300.00 | 1.20 |" in table
    assert "| Zametano PostgreSQL, 1 worker, 1 client | CPU (ms/op) | 4.00 | 3.00 | 0.75 |" in table
