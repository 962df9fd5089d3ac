"""Every setting of README's Configuration table and every script's options, given a bad value: one line on
stderr, exit 2, no traceback, nothing written (no data folder, key, store or metrics folder left behind).

In this process, so that it is fast: the server's start (api/server.py ``main``, what scripts/run runs) with
gunicorn replaced by a stand-in that fails the test, and each script's own ``main``."""

from __future__ import annotations

import os
import re
import runpy
import sys
from pathlib import Path
from typing import Any

import pytest

import api.server
import service.metrics  # noqa: F401 - prometheus_client chooses its mode at first import: in-process, here
from service.config import ALL_VARIABLES
from tests.helpers import SCRIPTS, load_script

ROOT = Path(__file__).resolve().parents[2]
PG = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "127.0.0.1", "POSTGRES_DBNAME": "test",
      "POSTGRES_USER": "postgres"}
# A bad value for each setting ({tmp}: the test's folder, {garbage}: a file of it that is no key, no JSON
# and no database, {missing}: a path in it that does not exist), with what it needs beside it.
BAD_SETTINGS: dict[str, list[tuple[str, dict[str, str]]]] = {
    "PERSISTENCE_MODULE": [("sqlite", {})],
    "SQLITE_DBNAME": [("{missing}/store.sqlite", {}), ("{garbage}", {})],
    "SQLITE_LOCK_TIMEOUT": [("soon", {})],
    "POSTGRES_HOST": [("", PG)],
    "POSTGRES_PORT": [("5432x", PG), ("70000", PG)],
    "POSTGRES_TARGET_SESSION_ATTRS": [("standby", PG)],
    "POSTGRES_DBNAME": [("", PG)],
    "POSTGRES_USER": [("", PG)],
    "POSTGRES_SCHEMA": [("no schema!", PG)],
    "POSTGRES_POOL_SIZE": [("many", PG)],
    "POSTGRES_MAX_OVERFLOW": [("-1", PG)],
    "POSTGRES_CONNECT_TIMEOUT": [("soon", PG), ("0", PG)],
    "POSTGRES_MAX_WAITING": [("lots", PG)],
    "POSTGRES_PRE_PING": [("maybe", PG)],
    "POSTGRES_IDLE_IN_TRANSACTION_SESSION_TIMEOUT": [("5s", PG)],
    "POSTGRES_LOCK_TIMEOUT": [("1.5", PG)],
    "CREATE_TABLE": [("maybe", {})],
    "CIPHER_KEY": [("notbase64", {}), ("abcd", {})],
    "CIPHER_TOPIC": [("json", {"CIPHER_KEY": "8MZqRbIuPtyp9EDrfoEVDHvzPz+KM5rwWMdDPpE2lSU="}),
                     ("eventsourcing.cipher:AESCipher", {})],
    "COMPRESSOR_TOPIC": [("nowhere", {}), ("json", {})],
    "APPLICATION_RECORDER_TOPIC": [("nowhere:Recorder", {}), ("json", {})],
    "AGGREGATE_CACHE_MAXSIZE": [("big", {})],
    "SNAPSHOT_INTERVAL": [("0", {}), ("often", {})],
    "ZAMETANO_TOKENS": [("operator:short", {}), ("boss:0123456789abcdef0123", {})],
    "ZAMETANO_DATA_DIR": [("{garbage}/data", {})],
    "ZAMETANO_SIGNING_KEY_FILE": [("{garbage}", {}), ("{missing}", {})],
    "ZAMETANO_SEED_KEY_FILE": [("{garbage}", {})],
    "ZAMETANO_CIPHER_KEY_FILE": [("{garbage}", {})],
    "ZAMETANO_PLAYER_KEY_FILE": [("{missing}", {})],
    "ZAMETANO_PLAYER_ISSUER": [("casino", {})],
    "ZAMETANO_PLAYER_JWKS_FILE": [("{garbage}", {"ZAMETANO_PLAYER_ISSUER": "casino"})],
    "ZAMETANO_MAX_BODY_BYTES": [("100", {})],
    "ZAMETANO_RATE_LIMIT": [("fast", {})],
    "ZAMETANO_STATEMENT_TIMEOUT": [("-1", {})],
    "ZAMETANO_GROUP_COMMIT": [("maybe", {})],
    "ZAMETANO_LOG_FORMAT": [("xml", {})],
    "ZAMETANO_MAX_STREAMS": [("-1", {})],
    "ZAMETANO_STREAM_HEARTBEAT": [("0", {})],
    "ZAMETANO_MONEY": [("cash", {}), ("wallet", {})],
    "ZAMETANO_WALLET_URL": [("ftp://wallet", {}), ("http://127.0.0.1:9300", {"ZAMETANO_MONEY": "purses"})],
    "ZAMETANO_WALLET_TOKEN": [("short", {"ZAMETANO_WALLET_URL": "http://127.0.0.1:9300"})],
    "ZAMETANO_WALLET_TIMEOUT": [("0", {"ZAMETANO_WALLET_URL": "http://127.0.0.1:9300"}), ("soon", {})],
    "ZAMETANO_CURRENCY": [("euro", {})],
    "HOST": [("192.0.2.1", {})],  # not loopback, and no tokens
    "PORT": [("70000", {}), ("http", {})],
    "WEB_CONCURRENCY": [("0", {}), ("two", {})],
    "WEB_THREADS": [("0", {})],
    "ZAMETANO_MAX_CONNECTIONS": [("0", {})],
    "ZAMETANO_READ_TIMEOUT": [("0", {})],
    "PROMETHEUS_MULTIPROC_DIR": [("{garbage}/metrics", {})],
}
# Settings every value of which is one to take, and why.
ANY_VALUE_TAKEN = {
    "POSTGRES_PASSWORD": "sent as given: PostgreSQL refusing it stops the start in one line "
                         "(tests/e2e/test_startup_refusals.py)",
    "ZAMETANO_PLAYER_AUDIENCE": "any text names an audience (blank: the default)",
}
# BIND is read by api/gunicorn_conf.py alone (gunicorn -c python:api.gunicorn_conf).
GUNICORN_ONLY = {"BIND": ["nohost:port", "127.0.0.1:99999"]}

# Each script's bad options; (script, module file, how its main is called).
BAD_OPTIONS: dict[str, list[list[str]]] = {
    "run": [["--port", "x"], ["--port", "70000"], ["--workers", "0"], ["--threads", "0"], ["--bogus"]],
    "demo": [["--deposit", "0"], ["--rounds", "0"], ["--rounds", "-1"], ["--reveals", "0"], ["--seats", "everyone"], ["--url", "ftp://x"],
             ["--decks", "six"]],
    "odds": [[], ["--decks", "0"], ["--decks", "6", "--commission", "99"], ["--game", "punto-banco", "--decks", "8",
                                                                           "--tie-pays", "7"]],
    "verify-shoe": [[], ["http://127.0.0.1:1/tables/x", "--timeout", "0"], ["http://127.0.0.1:1/tables/x",
                                                                          "--table-id", "x"]],
    "audit": [[], ["http://127.0.0.1:1/tables/x", "--timeout", "-1"], ["http://127.0.0.1:1", "--game", "x"],
              ["http://127.0.0.1:1/tables/x", "--decisions", "--flag-above", "-5"]],
    "seed-key": [[], ["spin"]],
    "encrypt-store": [[], ["target.sqlite", "--batch", "0"]],
    "desk-screenshots": [["--out", "{garbage}/pictures"], ["--bogus"]],
    "lock": [["--bogus"]],
    "bench-commands": [["--sizes", "0,10"], ["--repeat", "0"], ["--ops", "x"]],
    "bench-replay": [["--sizes", "ten"], ["--repeat", "-1"], ["--seed", "x"]],
    "bench-follower": [["--commands", "0"], ["--tables", "0"], ["--repeat", "x"]],
    "bench-http": [["--rounds", "0"], ["--seconds", "0"], ["--bogus"]],
    "bench-hot": [["--bettors", "0"], ["--bettors", "many"], ["--stores", "mysql"], ["--seconds", "0"],
                  ["--workers", "0"], ["--threads", "0"]],
    "bench-streams": [["--rounds", "0"], ["--clients", "0"], ["--streams", "-1"], ["--workers", "0"]],
    "bench-desk": [["--rounds", "0"], ["--visits", "0"]],
    "bench-money": [["--coups", "0"], ["--repeat", "x"], ["--bogus"]],
    "bench-faults": [["--seconds", "0"], ["--clients", "0"], ["--faults", "flood"], ["--workers", "0"]],
    "profile-http": [["--seconds", "0"], ["--clients", "0"], ["--rate", "0"]],
    "wallet": [[], ["--file", "{missing}/wallet.jsonl"], ["--file", "w.jsonl", "--port", "70000"],
               ["--file", "w.jsonl", "--token", "short"], ["--file", "w.jsonl", "--currency", "euro"],
               ["--file", "w.jsonl", "--faults", "explode"]],
    "reconcile": [[], ["http://127.0.0.1:1", "--from", "yesterday"], ["http://127.0.0.1:1", "--to", "2026-12-06T10:00:00"],
                  ["http://127.0.0.1:1", "--wallet-report", "{missing}/report.jsonl"], ["http://127.0.0.1:1", "--timeout", "0"],
                  ["http://127.0.0.1:1", "--receipts", "{missing}/receipts.jsonl"]],
    "rng-report": [["--shoes", "0"], ["--shoes", "many"], ["--decks", "13"], ["--shuffle", "biased"],
                   ["--raw", "stream.bin"], ["--bytes", "10"], ["--raw", "{missing}/stream.bin", "--bytes", "10"],
                   ["--from", "ftp://x"], ["--from", "http://127.0.0.1:1", "--timeout", "0"],
                   ["--from", "http://127.0.0.1:1", "--shuffle", "off-by-one"]],
}
# Where each script's main is: a stand-alone file, or the module a shell script runs.
MODULES = {"run": None, "demo": "demo", "odds": "odds", "verify-shoe": "verify-shoe", "audit": "audit",
           "rng-report": "rng-report",
           "seed-key": "seed_key.py", "encrypt-store": "encrypt_store.py", "desk-screenshots": "desk_screenshots.py",
           "wallet": "wallet.py", "reconcile": "reconcile",
           "lock": "lock", "bench-commands": "bench_commands.py", "bench-replay": "bench_replay.py",
           "bench-follower": "bench_follower.py", "bench-http": "bench_http.py", "bench-hot": "bench_hot.py", "bench-streams": "bench_streams.py",
           "bench-desk": "bench_desk.py", "bench-faults": "bench_faults.py", "profile-http": "profile_http.py",
           "bench-money": "bench_money.py"}
# Its arguments are pytest's, and pytest answers its own mistakes (exit 4, with its usage).
NOT_OURS = {"test"}


def documented_settings() -> list[str]:
    """The variables of README's Configuration table, in its order (docker compose's own, in a subsection, are
    compose's)."""
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    table = text.split("\n## Configuration\n", 1)[1].split("\n#", 1)[0]  # to its first subsection
    return re.findall(r"^\| `([A-Z_]+)` \|", table, flags=re.M)


def scripts() -> list[str]:
    return sorted(p.name for p in SCRIPTS.iterdir()
                  if p.is_file() and os.access(p, os.X_OK) and not p.name.startswith("_") and p.suffix != ".py")


class WouldServe(AssertionError):
    pass


@pytest.fixture
def world(tmp_path, monkeypatch):
    """A folder to start in, clean settings, gunicorn replaced, the umask restored; what is in the folder."""
    for name in (*ALL_VARIABLES, "ZAMETANO_TOKEN"):
        monkeypatch.setenv(name, "")  # so that what the start sets (PROMETHEUS_MULTIPROC_DIR) is undone after
        monkeypatch.delenv(name)
    monkeypatch.chdir(tmp_path)
    (tmp_path / "garbage").write_text("neither a key, nor JSON, nor a database\n")
    (tmp_path / "garbage").chmod(0o600)

    def would_serve() -> Any:
        raise WouldServe("the server would have started")

    monkeypatch.setattr(api.server, "server_class", would_serve)
    umask = os.umask(0o022)
    os.umask(umask)
    yield tmp_path
    os.umask(umask)


def filled(value: str, folder: Path) -> str:
    return value.format(tmp=folder, garbage=folder / "garbage", missing=folder / "missing")


def assert_one_line(code: Any, err: str, folder: Path) -> None:
    assert code == 2, (code, err)
    assert "Traceback" not in err and err.count("\n") == 1 and err.strip(), err
    assert sorted(p.name for p in folder.iterdir()) == ["garbage"], "written before refusing: " + err


def test_every_setting_of_the_configuration_table_has_a_bad_value_tried_or_takes_any():
    documented = documented_settings()
    assert len(documented) > 40
    assert set(documented) == set(BAD_SETTINGS) | set(ANY_VALUE_TAKEN) | set(GUNICORN_ONLY)


@pytest.mark.parametrize(("name", "value", "beside"),
                         [(n, v, b) for n, cases in BAD_SETTINGS.items() for v, b in cases])
def test_a_bad_setting_stops_the_start_in_one_line_before_anything_is_written(world, monkeypatch, capsys, name,
                                                                             value, beside):
    for key, given in {"ZAMETANO_DATA_DIR": str(world / "data"), **beside, name: filled(value, world)}.items():
        monkeypatch.setenv(key, given)
    argv = [] if name in ("PORT", "HOST") else ["--port", "0"]
    code = api.server.main(argv)
    err = capsys.readouterr().err
    assert_one_line(code, err, world)
    assert (name if name != "HOST" else value) in err, err  # the setting named (an address: the address)


@pytest.mark.parametrize(("name", "value"), [(n, v) for n, values in GUNICORN_ONLY.items() for v in values])
def test_a_bad_bind_stops_gunicorns_start_in_one_line(world, monkeypatch, capsys, name, value):
    monkeypatch.setenv(name, value)
    # run afresh, as gunicorn reads it, whether or not another test of this process imported it already
    monkeypatch.delitem(sys.modules, "api.gunicorn_conf", raising=False)
    with pytest.raises(SystemExit) as stopped:
        runpy.run_module("api.gunicorn_conf", run_name="gunicorn_conf")
    err = capsys.readouterr().err
    assert_one_line(stopped.value.code, err, world)
    assert name in err


def test_every_script_has_bad_options_tried_or_is_not_ours():
    assert set(scripts()) == set(BAD_OPTIONS) | NOT_OURS


def run_script(script: str, argv: list[str], monkeypatch: pytest.MonkeyPatch) -> Any:
    """The script's main on ``argv``: its exit code, whether it returned it or exited with it."""
    if script == "run":
        main = api.server.main
    else:
        monkeypatch.syspath_prepend(str(SCRIPTS))  # the shell scripts' modules import what is beside them
        main = load_script(MODULES[script], f"mistake_{MODULES[script].replace('-', '_').removesuffix('.py')}").main
    try:
        return main(argv)
    except SystemExit as exc:
        return exc.code


@pytest.mark.parametrize(("script", "argv"), [(s, a) for s, cases in BAD_OPTIONS.items() for a in cases],
                         ids=lambda v: " ".join(v) if isinstance(v, list) else v)
def test_a_bad_option_of_a_script_is_one_line_and_exit_2_before_it_does_anything(world, monkeypatch, capsys,
                                                                                  script, argv):
    code = run_script(script, [filled(arg, world) for arg in argv], monkeypatch)
    err = capsys.readouterr().err
    assert_one_line(code, err, world)
    assert "error" in err and ("--help" in err or script == "run"), err


def test_a_setting_refused_is_named_in_its_line(world, monkeypatch, capsys):
    monkeypatch.setenv("ZAMETANO_DATA_DIR", str(world / "data"))
    monkeypatch.setenv("CIPHER_KEY", "abcd")
    assert api.server.main(["--port", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: CIPHER_KEY ")


def test_scripts_run_names_the_readme_section_its_settings_are_in(capsys):
    with pytest.raises(SystemExit):
        api.server.main(["--help"])
    out = capsys.readouterr().out
    section = re.search(r"README, '([^']+)'", " ".join(out.split())).group(1)
    assert f"\n## {section}\n" in (ROOT / "README.md").read_text(encoding="utf-8")


def test_threads_refused_name_the_flag_given(world, monkeypatch, capsys):
    monkeypatch.setenv("ZAMETANO_DATA_DIR", str(world / "data"))
    assert api.server.main(["--port", "0", "--threads", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: --threads ")
    monkeypatch.setenv("WEB_THREADS", "0")
    assert api.server.main(["--port", "0"]) == 2
    assert capsys.readouterr().err.startswith("error: WEB_THREADS ")


def test_the_start_up_line_names_the_port_the_server_really_listens_on():
    # `--port 0`: the system chooses the port once gunicorn binds, and the line says which
    said: list[str] = []

    class Log:
        def info(self, text: str, *args: Any) -> None:
            said.append(text % args)

    class Listener:
        def __str__(self) -> str:
            return "http://127.0.0.1:45678"

    class Master:
        LISTENERS = [Listener()]
        cfg = type("Cfg", (), {"bind": ["127.0.0.1:0"]})()
        log = Log()
        zametano_store = "eventsourcing.sqlite (var/zametano.sqlite)"

    api.server.when_ready(Master())
    assert said == ["Zametano on http://127.0.0.1:45678, events in eventsourcing.sqlite (var/zametano.sqlite)"]
