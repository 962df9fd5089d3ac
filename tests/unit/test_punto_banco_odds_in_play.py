"""Play lands on the odds: coups dealt by the punto banco table itself, from fairly shuffled, cut and burned
8-deck shoes, give banker, player and tie wins in the shares scripts/odds works out exactly (punto banco's draws
are Chemin de fer's classic rule with every free choice drawn, which is what scripts/odds enumerates)."""

from __future__ import annotations

import math
from collections import Counter

from domain.punto_banco import rules as R
from domain.punto_banco.table import PuntoBancoTable
from tests.helpers import Seeds, StepClock, load_script

COUPS = 20_000
SPOTS = {"banker": R.BANKER, "punter": R.PLAYER, "tie": R.TIE}  # scripts/odds names the player's hand "punter"


def outcomes_in_play(coups: int, seed: int) -> Counter[str]:
    clock, seeds = StepClock(), Seeds(seed)
    table = PuntoBancoTable.open(["marta", "anna"], {"decks": 8}, clock(), croupier="marta")
    seen: Counter[str] = Counter()
    cut = 0
    while sum(seen.values()) < coups:
        if table.phase == "shuffle":
            table.handle("shuffle", "marta", {}, clock(), seeds, new_salt=seeds.salt)
            cut = cut % 400 + 7
            table.handle("cut", "anna", {"position": cut}, clock(), seeds, new_salt=seeds.salt)
        table.handle("place_stake", "anna", {"spot": "tie", "amount": 20}, clock(), seeds, new_salt=seeds.salt)
        table.handle("close_stakes", "marta", {}, clock(), seeds, new_salt=seeds.salt)
        table.handle("deal", "marta", {}, clock(), seeds, new_salt=seeds.salt)
        seen[table.result["outcome"]] += 1
        table.collect_events()
    return seen


def test_outcomes_of_20000_coups_dealt_by_the_table_match_the_exact_odds_within_four_standard_errors():
    odds = load_script("odds", "odds_for_punto_banco").coup_probabilities(8, "classic")
    exact = {SPOTS[name]: float(p) for name, p in odds.items()}
    assert round(exact[R.BANKER], 6) == 0.458597 and round(exact[R.PLAYER], 6) == 0.446247
    seen = outcomes_in_play(COUPS, seed=20)
    for outcome, p in exact.items():
        share = seen[outcome] / COUPS
        error = math.sqrt(p * (1 - p) / COUPS)
        assert abs(share - p) < 4 * error, f"{outcome}: {share:.4f} in play, {p:.4f} exactly (4 SE = {4 * error:.4f})"
