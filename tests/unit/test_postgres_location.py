"""The tests and the benchmarks find PostgreSQL where POSTGRES_* say (the library's own variables), by
default postgres@127.0.0.1:5432/test."""

from __future__ import annotations

import ast
import os
import subprocess
import sys
from pathlib import Path

from tests.helpers import postgres_location

ROOT = Path(__file__).resolve().parents[2]
ELSEWHERE = {"POSTGRES_HOST": "db.internal", "POSTGRES_PORT": "6543", "POSTGRES_USER": "ci",
             "POSTGRES_PASSWORD": "s3cret", "POSTGRES_DBNAME": "zametano_ci"}
WHERE = {"host": "db.internal", "port": "6543", "user": "ci", "password": "s3cret", "dbname": "zametano_ci"}


def test_with_no_postgres_variables_the_tests_use_postgres_at_127_0_0_1_5432_test() -> None:
    expected = {"host": "127.0.0.1", "port": "5432", "user": "postgres", "dbname": "test", "password": None}
    assert postgres_location({}) == expected
    assert postgres_location(dict.fromkeys(ELSEWHERE, "")) == expected  # empty is unset


def test_every_postgres_variable_is_honoured() -> None:
    assert postgres_location(ELSEWHERE) == WHERE
    assert postgres_location({"POSTGRES_PORT": "5433"})["port"] == "5433"


def in_a_fresh_python(code: str, env: dict[str, str]) -> dict[str, object]:
    clean = {k: v for k, v in os.environ.items() if not k.startswith("POSTGRES_")}
    result = subprocess.run([sys.executable, "-c", code], cwd=ROOT, env={**clean, **env}, capture_output=True,
                            text=True, timeout=120, check=True)
    return ast.literal_eval(result.stdout.strip().splitlines()[-1])


def test_conftest_connects_where_the_environment_says_and_names_it_when_it_cannot() -> None:
    code = ("from tests import conftest; print(repr({**conftest.PG, 'reason': conftest.postgres_reachable()}))")
    found = in_a_fresh_python(code, {**ELSEWHERE, "POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": "1"})

    assert {k: found[k] for k in WHERE} == {**WHERE, "host": "127.0.0.1", "port": "1"}
    assert str(found["reason"]).startswith("PostgreSQL at 127.0.0.1:1 not reachable")


def test_the_benchmarks_make_their_schemas_where_the_environment_says() -> None:
    code = ("import sys; sys.path.insert(0, 'scripts'); import _bench; "
            "print(repr({**_bench.PG, 'password': _bench.PG_PASSWORD}))")
    assert in_a_fresh_python(code, ELSEWHERE) == WHERE
