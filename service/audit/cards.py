"""The cards check: every revealed seed against its commitment, every dealt card against its shoe recomputed.

All is read from the log itself, and is null until the shoe is revealed.
"""

from __future__ import annotations

import hashlib
from typing import Any

from domain.shuffle import ALGORITHM, shoe_order
from domain.table import TableEvent
from service.audit.problems import at
from service.seeds import STORED_SEALED


def shoe_record(e: TableEvent) -> dict[str, Any]:
    """What a ShoeShuffled in the log says of its shoe, with room for its cut and reveal."""
    return {
        "shoe": e.shoe, "deck": e.deck, "decks": e.decks, "algorithm": e.algorithm,  # type: ignore[attr-defined]
        "commitment": e.commitment, "cut": 0, "seed": None,  # type: ignore[attr-defined]
        "shuffled_version": e.originator_version, "cut_version": None, "revealed_version": None,
    }


class ShoeLog:
    """Every shoe as the log records it: its ShoeShuffled (commitment, decks, algorithm, deck), its ShoeCut
    (position) and its ShoeRevealed (seed), with their versions; and the cards dealt from it."""

    def __init__(self) -> None:
        self.shoes: dict[int, dict[str, Any]] = {}
        self.dealt: dict[int, list[TableEvent]] = {}
        self.problems: list[dict[str, Any]] = []

    def feed(self, e: TableEvent) -> None:
        kind = e.type
        if kind not in ("ShoeShuffled", "ShoeCut", "ShoeRevealed", "CardDealt"):
            return
        number = e.shoe  # type: ignore[attr-defined]
        if kind == "CardDealt":
            self.dealt.setdefault(number, []).append(e)
            return
        if kind == "ShoeShuffled":
            if number in self.shoes and self.shoes[number]["shuffled_version"] is not None:
                first = self.shoes[number]["shuffled_version"]
                self.problems.append(at("cards", e.originator_version, f"shoe {number} is shuffled again, "
                                                                       f"after its shuffle at version {first}", e.type))
                return
            self.shoes[number] = {**shoe_record(e), "seed_stored": _seed_stored(e), **{k: v for k, v in self.shoes.get(number, {}).items()
                                                       if k in ("cut", "cut_version", "seed", "revealed_version")}}
            return
        shoe = self.shoes.setdefault(number, {"shoe": number, "deck": None, "decks": None, "algorithm": None,
                                              "commitment": None, "cut": 0, "seed": None, "shuffled_version": None,
                                              "cut_version": None, "revealed_version": None})
        if kind == "ShoeCut":
            shoe["cut"], shoe["cut_version"] = e.position, e.originator_version  # type: ignore[attr-defined]
        else:
            shoe["seed"], shoe["revealed_version"] = e.seed, e.originator_version  # type: ignore[attr-defined]


def _seed_stored(e: TableEvent) -> str:
    """How a shuffle's seed lies in the store: ``sealed`` (service/seeds.py), or ``unsealed`` (in clear, as
    every log written before sealing stores it)."""
    return "sealed" if getattr(e, STORED_SEALED, True) else "unsealed"


def check_shoe(number: int, shoe: dict[str, Any] | None, dealt: list[TableEvent]) -> tuple[bool | None, list[dict[str, Any]]]:
    """One shoe as recorded in the log: its revealed seed against the commitment recorded at its shuffle, and
    every card dealt from it against the shoe recomputed from that seed and the cut. None while unrevealed."""
    if shoe is None or shoe["shuffled_version"] is None:
        uses = [(e.originator_version, e.type) for e in dealt[:1]]
        if shoe is not None:
            uses += [(shoe[k], t) for k, t in (("cut_version", "ShoeCut"), ("revealed_version", "ShoeRevealed")) if shoe[k]]
        version, kind = min(uses)
        return False, [at("cards", version, f"shoe {number} is used at version {version} ({kind}), but the log "
                                            "never shuffled it", kind)]
    if shoe["seed"] is None:
        return None, []
    revealed, shuffled = shoe["revealed_version"], shoe["shuffled_version"]
    try:
        seed = bytes.fromhex(shoe["seed"])
    except (TypeError, ValueError):
        return False, [at("cards", revealed, f"shoe {number}: the seed revealed at version {revealed}, "
                                             f"{shoe['seed']!r}, is not hexadecimal", "ShoeRevealed")]
    hashed = hashlib.sha256(seed).hexdigest()
    if hashed != shoe["commitment"]:
        return False, [at("cards", revealed, f"shoe {number}: the seed revealed at version {revealed} hashes to "
                                             f"{hashed}, the commitment recorded at version {shuffled} is "
                                             f"{shoe['commitment']}", "ShoeRevealed")]
    if shoe["algorithm"] != ALGORITHM:
        return False, [at("cards", shuffled, f"shoe {number} names the algorithm {shoe['algorithm']!r}; "
                                             f"the only one is {ALGORITHM}", "ShoeShuffled")]
    try:
        order = shoe_order(seed, shoe["decks"], shoe["cut"])
    except (TypeError, ValueError) as exc:
        return False, [at("cards", shuffled, f"shoe {number} cannot be recomputed from its seed, its decks "
                                             f"({shoe['decks']!r}) and its cut ({shoe['cut']!r}): {exc}", "ShoeShuffled")]
    for e in dealt:
        position = e.position  # type: ignore[attr-defined]
        truth = order[position] if isinstance(position, int) and 0 <= position < len(order) else "nothing"
        if truth != e.card:  # type: ignore[attr-defined]
            cut = f"cut at version {shoe['cut_version']}" if shoe["cut_version"] else "not cut"
            return False, [at("cards", e.originator_version,
                              f"{e.card} recorded at position {position} of shoe {number}; the shoe "  # type: ignore[attr-defined]
                              f"recomputed from the seed revealed at version {revealed} ({cut}) has {truth} there",
                              e.type)]
    return True, []


def by_number(number: Any) -> tuple[bool, str, Any]:
    """Shoe numbers in order; an altered one of another kind sorts last instead of failing the sort."""
    whole = isinstance(number, int)
    return (not whole, "" if whole else repr(number), number if whole else 0)


def check_cards(events: list[TableEvent], shoes: dict[int, dict[str, Any]]) -> tuple[bool | None, list[dict[str, Any]]]:
    """Each CardDealt against its shoe recomputed from the revealed seed; None while a shoe is unrevealed.
    ``shoes`` are records read from the log (ShoeLog, or the round audit's reads)."""
    dealt: dict[int, list[TableEvent]] = {}
    for e in events:
        if e.type == "CardDealt":
            dealt.setdefault(e.shoe, []).append(e)  # type: ignore[attr-defined]
    results, problems = [], []
    for number in sorted(dealt, key=by_number):
        ok, found = check_shoe(number, shoes.get(number), dealt[number])
        results.append(ok)
        problems += found
    if False in results:
        return False, problems
    return (None if None in results else True), problems
