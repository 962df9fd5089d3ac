"""End to end: the gunicorn master makes the signing key before it forks, so every worker signs with it."""

from __future__ import annotations

import stat
from pathlib import Path

import requests

from tests.signatures import verify_receipt

PLAYERS = ["anna", "boris", "vera"]


def test_every_worker_signs_with_the_key_the_master_made_and_logged(server):
    key_file = Path(server.env["ZAMETANO_DATA_DIR"]) / "signing-key.pem"
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    listed = [requests.get(f"{server}/keys", timeout=10).json()["keys"] for _ in range(6)]
    assert all(keys == listed[0] for keys in listed)
    (key,) = listed[0]
    assert f"receipts signed with key {key['key_id']} ({key_file}, made now)" in server.log.read_text()
    table = requests.post(f"{server}/tables", json={"game": "chemin-de-fer", "players": PLAYERS}, timeout=10).json()
    seated = requests.post(f"{server}/tables/{table['table_id']}/commands",
                           json={"command": "draw_seats", "player": "anna"}, timeout=10).json()
    receipts = [table["receipt"], seated["receipt"]]
    # reads land on either worker: each gives the same receipt for the head
    heads = [requests.get(f"{server}/tables/{table['table_id']}/head", timeout=10).json()["receipt"] for _ in range(6)]
    assert all(head == receipts[-1] for head in heads)
    for receipt in receipts:
        assert verify_receipt(receipt, listed[0])["key_id"] == key["key_id"]
