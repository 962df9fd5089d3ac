"""What start-up checks before anything else, each refusal a ConfigError that names the setting and what is
allowed; and the metrics folder the server gives its workers."""

from __future__ import annotations

import os

import pytest

from api.server import on_exit, prepare_metrics_dir
from service.config import ConfigError, load
from service.store import probe_postgres
from tests.e2e.servers import free_port


@pytest.mark.parametrize("module", ["postgres", "sqlite", "eventsourcing.mysql", "eventsourcing.postgres:Factory"])
def test_a_persistence_module_other_than_the_three_is_refused_with_the_three(module):
    with pytest.raises(ConfigError, match=r"PERSISTENCE_MODULE is one of eventsourcing\.sqlite, eventsourcing\.postgres, "
                                          r"eventsourcing\.popo, not"):
        load({"PERSISTENCE_MODULE": module})


@pytest.mark.parametrize("missing", ["POSTGRES_HOST", "POSTGRES_DBNAME", "POSTGRES_USER"])
def test_postgresql_without_its_host_database_or_user_is_refused_naming_what_is_missing(missing):
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "db", "POSTGRES_DBNAME": "z",
           "POSTGRES_USER": "u", missing: ""}
    with pytest.raises(ConfigError, match=f"needs {missing}:"):
        load(env)


def test_a_data_directory_that_cannot_be_made_is_refused_naming_it(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="ZAMETANO_DATA_DIR .*/file/data cannot be created: Not a directory"):
        load({"ZAMETANO_DATA_DIR": str(tmp_path / "file" / "data")})


def test_a_postgresql_that_refuses_the_connection_is_named_with_host_port_database_and_user():
    port = free_port()
    with pytest.raises(ConfigError) as refused:
        probe_postgres({"POSTGRES_HOST": "127.0.0.1", "POSTGRES_PORT": str(port), "POSTGRES_DBNAME": "zdb",
                        "POSTGRES_USER": "zuser"})
    message = str(refused.value)
    assert message.startswith(f"Cannot connect to PostgreSQL 127.0.0.1:{port}/zdb as user zuser: Connection refused")
    assert "\n" not in message


def test_a_metrics_folder_given_is_emptied_of_an_earlier_runs_files_only(tmp_path):
    folder = tmp_path / "metrics"
    folder.mkdir()
    (folder / "counter_123.db").write_bytes(b"old")
    (folder / "gauge_livesum_123.db").write_bytes(b"old")
    (folder / "README").write_text("not ours")
    environ = {"PROMETHEUS_MULTIPROC_DIR": str(folder)}
    assert prepare_metrics_dir(environ) == str(folder)
    assert sorted(p.name for p in folder.iterdir()) == ["README"]
    on_exit(None)
    assert folder.exists()  # the operator's folder stays


def test_without_a_metrics_folder_a_new_one_is_made_named_in_the_environment_and_removed_on_exit():
    environ: dict[str, str] = {}
    folder = prepare_metrics_dir(environ)
    assert environ["PROMETHEUS_MULTIPROC_DIR"] == folder
    assert os.path.isdir(folder) and not os.listdir(folder)
    on_exit(None)
    assert not os.path.exists(folder)


def test_a_metrics_folder_that_cannot_be_made_is_refused_naming_it(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(ConfigError, match="PROMETHEUS_MULTIPROC_DIR .*/file/m cannot be made or emptied"):
        prepare_metrics_dir({"PROMETHEUS_MULTIPROC_DIR": str(tmp_path / "file" / "m")})
