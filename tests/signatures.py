"""Checks a receipt the way an outside verifier would: from the receipt format alone, with cryptography,
never with the service's own signing code."""

from __future__ import annotations

import base64
import hashlib
import json
from typing import Any

from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey

RECEIPT_FIELDS = {"table_id", "version", "digest", "timestamp", "key_id", "signature"}


def unb64url(text: str) -> bytes:
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def verify_receipt(receipt: dict[str, Any], keys: list[dict[str, Any]]) -> dict[str, Any]:
    """Raises unless ``receipt`` has exactly the six fields and is signed by one of ``keys``; returns the key."""
    assert set(receipt) == RECEIPT_FIELDS, sorted(receipt)
    (key,) = [k for k in keys if k["key_id"] == receipt["key_id"]]
    raw = unb64url(key["public_key"])
    assert key["algorithm"] == "Ed25519" and len(raw) == 32
    assert hashlib.sha256(raw).hexdigest()[:16] == key["key_id"]
    signed = {k: v for k, v in receipt.items() if k != "signature"}
    message = json.dumps(signed, sort_keys=True, separators=(",", ":"), ensure_ascii=False).encode("utf-8")
    Ed25519PublicKey.from_public_bytes(raw).verify(unb64url(receipt["signature"]), message)  # InvalidSignature
    return key
