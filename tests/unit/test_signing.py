"""The signing key and the keyring (service/signing.py): made once, kept, rotated, refused when unusable."""

from __future__ import annotations

import hashlib
import json
import stat
import threading
from datetime import datetime, timedelta, timezone
from pathlib import Path

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey

from service.config import ConfigError, load
from service.signing import KEY_FILE, KEYRING_FILE, Signer, load_signer
from tests.helpers import refused_start
from tests.signatures import verify_receipt

T1 = datetime(2026, 1, 1, 12, 0, tzinfo=timezone.utc)
T2 = T1 + timedelta(days=90)
DIGEST = "ab" * 32


def settings(data_dir: Path, key_file: Path | None = None, module: str = "eventsourcing.sqlite"):
    env = {"PERSISTENCE_MODULE": module, "SQLITE_DBNAME": str(data_dir / "events.sqlite"), "ZAMETANO_DATA_DIR": str(data_dir)}
    if key_file is not None:
        env["ZAMETANO_SIGNING_KEY_FILE"] = str(key_file)
    return load(env)


def write_pem(path: Path, key) -> Path:  # type: ignore[no-untyped-def]
    path.write_bytes(
        key.private_bytes(serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.NoEncryption())
    )
    path.chmod(0o600)  # a key others may read is refused (service/files.py)
    return path


def test_the_first_start_makes_a_key_only_its_owner_can_read_and_records_it_in_the_keyring(tmp_path):
    signer = load_signer(settings(tmp_path), now=lambda: T1)
    key_file = tmp_path / KEY_FILE
    assert signer.made and signer.key_file == key_file
    assert stat.S_IMODE(key_file.stat().st_mode) == 0o600
    assert not list(tmp_path.glob(".*.tmp"))  # written aside and renamed, nothing left over
    (entry,) = json.loads((tmp_path / KEYRING_FILE).read_text())["keys"]
    assert entry == signer.keys()[0]
    assert entry["key_id"] == signer.key_id and entry["not_before"] == "2026-01-01T12:00:00.000000+00:00"
    assert entry["not_after"] is None and entry["algorithm"] == "Ed25519"
    assert "made now" in signer.describe() and signer.key_id in signer.describe()


def test_the_next_start_signs_with_the_same_key_and_leaves_the_keyring_as_it_was(tmp_path):
    first = load_signer(settings(tmp_path), now=lambda: T1)
    keyring = (tmp_path / KEYRING_FILE).read_bytes()
    second = load_signer(settings(tmp_path), now=lambda: T2)
    assert second.key_id == first.key_id and not second.made
    assert (tmp_path / KEYRING_FILE).read_bytes() == keyring
    assert second.sign_receipt("t", 3, DIGEST, "x") == first.sign_receipt("t", 3, DIGEST, "x")


def test_the_key_id_is_the_first_16_hex_digits_of_sha256_of_the_raw_public_key(tmp_path):
    signer = load_signer(settings(tmp_path))
    key = serialization.load_pem_private_key((tmp_path / KEY_FILE).read_bytes(), password=None)
    raw = key.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)
    assert signer.key_id == hashlib.sha256(raw).hexdigest()[:16]
    assert len(signer.key_id) == 16 and signer.key_id == signer.key_id.lower()


def test_processes_starting_at_once_all_end_up_with_one_key(tmp_path):
    barrier = threading.Barrier(6)
    ids: list[str] = []

    def start() -> None:
        barrier.wait()
        ids.append(load_signer(settings(tmp_path)).key_id)

    threads = [threading.Thread(target=start) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert len(ids) == 6 and len(set(ids)) == 1
    assert len(json.loads((tmp_path / KEYRING_FILE).read_text())["keys"]) == 1


def test_a_receipt_is_the_six_fields_signed_over_their_canonical_json(tmp_path):
    signer = Signer.in_memory()
    receipt = signer.sign_receipt("t-1", 7, DIGEST, "2026-11-29T20:15:04.000000+00:00")
    assert verify_receipt(receipt, signer.keys())["key_id"] == signer.key_id
    assert "=" not in receipt["signature"]
    with pytest.raises(InvalidSignature):
        verify_receipt({**receipt, "version": 8}, signer.keys())


def test_after_a_rotation_the_old_key_stays_listed_and_its_receipts_still_verify(tmp_path):
    old = load_signer(settings(tmp_path), now=lambda: T1)
    old_receipt = old.sign_receipt("t", 5, DIGEST, "2026-03-01T00:00:00.000000+00:00")
    new_file = write_pem(tmp_path / "signing-key-2.pem", Ed25519PrivateKey.generate())

    new = load_signer(settings(tmp_path, key_file=new_file), now=lambda: T2)
    current, retired = new.keys()
    assert current["key_id"] == new.key_id != old.key_id
    assert current["not_before"] == retired["not_after"] == "2026-04-01T12:00:00.000000+00:00"
    assert current["not_after"] is None
    assert retired["key_id"] == old.key_id and retired["not_before"] == "2026-01-01T12:00:00.000000+00:00"
    assert new.retired == (old.key_id,) and old.key_id in new.describe()
    assert verify_receipt(old_receipt, new.keys())["key_id"] == old.key_id
    assert verify_receipt(new.sign_receipt("t", 6, DIGEST, "x"), new.keys())["key_id"] == new.key_id
    # the keyring on disk is what GET /keys shows, and later starts change nothing
    assert json.loads((tmp_path / KEYRING_FILE).read_text())["keys"] == new.keys()
    assert load_signer(settings(tmp_path, key_file=new_file), now=lambda: T2 + timedelta(days=1)).keys() == new.keys()


def test_starting_again_with_a_retired_key_is_refused(tmp_path):
    old = load_signer(settings(tmp_path), now=lambda: T1)
    load_signer(settings(tmp_path, key_file=write_pem(tmp_path / "new.pem", Ed25519PrivateKey.generate())), now=lambda: T2)
    with pytest.raises(ConfigError, match=f"{old.key_id}.* was retired at 2026-04-01") as caught:
        load_signer(settings(tmp_path), now=lambda: T2)
    assert "\n" not in str(caught.value)


def encrypted(path: Path) -> Path:
    key = Ed25519PrivateKey.generate()
    path.write_bytes(key.private_bytes(
        serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8, serialization.BestAvailableEncryption(b"pw")
    ))
    path.chmod(0o600)
    return path


def junk(path: Path) -> Path:
    path.write_text("not a key\n")
    path.chmod(0o600)
    return path


@pytest.mark.parametrize(
    "make,words",
    [
        (lambda d: d / "missing.pem", "cannot be read: No such file"),
        (lambda d: d, "cannot be read"),
        (lambda d: junk(d / "junk.pem"), "is not a PEM private key"),
        (lambda d: write_pem(d / "ec.pem", ec.generate_private_key(ec.SECP256R1())), "is not an Ed25519 key"),
        (lambda d: encrypted(d / "locked.pem"), "protected by a password"),
    ],
    ids=["missing", "a-folder", "not-pem", "not-ed25519", "encrypted"],
)
def test_a_key_file_that_cannot_be_used_stops_start_up_with_one_line_naming_it(tmp_path, make, words):
    key_file = make(tmp_path)
    with pytest.raises(ConfigError) as caught:
        load_signer(settings(tmp_path, key_file=key_file))
    message = str(caught.value)
    assert "\n" not in message and words in message, message
    assert message.startswith(f"ZAMETANO_SIGNING_KEY_FILE {key_file} ")


def test_a_damaged_default_key_or_keyring_stops_start_up_naming_the_file(tmp_path):
    (tmp_path / KEY_FILE).write_text("-----BEGIN PRIVATE KEY-----\ngarbage\n-----END PRIVATE KEY-----\n")
    (tmp_path / KEY_FILE).chmod(0o600)
    with pytest.raises(ConfigError, match=f"the signing key {tmp_path / KEY_FILE} is not a PEM private key"):
        load_signer(settings(tmp_path))
    (tmp_path / KEY_FILE).unlink()
    (tmp_path / KEYRING_FILE).write_text('{"keys": [{"key_id": "0000000000000000", "algorithm": "Ed25519", "public_key": "AAAA"}]}')
    with pytest.raises(ConfigError, match=f"the keyring {tmp_path / KEYRING_FILE} is damaged") as caught:
        load_signer(settings(tmp_path))
    assert "\n" not in str(caught.value)


def test_an_in_memory_store_signs_with_a_key_in_memory_and_writes_no_file(tmp_path):
    signer = load_signer(settings(tmp_path, module="eventsourcing.popo"))
    assert signer.key_file is None and list(tmp_path.iterdir()) == []
    assert [k["key_id"] for k in signer.keys()] == [signer.key_id]


def test_the_server_makes_the_key_before_its_workers_and_names_it_in_its_start_line(tmp_path, monkeypatch):
    from api.server import prepare_store

    for name, value in {"PERSISTENCE_MODULE": "eventsourcing.sqlite", "SQLITE_DBNAME": str(tmp_path / "e.sqlite"),
                        "ZAMETANO_DATA_DIR": str(tmp_path), "CREATE_TABLE": "y"}.items():
        monkeypatch.setenv(name, value)  # restored afterwards, CREATE_TABLE included
    monkeypatch.delenv("ZAMETANO_SIGNING_KEY_FILE", raising=False)
    line = prepare_store()
    key_id = load_signer(load()).key_id
    assert f"receipts signed with key {key_id} ({tmp_path / KEY_FILE}, made now)" in line


def test_a_server_given_an_unusable_key_exits_with_one_line_and_no_traceback(tmp_path):
    junk = tmp_path / "junk.pem"
    junk.write_text("junk")
    junk.chmod(0o600)
    done = refused_start(tmp_path, junk)
    assert done.returncode == 2
    assert done.stderr.splitlines() == [f"error: ZAMETANO_SIGNING_KEY_FILE {junk} is not a PEM private key; "
                                        "make one with: openssl genpkey -algorithm ed25519 -out FILE"]


def test_gunicorn_given_an_unusable_key_stops_with_one_line(tmp_path, monkeypatch, capsys):
    from types import SimpleNamespace

    from api import gunicorn_conf

    monkeypatch.setenv("PERSISTENCE_MODULE", "eventsourcing.popo")
    monkeypatch.setenv("ZAMETANO_DATA_DIR", str(tmp_path))
    monkeypatch.setenv("ZAMETANO_SIGNING_KEY_FILE", str(tmp_path / "absent.pem"))
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path / "metrics"))  # the hook prepares it first
    server = SimpleNamespace(cfg=SimpleNamespace(bind=["127.0.0.1:8000"]), app=None)
    with pytest.raises(SystemExit) as caught:
        gunicorn_conf.on_starting(server)
    assert caught.value.code == 2
    err = capsys.readouterr().err
    assert err == f"error: ZAMETANO_SIGNING_KEY_FILE {tmp_path / 'absent.pem'} cannot be read: No such file or directory\n"
