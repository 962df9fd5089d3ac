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


def draw_index(words: Iterator[int], n: int) -> int:
    """A position 0..n-1 from the 32-bit words, each equally likely: a word at or above the largest multiple
    of n below 2**32 is rejected and the next one read, since ``u % n`` alone would favour the low positions."""
    limit = 2**32 - (2**32 % n)
    u = next(words)
    while u >= limit:
        u = next(words)
    return u % n


def permutation(seed: bytes, size: int) -> list[int]:
    """Fisher-Yates over the positions 0..size-1, driven by the seed's stream: position i (from the last down
    to 1) takes the item at a position drawn from 0..i. What ``shuffled`` does to a shoe, on positions."""
    order = list(range(size))
    words = _stream(seed)
    for i in range(size - 1, 0, -1):
        j = draw_index(words, i + 1)
        order[i], order[j] = order[j], order[i]
    return order


def shuffled(seed: bytes, decks: int = 1) -> list[str]:
    """The shoe of ``decks`` decks in the order the seed fixes: Fisher-Yates with rejection sampling, so
    every order is equally likely."""
    if len(seed) != SEED_BYTES:
        raise ValueError(f"a shuffle seed is {SEED_BYTES} bytes, got {len(seed)}")
    cards = new_deck(decks)
    return [cards[i] for i in permutation(seed, len(cards))]


def cut(cards: list[str], position: int) -> list[str]:
    """The shoe after a cut at ``position``: dealt from index 0 onwards."""
    return cards[position:] + cards[:position]


def shoe_order(seed: bytes, decks: int, position: int = 0) -> list[str]:
    return cut(shuffled(seed, decks), position)
