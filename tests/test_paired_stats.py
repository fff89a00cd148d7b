"""Paired intervals that decide with 5-6 pairs: floors of the exact tests, the t interval's
checks, A/A false positives and A/B power by simulation at CV 10-15 %."""

from __future__ import annotations

import math

import numpy as np
import pytest
from scipy import stats as sps

from redis_benchmarks_spec.analysis import paired, stats
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    UNKNOWN,
    compare_paired,
)


def _noise(rng: np.random.Generator, kind: str, n: int, cv: float) -> np.ndarray:
    """Multiplicative run noise of several shapes, all with roughly the given CV."""
    if kind == "lognormal":
        return rng.lognormal(0, cv, n)
    if kind == "t3":  # heavy tails
        return np.exp(cv * rng.standard_t(3, n) / math.sqrt(3))
    if kind == "skew":  # right-skewed, as throughput dips are
        return 1 + cv * (rng.gamma(2.0, 1.0, n) - 2.0) / math.sqrt(2)
    assert kind == "outlier"  # one run in ten disturbed by another tenant
    x = rng.lognormal(0, cv, n)
    x[rng.random(n) < 0.1] *= 0.6
    return x


def _pairs(rng: np.random.Generator, kind: str, n: int, cv: float,
           ratio: float = 1.0) -> list[tuple[float, float]]:
    drift = rng.lognormal(0, 0.05, n)  # shared by both runs of a pair
    b = 1e5 * drift * _noise(rng, kind, n, cv)
    c = 1e5 * ratio * drift * _noise(rng, kind, n, cv)
    return list(zip(b.tolist(), c.tolist(), strict=True))


# --- the floors documented in docs/statistics.md --------------------------------------------


def test_signed_rank_floor_is_two_over_two_to_the_n() -> None:
    for n in range(3, 9):
        ratios = -np.arange(1, n + 1, dtype=float)  # every pair worse: the most extreme case
        assert stats.wilcoxon_p(ratios) == pytest.approx(2 / 2 ** n)
    # no 95 % interval below 6 pairs, a bounded one from 6
    five = [(100.0, 50.0 + i) for i in range(5)]
    assert not stats.paired_shift(five).bounded
    assert stats.paired_shift([*five, (100.0, 56.0)]).bounded


def test_mann_whitney_floor() -> None:
    assert stats.mann_whitney_p([1, 2, 3], [4, 5, 6]) == pytest.approx(0.1)
    assert stats.mann_whitney_p([1, 2, 3, 4], [5, 6, 7, 8]) == pytest.approx(2 / 70)


def test_two_tests_minus_65_percent_decided_with_5_and_6_pairs() -> None:
    """The case of the issue: SET with appendfsync always (-65 %) next to an unchanged GET,
    BH over both. The signed-rank floor (0.031 at 6 pairs, x2 for BH) left it UNKNOWN."""
    for n in (5, 6):
        rng = np.random.default_rng(n)
        rep = compare_paired({"set": _pairs(rng, "lognormal", n, 0.12, ratio=0.35),
                              "get": _pairs(rng, "lognormal", n, 0.12)})
        row = {r.test: r for r in rep.rows}
        assert row["set"].verdict == REGRESSION, row["set"].reason
        assert row["set"].method == paired.T_METHOD
        assert row["get"].verdict in (UNKNOWN, "NO CHANGE")
        # the signed-rank p alone could not have passed BH over two tests
        rank_p = stats.wilcoxon_p(paired.log_ratios(_pairs(rng, "lognormal", n, 0.12, 0.35)))
        assert rank_p * 2 > 0.05


def test_t_interval_matches_scipy() -> None:
    pairs = [(100.0, 90.0), (102.0, 95.0), (98.0, 91.0), (101.0, 89.0), (99.0, 93.0)]
    r = np.log([c / b for b, c in pairs])
    shift = paired.t_shift(pairs)
    ci = sps.ttest_1samp(r, 0.0).confidence_interval(0.95)
    assert (shift.low, shift.high) == pytest.approx((ci.low, ci.high))
    assert shift.p_value == pytest.approx(sps.ttest_1samp(r, 0.0).pvalue)


def test_an_outlying_pair_widens_the_interval_and_two_pairs_use_signed_rank() -> None:
    clean = [(100.0, 90.0 + d) for d in (0.1, -0.3, 0.4, -0.2, 0.2, 0.0)]
    assert paired.best_paired_shift(clean).method == paired.T_METHOD
    disturbed = [*clean, (100.0, 40.0)]
    reason = paired.t_assumptions(paired.log_ratios(disturbed))
    assert "Shapiro-Wilk" in reason
    wide = paired.best_paired_shift(disturbed)
    narrow = paired.best_paired_shift(clean)
    # the far pair stays in: the interval is the t interval, named, and wider than without it
    assert wide.method == paired.T_METHOD + paired.OUTLYING
    assert wide.high - wide.low > narrow.high - narrow.low
    # the trimmed mean (the old pick) would have been narrower than the t interval
    trimmed = paired.trimmed_shift(paired.log_ratios(disturbed))
    assert trimmed.high - trimmed.low < wide.high - wide.low
    assert paired.best_paired_shift(clean[:3]).method == paired.T_METHOD
    assert not paired.best_paired_shift(clean[:2]).bounded  # signed rank: no interval


# --- simulations ---------------------------------------------------------------------------


@pytest.mark.parametrize("kind", ["lognormal", "t3", "skew", "outlier"])
def test_a_a_false_positive_rate_at_most_alpha(kind: str) -> None:
    """A/A at CV 13 %: P(p < 0.05) of the chosen method stays at alpha (MC error ~0.007)."""
    rng = np.random.default_rng(["lognormal", "t3", "skew", "outlier"].index(kind))
    sims, hits = 600, 0
    for n in (5, 6, 10):
        for _ in range(sims // 3):
            hits += paired.best_paired_shift(_pairs(rng, kind, n, 0.13)).p_value < 0.05
    assert hits / sims <= 0.05 + 3 * math.sqrt(0.05 * 0.95 / sims)


def test_a_a_verdicts_over_many_tests_flag_nothing() -> None:
    flagged = 0
    for sim in range(4):
        rng = np.random.default_rng(900 + sim)
        rep = compare_paired({f"t{i}": _pairs(rng, "lognormal", 6, 0.12) for i in range(50)})
        flagged += rep.summary[REGRESSION] + rep.summary[IMPROVEMENT]
    assert flagged <= 1  # of 200 null tests


def test_a_b_known_effects_decided_and_covered() -> None:
    """-15 % at CV 10-15 % with 10 pairs: decided in most simulations, interval covers it."""
    rng = np.random.default_rng(31)
    decided = covered = 0
    sims = 100
    for i in range(sims):
        cv = 0.10 + 0.05 * (i % 2)
        rep = compare_paired({"t": _pairs(rng, "lognormal", 10, cv, ratio=0.85)})
        row = rep.rows[0]
        decided += row.verdict == REGRESSION
        assert row.ci_low_pct is not None and row.ci_high_pct is not None
        covered += row.ci_low_pct <= -15.0 <= row.ci_high_pct
    assert decided >= 70
    assert covered >= 88
