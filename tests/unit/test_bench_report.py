"""The arithmetic and tables of the benchmarks' reports (scripts/_bench.py): percentiles, medians over rounds,
the rotation of configurations between rounds, and the targets with their verdicts."""

from __future__ import annotations

import pytest

from tests.helpers import load_script

bench = load_script("_bench.py", "zametano_bench_report")


def test_percentile_interpolates_between_the_two_nearest_ranks() -> None:
    samples = [4.0, 1.0, 3.0, 2.0]  # order does not matter
    assert bench.percentile(samples, 50) == 2.5
    assert bench.percentile(samples, 0) == 1.0
    assert bench.percentile(samples, 100) == 4.0
    assert bench.percentile(list(range(1, 102)), 95) == 96.0
    assert bench.percentile([7.0], 95) == 7.0


def test_percentile_of_nothing_or_outside_0_to_100_is_refused() -> None:
    with pytest.raises(ValueError, match="no samples"):
        bench.percentile([], 50)
    with pytest.raises(ValueError, match="0 to 100"):
        bench.percentile([1.0], 101)


def test_median_over_rounds_leaves_out_the_rounds_that_measured_nothing() -> None:
    assert bench.median_of([3.0, None, 1.0, 2.0]) == 2.0
    assert bench.median_of([160.0, 150.0, 171.0, 152.0]) == 156.0
    assert bench.median_of([None, None]) is None
    assert bench.median_of([]) is None


def test_each_round_runs_every_configuration_once_from_a_different_start() -> None:
    names = [f"c{i}" for i in range(16)]
    orders = [bench.rotated(names, r, 3) for r in range(3)]
    assert all(sorted(order) == sorted(names) for order in orders)
    assert [order[0] for order in orders] == ["c0", "c5", "c10"]
    assert orders[1][-1] == "c4"  # the order wraps round: what came before the start runs last
    assert bench.rotated(names, 0, 1) == names
    assert bench.rotated([], 2, 3) == []


def test_a_target_of_at_least_is_met_from_the_bound_up() -> None:
    below = bench.Target("HTTP / library: commands/s", 160.0, 290.0, 1.0, True)
    assert f"{below.ratio:.2f}" == "0.55"
    assert below.verdict == "not met"
    assert bench.Target("same", 290.0, 290.0, 1.0, True).verdict == "met"
    assert bench.Target("above", 330.0, 290.0, 1.0, True).verdict == "met"


def test_a_target_of_at_most_is_met_up_to_the_bound_as_printed() -> None:
    assert bench.Target("audit", 14.0, 28.0, 0.5, False, "ms").verdict == "met"
    assert bench.Target("audit", 14.5, 28.0, 0.5, False, "ms").verdict == "not met"
    # 1.004 prints as 1.00: a ratio shown as the bound is never called "not met"
    assert bench.Target("cpu", 8.032, 8.0, 1.0, False, "ms").verdict == "met"


def test_a_target_without_a_measurement_or_a_reference_says_which() -> None:
    assert bench.Target("not run", None, 290.0, 1.0, True).verdict == "not measured"
    assert bench.Target("first run", 120.0, None, 1.0, True, missing="no reference yet").verdict == "no reference yet"
    assert bench.Target("zero reference", 120.0, 0.0, 1.0, True).ratio is None


def test_the_targets_table_shows_each_comparison_with_its_ratio_target_and_verdict() -> None:
    table = bench.targets_table([
        bench.Target("HTTP 4 workers / library 4 processes: commands/s", 160.0, 1384.0, 1.0, True),
        bench.Target("round audit p50 / the earlier 28 ms", 14.0, 28.0, 0.5, False, "ms"),
        bench.Target("SQLite / reference: commands/s", None, None, 1.0, True),
    ])
    assert table.splitlines() == [
        "| comparison | measured | reference | ratio | target | verdict |",
        "| --- | ---: | ---: | ---: | ---: | --- |",
        "| HTTP 4 workers / library 4 processes: commands/s | 160 | 1,384 | 0.12 | >= 1 | not met |",
        "| round audit p50 / the earlier 28 ms | 14.00 ms | 28.00 ms | 0.50 | <= 0.5 | met |",
        "| SQLite / reference: commands/s | - | - | - | >= 1 | not measured |",
    ]


def test_a_markdown_table_aligns_text_left_and_numbers_right_and_refuses_a_ragged_row() -> None:
    assert bench.markdown_table(["name", "ms"], [["a", "1.00"]]).splitlines() == [
        "| name | ms |", "| --- | ---: |", "| a | 1.00 |"]
    with pytest.raises(ValueError, match="a row of 1 cells in a table of 2 columns"):
        bench.markdown_table(["name", "ms"], [["a"]])
    with pytest.raises(ValueError, match="3 alignments for 2 columns"):
        bench.markdown_table(["name", "ms"], [], align="lrr")


def test_a_figure_not_measured_is_a_dash_and_others_are_grouped_by_thousands() -> None:
    assert bench.number(None) == "-"
    assert bench.number(1234.567, 0) == "1,235"
    assert bench.number(8.25, 2) == "8.25"
