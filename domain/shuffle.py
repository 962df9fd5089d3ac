"""The provably fair shuffle of docs/design.md ("The fair shuffle").

The order of a shoe is fixed by a secret 32-byte seed: committed to (sha256) when the shuffle is
recorded, revealed when the shoe is finished, so that anyone can recompute every card afterwards.
"""

from __future__ import annotations

import hashlib
import hmac
from collections.abc import Iterator

from domain.cards import new_deck

ALGORITHM = "hmac-sha256-fisher-yates-v1"
SEED_BYTES = 32


def commitment(seed: bytes) -> str:
    return hashlib.sha256(seed).hexdigest()


def _stream(seed: bytes) -> Iterator[int]:
    """32-bit big-endian words from HMAC-SHA256(seed, str(k)) for k = 0, 1, 2, ..."""
    k = 0
    while True:
        block = hmac.new(seed, str(k).encode(), hashlib.sha256).digest()
        for i in range(0, len(block), 4):
            yield int.from_bytes(block[i : i + 4], "big")
        k += 1


def shuffled(seed: bytes, decks: int = 1) -> list[str]:
    """Fisher-Yates driven by the seed's stream, with rejection sampling so every order is equally likely."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a shuffle seed is {SEED_BYTES} bytes, got {len(seed)}")
    cards = new_deck(decks)
    words = _stream(seed)
    for i in range(len(cards) - 1, 0, -1):
        n = i + 1
        limit = 2**32 - (2**32 % n)
        u = next(words)
        while u >= limit:
            u = next(words)
        j = u % n
        cards[i], cards[j] = cards[j], cards[i]
    return cards


def cut(cards: list[str], position: int) -> list[str]:
    """The shoe after a cut at ``position``: dealt from index 0 onwards."""
    return cards[position:] + cards[:position]


def shoe_order(seed: bytes, decks: int, position: int = 0) -> list[str]:
    return cut(shuffled(seed, decks), position)
