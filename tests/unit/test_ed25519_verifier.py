"""The Ed25519 verifier of scripts/audit (pure Python, standard library only) against RFC 8032 and against
the `cryptography` package, which the service signs its receipts with."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from cryptography.exceptions import InvalidSignature
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey, Ed25519PublicKey
from hypothesis import given, settings
from hypothesis import strategies as st

from tests import helpers

VECTORS = json.loads((Path(__file__).resolve().parents[1] / "vectors" / "ed25519.json").read_text())["vectors"]
audit = helpers.load_script("audit", "zametano_audit")
verify = audit.ed25519_verify
P = 2**255 - 19
L = 2**252 + 27742317777372353535851937790883648493


def raw_public(private: Ed25519PrivateKey) -> bytes:
    return private.public_key().public_bytes(serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def flip(data: bytes, bit: int) -> bytes:
    changed = bytearray(data)
    changed[bit // 8] ^= 1 << (bit % 8)
    return bytes(changed)


@pytest.mark.parametrize("vector", VECTORS, ids=[v["name"] for v in VECTORS])
def test_every_rfc_8032_test_vector_verifies_and_cryptography_agrees_with_it(vector: dict[str, str]) -> None:
    secret, public, message, signature = (bytes.fromhex(vector[k]) for k in
                                          ("secret_key", "public_key", "message", "signature"))
    private = Ed25519PrivateKey.from_private_bytes(secret)
    # The vectors were copied by hand: the reference implementation must reproduce every one of them.
    assert raw_public(private) == public
    assert private.sign(message) == signature

    assert verify(public, message, signature) is True
    assert verify(public, message + b"\x00", signature) is False


def test_the_long_vectors_are_the_rfc_s_lengths() -> None:
    by_name = {v["name"]: v for v in VECTORS}
    assert set(by_name) == {"TEST 1", "TEST 2", "TEST 3", "TEST 1024", "TEST SHA(abc)"}
    assert len(bytes.fromhex(by_name["TEST 1024"]["message"])) == 1023
    assert by_name["TEST SHA(abc)"]["message"] == __import__("hashlib").sha512(b"abc").hexdigest()


@settings(max_examples=60, deadline=None)
@given(
    secret=st.binary(min_size=32, max_size=32),
    message=st.binary(max_size=300),
    part=st.sampled_from(["message", "signature", "key"]),
    bit=st.integers(min_value=0, max_value=2**16),
)
def test_a_signature_made_by_cryptography_verifies_and_any_flipped_bit_makes_it_fail(
    secret: bytes, message: bytes, part: str, bit: int
) -> None:
    private = Ed25519PrivateKey.from_private_bytes(secret)
    public, signature = raw_public(private), private.sign(message)
    assert verify(public, message, signature) is True

    if part == "message" and not message:
        part = "signature"
    if part == "message":
        message = flip(message, bit % (8 * len(message)))
    elif part == "signature":
        signature = flip(signature, bit % 512)
    else:
        public = flip(public, bit % 256)
    assert verify(public, message, signature) is False


def test_a_signature_whose_s_is_not_reduced_below_the_group_order_is_refused() -> None:
    private = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    public, signature = raw_public(private), private.sign(b"head")
    s = int.from_bytes(signature[32:], "little")
    unreduced = signature[:32] + (s + L).to_bytes(32, "little")  # the same scalar modulo L

    assert verify(public, b"head", signature) is True
    assert verify(public, b"head", unreduced) is False
    with pytest.raises(InvalidSignature):
        Ed25519PublicKey.from_public_bytes(public).verify(unreduced, b"head")


def encode(y: int, x_0: int = 0) -> bytes:
    return (y | (x_0 << 255)).to_bytes(32, "little")


def is_square(value: int) -> bool:
    return value % P == 0 or pow(value, (P - 1) // 2, P) == 1


def test_the_base_point_decodes_to_the_rfc_s_coordinates() -> None:
    x, y, z, t = audit.ed_decode(encode(4 * pow(5, P - 2, P) % P))
    assert (x, y, z) == (15112221349535400772501151409588531511454012693041857206046113283949847762202,
                         46316835694926478169428394003475163141307993866256225615783033603165251855960, 1)
    assert t == x * y % P


def test_encodings_that_name_no_point_are_refused() -> None:
    d = -121665 * pow(121666, P - 2, P) % P
    off_curve = next(y for y in range(2, 100) if not is_square((y * y - 1) * pow(d * y * y + 1, P - 2, P)))
    valid = raw_public(Ed25519PrivateKey.from_private_bytes(bytes(32)))
    refused = {
        "y = p, not reduced": encode(P),
        "y = p + 1, not reduced (the identity's y)": encode(P + 1),
        "x = 0 with its sign bit set": encode(1, x_0=1),
        "no x for this y": encode(off_curve),
        "31 bytes": valid[:31],
    }

    assert audit.ed_decode(encode(1)) == (0, 1, 1, 0)  # the identity, canonically encoded
    assert audit.ed_decode(valid) is not None
    for name, encoded in refused.items():
        assert audit.ed_decode(encoded) is None, name
        assert verify(encoded, b"m", bytes(64)) is False, name


def test_signatures_and_keys_of_the_wrong_length_are_refused() -> None:
    private = Ed25519PrivateKey.from_private_bytes(bytes(range(1, 33)))
    public, signature = raw_public(private), private.sign(b"m")

    assert verify(public, b"m", signature) is True
    assert verify(public, b"m", signature[:63]) is False
    assert verify(public, b"m", signature + b"\x00") is False
    assert verify(public[:31], b"m", signature) is False
    assert verify(public + b"\x00", b"m", signature) is False


def test_a_signature_by_another_key_is_refused() -> None:
    one, other = (Ed25519PrivateKey.from_private_bytes(bytes([n]) * 32) for n in (1, 2))
    assert verify(raw_public(other), b"m", one.sign(b"m")) is False


def test_an_r_that_is_no_point_is_refused() -> None:
    private = Ed25519PrivateKey.from_private_bytes(bytes(range(32)))
    public, signature = raw_public(private), private.sign(b"m")
    assert verify(public, b"m", encode(P) + signature[32:]) is False


def test_base64url_is_read_with_and_without_padding_and_nothing_else() -> None:
    decode: Any = audit.b64url_decode
    assert decode("AAEC") == b"\x00\x01\x02"
    assert decode("AAE") == decode("AAE=") == b"\x00\x01"
    assert decode("-_8") == b"\xfb\xff"
    for bad in ("+/8=", "AA E", "A", "AAE==x", None, 12):
        assert decode(bad) is None, bad
