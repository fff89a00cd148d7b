"""Statistics of redis_benchmarks_spec.analysis.stats against scipy and hand-checked values."""

from __future__ import annotations

import itertools
import math

import numpy as np
import pytest
from scipy import stats as sps

from redis_benchmarks_spec.analysis import stats


def _brute_mwu_cdf(u: int, m: int, n: int) -> float:
    """P(U <= u) by enumerating every placement of m x-ranks among m + n."""
    total = hits = 0
    for xs in itertools.combinations(range(m + n), m):
        ranks = set(xs)
        # U for x = pairs (x, y) with x above y
        stat = sum(sum(1 for y in range(m + n) if y not in ranks and y < x) for x in xs)
        total += 1
        hits += stat <= u
    return hits / total


def _brute_signed_rank_cdf(t: int, n: int) -> float:
    sums = [sum(r for r, s in zip(range(1, n + 1), signs, strict=True) if s)
            for signs in itertools.product([0, 1], repeat=n)]
    return sum(s <= t for s in sums) / len(sums)


@pytest.mark.parametrize(("m", "n"), [(2, 3), (4, 5), (3, 3)])
def test_mwu_cdf_matches_enumeration(m: int, n: int) -> None:
    for u in range(-1, m * n + 1):
        assert stats.mwu_cdf(u, m, n) == pytest.approx(_brute_mwu_cdf(u, m, n))


@pytest.mark.parametrize("n", [1, 4, 7])
def test_signed_rank_cdf_matches_enumeration(n: int) -> None:
    for t in range(-1, n * (n + 1) // 2 + 1):
        assert stats.signed_rank_cdf(t, n) == pytest.approx(_brute_signed_rank_cdf(t, n))


def test_unpaired_interval_uses_r_order_statistics() -> None:
    # R: qwilcox(0.025, 10, 10) == 24, interval = diffs[24], diffs[77]
    rng = np.random.default_rng(1)
    b = rng.lognormal(0, 0.1, 10)
    c = rng.lognormal(0.05, 0.1, 10)
    est = stats.unpaired_shift(b, c)
    diffs = np.sort(np.subtract.outer(np.log(c), np.log(b)).ravel())
    assert est.low == pytest.approx(diffs[23])
    assert est.high == pytest.approx(diffs[100 - 24])
    assert est.estimate == pytest.approx(np.median(diffs))
    assert est.p_value == pytest.approx(sps.mannwhitneyu(c, b).pvalue)


def test_unpaired_shift_exact_for_pure_scaling() -> None:
    b = [100.0, 101.0, 99.0, 102.0, 98.0, 100.5, 99.5]
    c = [v * 0.9 for v in b]
    est = stats.unpaired_shift(b, c)
    assert stats.log_to_pct(est.estimate) == pytest.approx(-10.0)
    assert est.high < 0


def test_unpaired_too_small_for_interval_is_unbounded() -> None:
    est = stats.unpaired_shift([100.0, 101.0, 99.0], [90.0])
    assert not est.bounded
    assert math.isinf(est.low) and math.isinf(est.high)


def test_paired_interval_walsh_order_statistics() -> None:
    # n = 10: exact signed-rank critical value 8 (P(T+ <= 8) = 0.0244), so k = 9
    assert stats.signed_rank_cdf(8, 10) <= 0.025 < stats.signed_rank_cdf(9, 10)
    rng = np.random.default_rng(2)
    b = rng.lognormal(0, 0.05, 10)
    c = b * rng.lognormal(0.02, 0.01, 10)
    est = stats.paired_shift(list(zip(b, c, strict=True)))
    r = np.log(c / b)
    walsh = np.sort([(r[i] + r[j]) / 2 for i in range(10) for j in range(i, 10)])
    assert est.low == pytest.approx(walsh[8])
    assert est.high == pytest.approx(walsh[55 - 9])
    assert est.p_value == pytest.approx(sps.wilcoxon(r).pvalue)


def test_paired_interval_tighter_with_shared_drift() -> None:
    rng = np.random.default_rng(3)
    drift = rng.lognormal(0, 0.10, 12)          # machine drift shared inside a pair
    b = 1000 * drift * rng.lognormal(0, 0.01, 12)
    c = 1000 * drift * rng.lognormal(math.log(0.97), 0.01, 12)
    paired = stats.paired_shift(list(zip(b, c, strict=True)))
    unpaired = stats.unpaired_shift(b, c)
    assert paired.high - paired.low < (unpaired.high - unpaired.low) / 3
    assert paired.high < 0  # the 3 % drop is resolved only by pairing
    assert unpaired.low < 0 < unpaired.high


def test_unpaired_interval_coverage_near_nominal() -> None:
    rng = np.random.default_rng(4)
    true = math.log(1.05)
    covered = 0
    for _ in range(300):
        b = rng.lognormal(0, 0.1, 8)
        c = rng.lognormal(true, 0.1, 8)
        est = stats.unpaired_shift(b, c)
        covered += est.low <= true <= est.high
    assert 0.91 <= covered / 300 <= 0.99


def test_bh_known_vector() -> None:
    p = [0.01, 0.04, 0.03, 0.005, 0.5]
    # sorted: .005 .01 .03 .04 .5 -> *5/rank: .025 .025 .05 .05 .5 (monotone from the top)
    assert stats.bh_adjust(p) == pytest.approx([0.025, 0.05, 0.05, 0.025, 0.5])
    assert stats._bh_from_definition(np.array(p)).tolist() == pytest.approx(
        [0.025, 0.05, 0.05, 0.025, 0.5])


def test_bh_keeps_nan_out_of_the_family() -> None:
    out = stats.bh_adjust([0.01, math.nan, 0.02])
    assert math.isnan(out[1])
    assert out[0] == pytest.approx(0.02) and out[2] == pytest.approx(0.02)


def test_cv_and_robust_sd() -> None:
    assert stats.cv([1.0]) is None
    assert stats.cv([9.0, 11.0]) == pytest.approx(math.sqrt(2) / 10)
    assert stats.robust_sd([1.0, 2.0, 3.0, 4.0, 100.0]) == pytest.approx(1.4826)


def test_wilcoxon_all_zero_is_one() -> None:
    assert stats.wilcoxon_p([0.0, 0.0, 0.0]) == 1.0


def test_runs_needed_scales_inverse_square() -> None:
    assert stats.runs_needed(10, half_width=4.0, target=2.0) == 40
    assert stats.runs_needed(10, half_width=40.0, target=1.0) == 200
    assert stats.runs_needed(10, half_width=1.0, target=2.0) == 11


def test_log_values_must_be_positive() -> None:
    with pytest.raises(ValueError):
        stats.unpaired_shift([0.0, 1.0], [1.0, 2.0])
