"""POSTGRES_TARGET_SESSION_ATTRS: with several PostgreSQL hosts the service connects only to the one that
takes writes, unless told otherwise; a value it cannot use is refused at start."""

from __future__ import annotations

import pytest

from service.application import TablesService
from service.config import ConfigError, load

pytestmark = pytest.mark.postgres


def test_several_hosts_mean_the_primary_only_and_commands_run_on_it(postgres_env, tmp_path):
    env = {**postgres_env, "POSTGRES_HOST": f"{postgres_env['POSTGRES_HOST']},{postgres_env['POSTGRES_HOST']}",
           "POSTGRES_PORT": f"{postgres_env['POSTGRES_PORT']},{postgres_env['POSTGRES_PORT']}",
           "ZAMETANO_DATA_DIR": str(tmp_path)}
    service = TablesService(load(env))
    try:
        assert service.factory.datastore.pool.kwargs["target_session_attrs"] == "read-write"
        table_id = service.open_table("chemin-de-fer", ["anna", "boris"], {})["table_id"]
        assert service.execute(table_id, "draw_seats", "anna", {})["version"] > 2
    finally:
        service.close()


@pytest.mark.parametrize(("host", "given", "used"), [
    ("db", "", "any"), ("db1,db2", "", "read-write"), ("db1,db2", "primary", "primary"), ("db", "read-write", "read-write"),
])
def test_the_setting_defaults_by_the_number_of_hosts(host, given, used):
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": host, "POSTGRES_DBNAME": "z",
           "POSTGRES_USER": "z", "POSTGRES_TARGET_SESSION_ATTRS": given}
    assert load(env).persistence["POSTGRES_TARGET_SESSION_ATTRS"] == used


def test_a_standby_as_the_only_target_is_refused_with_the_values_allowed():
    env = {"PERSISTENCE_MODULE": "eventsourcing.postgres", "POSTGRES_HOST": "db1,db2", "POSTGRES_DBNAME": "z",
           "POSTGRES_USER": "z", "POSTGRES_TARGET_SESSION_ATTRS": "standby"}
    with pytest.raises(ConfigError, match="one of any, read-write, primary"):
        load(env)
