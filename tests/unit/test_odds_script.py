"""scripts/odds: exact Chemin de fer odds worked out from the domain's own rule functions."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from fractions import Fraction
from pathlib import Path
from types import ModuleType

import pytest

from domain.chemin_de_fer import rules
from tests.helpers import load_script

ROOT = Path(__file__).resolve().parents[2]
SCRIPT = ROOT / "scripts" / "odds"

# Punto banco (the classic tableau with every free choice drawn), published to six decimals.
PUNTO_BANCO = {
    8: {"banker": "0.458597", "punter": "0.446247", "tie": "0.095156"},
    6: {"banker": "0.458653", "punter": "0.446279", "tie": "0.095069"},
}


@pytest.fixture(scope="module")
def odds() -> ModuleType:
    return load_script("odds", "odds_script")


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [sys.executable, str(SCRIPT), *args], cwd=ROOT, capture_output=True, text=True, timeout=120
    )


def test_script_is_an_executable_python3_script() -> None:
    assert SCRIPT.read_text().startswith("#!/usr/bin/env python3\n")
    assert os.access(SCRIPT, os.X_OK)


@pytest.mark.parametrize("decks", [1, 2, 8, 12])
@pytest.mark.parametrize("draw_rule", ["classic", "free"])
def test_probabilities_are_exact_and_sum_to_one(odds: ModuleType, decks: int, draw_rule: str) -> None:
    p = odds.coup_probabilities(decks, draw_rule)
    assert set(p) == {"banker", "punter", "tie"}
    assert all(isinstance(v, Fraction) and 0 < v < 1 for v in p.values())
    assert sum(p.values()) == 1


@pytest.mark.parametrize("decks", sorted(PUNTO_BANCO))
def test_classic_rule_drawing_on_free_choices_is_punto_banco(odds: ModuleType, decks: int) -> None:
    p = odds.coup_probabilities(decks, "classic")
    assert {k: odds.six_places(v) for k, v in p.items()} == PUNTO_BANCO[decks]


def test_free_rule_differs_from_classic(odds: ModuleType) -> None:
    classic = odds.coup_probabilities(8, "classic")
    free = odds.coup_probabilities(8, "free")
    assert free != classic
    assert classic["banker"] > classic["punter"]
    # Drawing every time, both hands are dealt alike: neither side has an edge.
    assert free["banker"] == free["punter"]


def test_output_follows_the_rules_module(odds: ModuleType, monkeypatch: pytest.MonkeyPatch) -> None:
    assert Path(odds.rules.__file__).resolve() == Path(rules.__file__).resolve()  # the domain's own file
    before = odds.coup_probabilities(2, "classic")
    monkeypatch.setattr(odds.rules, "punter_choice", lambda total, draw_rule: rules.STAND)
    after = odds.coup_probabilities(2, "classic")
    assert after != before
    assert sum(after.values()) == 1


def test_money_view(odds: ModuleType) -> None:
    p = {"banker": Fraction(1, 2), "punter": Fraction(2, 5), "tie": Fraction(1, 10)}
    money = odds.money_view(p, Fraction(5))
    assert money == {
        "punter": Fraction(-1, 10),
        "banker": Fraction(95, 100) * Fraction(1, 2) - Fraction(2, 5),
        "house": Fraction(1, 40),
    }


def test_six_places_rounds_exactly(odds: ModuleType) -> None:
    assert odds.six_places(Fraction(1, 3)) == "0.333333"
    assert odds.six_places(Fraction(2, 3)) == "0.666667"
    assert odds.six_places(Fraction(-1, 8)) == "-0.125000"
    assert odds.six_places(Fraction(1, 8), signed=True) == "+0.125000"
    assert odds.six_places(Fraction(-1, 10**9), signed=True) == "0.000000"


def test_script_prints_the_table() -> None:
    result = run("--decks", "2", "--commission", "5")
    assert result.returncode == 0, result.stderr
    lines = result.stdout.splitlines()
    header = lines[0]
    assert "2 decks" in header and "classic" in header and "resolved as draw" in header
    rows = {}
    for line in lines[1:]:
        label, _, value = line.rpartition(" ")
        rows[label.strip()] = value
    for label in ("Banker wins", "Punter wins", "Tie"):
        assert len(rows[label].split(".")[1]) == 6
    total = sum(Fraction(rows[label]) for label in ("Banker wins", "Punter wins", "Tie"))
    assert abs(total - 1) <= Fraction(3, 10**6)  # three values rounded to six places
    assert Fraction(rows["Punter expected result per unit staked"]) < 0
    assert Fraction(rows["House edge (commission per unit staked)"]) > 0


def test_script_takes_the_draw_rule() -> None:
    classic = run("--decks", "2", "--draw-rule", "classic")
    free = run("--decks", "2", "--draw-rule", "free")
    assert classic.returncode == free.returncode == 0
    assert "draw rule free" in free.stdout.splitlines()[0]
    assert classic.stdout.splitlines()[3:6] != free.stdout.splitlines()[3:6]


@pytest.mark.parametrize("args", [["--decks", "0"], ["--decks", "13"], ["--decks", "two"]])
def test_bad_decks_is_refused_with_the_range(args: list[str]) -> None:
    result = run(*args)
    assert result.returncode != 0
    assert "from 1 to 12" in result.stderr
    assert result.stdout == ""


def test_bad_commission_and_draw_rule_are_refused() -> None:
    assert run("--decks", "2", "--commission", "-1").returncode != 0
    # a table's commission_percent is 0 to 50: the odds of a table that cannot be opened are not given
    above = run("--decks", "2", "--commission", "51")
    assert above.returncode == 2 and "from 0 to 50" in above.stderr
    assert run("--decks", "2", "--commission", "50").returncode == 0
    assert run("--decks", "2", "--draw-rule", "loose").returncode != 0
    assert run().returncode != 0


def test_solve_reproduces_kemeny_and_snell_for_the_infinite_shoe_free_game() -> None:
    result = run("--solve", "--decks", "inf", "--rule", "free", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["decks"] == "inf" and answer["rule"] == "free"
    assert Fraction(answer["punter"]["5"]) == Fraction(9, 11)
    assert round(answer["value_float"], 4) == 0.0128
    assert float(Fraction(answer["value"])) == answer["value_float"]
    # The free rule lets both sides choose on 0-7: every such cell is listed.
    assert list(answer["punter"]) == [str(t) for t in range(8)]
    assert list(answer["banker"]) == [str(t) for t in range(8)]
    assert all(list(row) == ["stood", *map(str, range(10))] for row in answer["banker"].values())
    assert answer["banker"]["6"]["stood"] not in ("0", "1")  # the banker's mixed cell


def test_solve_lists_only_the_cells_the_classic_rule_leaves_free() -> None:
    result = run("--solve", "--decks", "8", "--json")
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)
    assert answer["punter"] == {"5": "1"}
    assert answer["banker"] == {"3": {"9": "1"}, "5": {"4": "1"}}
    assert answer["decks"] == 8 and answer["rule"] == "classic"


def test_solve_prints_the_solution_as_text() -> None:
    result = run("--solve", "--decks", "inf", "--rule", "free")
    assert result.returncode == 0, result.stderr
    assert "5: 9/11 (0.818182)" in result.stdout
    assert "Value, the banker's expected gain per unit staked: 679568/53094899 = +0.012799" in result.stdout
    assert "Checked exactly: neither side gains by changing its play in any one cell." in result.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--decks", "inf"], "inf is only for --solve"),
        (["--decks", "2", "--json"], "only with --solve"),
        (["--decks", "2", "--solve", "--commission", "5"], "solved without commission"),
    ],
)
def test_solve_options_out_of_place_are_refused(args: list[str], message: str) -> None:
    result = run(*args)
    assert result.returncode != 0 and message in result.stderr and result.stdout == ""


# Each punto banco spot's house edge as docs/rules/punto-banco.md publishes it (commission 5%).
PUBLISHED_EDGES = {
    (8, 8): {"banker": "0.010579", "player": "0.012351", "tie": "0.143596"},
    (6, 8): {"banker": "0.010558", "player": "0.012374", "tie": "0.144382"},
    (8, 9): {"tie": "0.048440"},
    (6, 9): {"tie": "0.049313"},
}


@pytest.mark.parametrize(("decks", "tie_pays"), sorted(PUBLISHED_EDGES))
def test_punto_banco_spot_edges_agree_with_the_chemin_de_fer_enumeration(
    odds: ModuleType, decks: int, tie_pays: int
) -> None:
    """domain/punto_banco/edges.py enumerates with punto banco's own rules and settles with its own
    settle_stake; scripts/odds enumerates Chemin de fer's classic rule with every free choice drawn (the
    same draws). Both give the same edges, exactly, and so to 6 decimals."""
    from domain.punto_banco import edges

    edges_now = edges.spot_edges({"decks": decks, "commission_percent": 5, "tie_pays": tie_pays})
    p = odds.coup_probabilities(decks, "classic")
    money = odds.money_view(p, Fraction(5))
    from_odds = {
        "banker": -money["banker"],
        "player": -money["punter"],
        "tie": -(tie_pays * p["tie"] - (1 - p["tie"])),
    }
    assert edges_now == from_odds
    assert {spot: odds.six_places(edges_now[spot]) for spot in from_odds} == {
        spot: odds.six_places(value) for spot, value in from_odds.items()
    }
    assert {spot: odds.six_places(edges_now[spot]) for spot in PUBLISHED_EDGES[decks, tie_pays]} == (
        PUBLISHED_EDGES[decks, tie_pays]
    )
    assert edges.outcome_probabilities(decks) == {"player": p["punter"], "banker": p["banker"], "tie": p["tie"]}


def test_punto_banco_edges_follow_the_commission() -> None:
    from domain.punto_banco import edges

    none = edges.spot_edges({"decks": 8, "commission_percent": 0, "tie_pays": 8})
    five = edges.spot_edges({"decks": 8, "commission_percent": 5, "tie_pays": 8})
    p = edges.outcome_probabilities(8)
    assert none["banker"] == -(p["banker"] - p["player"]) < 0  # without commission the banker spot wins
    assert five["banker"] - none["banker"] == Fraction(5, 100) * p["banker"]
    assert five["player"] == none["player"] and five["tie"] == none["tie"]


def test_script_prints_the_punto_banco_spot_edges() -> None:
    result = run("--game", "punto-banco", "--decks", "6", "--tie-pays", "9")
    assert result.returncode == 0, result.stderr
    assert "commission 5%, tie pays 9 to 1" in result.stdout.splitlines()[0]
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines()[3:]}
    assert rows == {
        "player": ["0.446279", "+0.012374"],
        "banker": ["0.458653", "+0.010558"],
        "tie": ["0.095069", "+0.049313"],
    }
    refused = run("--game", "punto-banco", "--decks", "8", "--commission", "2.5")
    assert refused.returncode != 0 and "whole percentage from 0 to 10" in refused.stderr
