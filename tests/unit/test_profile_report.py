"""How scripts/profile-http puts py-spy's samples down to the parts of a worker."""

from __future__ import annotations

from tests.helpers import load_script

profile = load_script("profile_http.py", "zametano_profile_http")

GUNICORN = "Thread.run (threading.py:982);ThreadWorker.handle (gunicorn/workers/gthread.py:553)"
COMMAND = GUNICORN + ";Flask.__call__ (flask/app.py:1536);Commands.post (api/tables.py:105)"


def test_a_sample_counts_for_the_innermost_frame_that_belongs_to_a_part():
    stack = (COMMAND + ";TablesService.execute (service/application.py:183);"
             "Cursor.execute (psycopg/cursor.py:97)").split(";")
    assert profile.part_of(stack) == "psycopg and its pool"
    assert profile.part_of(stack[:-1]) == "Zametano service layer"
    assert profile.part_of(stack[:-2]) == "Zametano web layer"


def test_the_standard_librarys_frames_count_for_whoever_called_them():
    stack = (COMMAND + ";Signer.sign_receipt (service/signing.py:99);dumps (json/__init__.py:231);"
             "JSONEncoder.encode (json/encoder.py:199)").split(";")
    assert profile.part_of(stack) == "JSON"
    assert profile.part_of((GUNICORN + ";select (selectors.py:468)").split(";")) == "gunicorn: sockets, HTTP parsing"
    assert profile.part_of(["Thread.run (threading.py:982)", "wait (threading.py:327)"]) == profile.OTHER


def test_the_service_layers_own_parts_are_named_apart_from_the_rest_of_it():
    base = COMMAND + ";TablesService.execute (service/application.py:183);"
    assert profile.part_of((base + "Signer.sign_receipt (service/signing.py:99)").split(";")) == "receipts: Ed25519 signing"
    assert profile.part_of((base + "GroupCommitter.commit (service/groupcommit.py:70)").split(";")) == "group commit"
    assert profile.part_of(("_InLists._pull (service/readmodel/follower.py:80)").split(";")) == "read model follower"
    assert profile.part_of((base + "digest (domain/chain.py:35)").split(";")) == "Zametano domain: rules, views, hash chain"


def test_collapsed_stacks_are_tallied_by_part_with_their_counts():
    raw = "\n".join([
        COMMAND + ";Cursor.execute (psycopg/cursor.py:97) 7",
        COMMAND + " 2",
        GUNICORN + " 3",
        "",
        "not a sample line",
    ])
    assert profile.tally(raw) == {"psycopg and its pool": 7, "Zametano web layer": 2, "gunicorn: sockets, HTTP parsing": 3}
