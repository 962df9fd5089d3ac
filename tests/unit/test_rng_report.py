"""scripts/rng-report: its statistics are right, it shuffles as the service does, the service's shuffle passes it
and each deliberately broken shuffle fails it (small forms: a few hundred shoes; docs/fairness.md has the long
runs). Seeds are the tests' own, from a counter, so each run of a test gives the same report."""

from __future__ import annotations

import array
import functools
import hashlib
import io
import itertools
import json
import math
import secrets
from pathlib import Path

import pytest

from domain import shuffle
from domain.cards import new_deck
from tests.helpers import load_script
from tests.served import serving

rr = load_script("rng-report", "zametano_rng_report")
SMALL = {"small_per_order": 20, "raw_words": 2**16}


@pytest.fixture(autouse=True)
def counted_seeds(monkeypatch: pytest.MonkeyPatch) -> None:
    """Seeds from a counter instead of the operating system: the same shoes at every run."""
    counter = itertools.count()
    monkeypatch.setattr(rr, "new_seed", lambda: hashlib.sha256(b"rng-report-tests-%d" % next(counter)).digest())


def the_report(shoes: int, decks: int, control: str = "service") -> dict:
    return rr.run_report(shoes, decks, control, **SMALL)


# --- the statistics ---------------------------------------------------------------------------------------


@pytest.mark.parametrize("x", [0.0, 0.01, 0.5, 1.0, 3.0, 10.0, 40.0, 200.0, 1400.0])
def test_chi_square_p_values_match_the_closed_forms_of_one_two_and_four_degrees_of_freedom(x: float) -> None:
    assert rr.chi2_sf(x, 1) == pytest.approx(math.erfc(math.sqrt(x / 2)), rel=1e-9, abs=1e-300)
    assert rr.chi2_sf(x, 2) == pytest.approx(math.exp(-x / 2), rel=1e-9, abs=1e-300)
    assert rr.chi2_sf(x, 4) == pytest.approx(math.exp(-x / 2) * (1 + x / 2), rel=1e-9, abs=1e-300)


@pytest.mark.parametrize("df, quantile", [(3, 11.3449), (10, 23.2093), (100, 135.807), (1000, 1106.969)])
def test_chi_square_p_values_are_one_percent_at_the_tables_99_percent_points(df: int, quantile: float) -> None:
    assert rr.chi2_sf(quantile, df) == pytest.approx(0.01, rel=1e-3)


@pytest.mark.parametrize("df", [100, 415, 2703, 21165])
def test_chi_square_p_values_of_many_degrees_of_freedom_are_near_a_half_at_the_mean_and_tail_off(df: int) -> None:
    # The median of a chi-square lies a little below its mean: P(X >= df) is a little under one half.
    assert 0.45 < rr.chi2_sf(df, df) < 0.5
    assert rr.gamma_p(df / 2, df / 3) + rr.gamma_q(df / 2, df / 3) == pytest.approx(1.0)
    assert rr.chi2_sf(50 * df, df) < 1e-100


def test_poisson_and_binomial_tails_are_the_sums_of_their_terms() -> None:
    mean = 2.5
    direct = 1 - sum(math.exp(-mean) * mean**k / math.factorial(k) for k in range(4))
    assert rr.poisson_at_least(4, mean) == pytest.approx(direct, rel=1e-9)
    direct = sum(math.comb(480, k) * 0.01**k * 0.99 ** (480 - k) for k in range(9, 481))
    assert rr.binomial_at_least(9, 480, 0.01) == pytest.approx(direct, rel=1e-9)
    assert rr.binomial_at_least(0, 480, 0.01) == rr.poisson_at_least(0, mean) == 1.0


def test_rare_values_are_counted_together_so_that_each_cell_is_expected_five_times() -> None:
    assert rr.bins_for(52, 52 * 5) == 52
    assert rr.bins_for(416, 300) == 416 // 7  # 300 shoes: runs of 7 values, each expected 5.05 times
    assert rr.grouped([1, 2, 3, 4, 5], 2) == [6, 9]


# --- shuffled as the service shuffles ----------------------------------------------------------------------


def test_the_raw_stream_is_the_words_the_shuffle_reads_in_this_machines_byte_order() -> None:
    seed = secrets.token_bytes(32)
    words = array.array("I")
    words.frombytes(rr.stream_blocks(seed, 60))
    if words.itemsize == 4 and array.array("I", [1]).tobytes()[0] == 1:  # little-endian: the blocks are big-endian
        words.byteswap()
    assert list(words) == list(itertools.islice(shuffle._stream(seed), 480))

    out = io.BytesIO()
    assert rr.write_raw(out, 5000, 8) == 5000
    written = array.array("I")
    written.frombytes(out.getvalue()[: 416 * 4])  # the first shoe's 52 blocks, from the counter's first seed
    seed_0 = hashlib.sha256(b"rng-report-tests-0").digest()
    assert list(written) == list(itertools.islice(shuffle._stream(seed_0), 416))


def test_a_shoe_of_the_report_is_the_services_shoe_and_its_draws_are_the_shuffles_own() -> None:
    seed = hashlib.sha256(b"one shoe of the report").digest()
    order = shuffle.permutation(seed, 416)
    assert [new_deck(8)[i] for i in order] == shuffle.shuffled(seed, 8)
    words = shuffle._stream(seed)
    assert rr.draws_of(order) == [shuffle.draw_index(words, n) for n in range(416, 1, -1)]


def test_an_index_is_drawn_by_rejecting_the_words_above_the_last_multiple_of_n() -> None:
    assert shuffle.draw_index(iter([2**32 - 1, 5]), 3) == 2  # 2**32 - 1 is past 3 * 1431655765: read the next
    assert shuffle.draw_index(iter([2**32 - 2, 5]), 3) == (2**32 - 2) % 3


def test_far_beyond_any_shoe_the_draw_stays_uniform_where_u_mod_n_alone_would_fail() -> None:
    assert rr.large_n_test(shuffle.draw_index, 6000).passed
    plain = rr.large_n_test(lambda words, n: next(words) % n, 6000)
    assert not plain.passed and plain.p_value < 1e-50


def test_the_games_are_played_to_their_stop_cards() -> None:
    shoe = shuffle.shuffled(hashlib.sha256(b"a shoe played").digest(), 8)
    outcomes = rr.punto_banco_outcomes(shoe)
    winners = rr.chemin_de_fer_winners(shoe)
    assert 60 < len(outcomes) < 90 and set(outcomes) <= {"player", "banker", "tie"}
    assert 60 < len(winners) < 90 and set(winners) <= {"punter", "banker", "tie"}
    assert rr.runs_deviation(["banker", "tie", "banker", "player"], "banker", "player") == (2 - (1 + 4 / 3), 1 + 4 / 3)


# --- the service passes, each broken shuffle fails ----------------------------------------------------------


def test_the_services_shuffle_passes_the_report_with_about_the_expected_failures() -> None:
    report = the_report(300, 8)
    assert report["verdict"] == "pass", report["reasons"]
    assert report["tests_run"] > 450 and report["failures"] <= 3 * report["expected_failures"] + 3
    rendered = rr.render(report)
    assert "Verdict: PASS" in rendered and "position: all cards" in rendered


def failed_families(report: dict) -> set[str]:
    return {t["family"] for t in report["tests"] if t["overall"] and not t["passed"]}


def test_a_modulo_bias_fails_the_report_at_the_scaling_step() -> None:
    report = the_report(300, 8, "modulo-bias")
    assert report["verdict"] == "fail"
    assert "scaling" in failed_families(report)


def test_an_off_by_one_fisher_yates_fails_the_report() -> None:
    report = the_report(300, 1, "off-by-one")
    assert report["verdict"] == "fail"
    assert {"permutations", "scaling"} <= failed_families(report)


def test_a_reused_seed_fails_the_report_by_its_repeated_shoes() -> None:
    report = the_report(300, 1, "reused-seed")
    assert report["verdict"] == "fail"
    assert {"repeats", "position"} <= failed_families(report)
    assert next(t for t in report["tests"] if t["family"] == "repeats")["statistic"] == 150


def test_the_json_report_names_each_tests_statistic_df_p_value_and_result(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(rr, "run_report", functools.partial(rr.run_report, **SMALL))
    code = rr.main(["--shoes", "40", "--decks", "1", "--json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert code == (0 if report["verdict"] == "pass" else 1)
    assert report["expected_failures"] == pytest.approx(0.01 * report["tests_run"])
    assert {"family", "name", "statistic", "df", "p_value", "passed", "note"} <= set(report["tests"][0])


def test_raw_writes_the_bytes_asked_for(tmp_path: Path) -> None:
    target = tmp_path / "raw.bin"
    assert rr.main(["--raw", str(target), "--bytes", "100000", "--quiet"]) == 0
    assert target.stat().st_size == 100000


@pytest.mark.parametrize("argv", [["--raw", "x.bin"], ["--bytes", "10"], ["--from", "h:1", "--shuffle", "off-by-one"]])
def test_arguments_that_do_not_go_together_are_refused(argv: list[str]) -> None:
    with pytest.raises(SystemExit) as exited:
        rr.main(argv)
    assert exited.value.code == 2


# --- the revealed shoes of a running service ---------------------------------------------------------------


def test_from_a_service_every_revealed_shoe_is_recomputed_from_its_seed_and_tested(
    store: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    vs = rr.load_verify_shoe()
    with serving(store) as base:
        revealed = []
        for table in rr.table_ids(vs, base, None, 30):
            revealed += [e for e in vs.fetch_events(f"{base}/tables/{table}") if e["type"] == "ShoeRevealed"]
        code = rr.main(["--from", base.removeprefix("http://"), "--json", "--quiet"])
    report = json.loads(capsys.readouterr().out)
    assert revealed and report["revealed_shoes"] == len(revealed)
    assert report["shoes"] + sum(report["left_out_by_decks"].values()) == len(revealed)
    assert report["problems"] == [] and code in (0, 1)


def test_from_nothing_that_answers_is_a_usage_or_network_error(capsys: pytest.CaptureFixture[str]) -> None:
    assert rr.main(["--from", "http://127.0.0.1:9", "--quiet", "--timeout", "2"]) == 2
    assert "rng-report: error:" in capsys.readouterr().err

