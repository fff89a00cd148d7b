"""Pure statistics for baseline-vs-comparison benchmark results.

Every change is measured on the log scale, so a shift of ``d`` means "comparison is
``exp(d)`` times baseline" and converts to a percent change with :func:`log_to_pct`.
Benchmark throughput and latency are positive, right-skewed and multiplicative in their
noise, which the log scale makes roughly symmetric and additive.

Unpaired samples (two independent sets of runs)
    Estimate: the Hodges-Lehmann (HL) shift, the median of all ``m*n`` pairwise differences
    ``log(c_j) - log(b_i)``. Interval: the distribution-free one that inverts the
    Mann-Whitney U test (Bauer 1972, as in R's ``wilcox.test(conf.int=TRUE)``): the
    ``k``-th smallest and ``k``-th largest pairwise differences, ``k`` taken from the
    exact null distribution of U. Chosen over a bootstrap of the ratio of medians because
    with the 5-20 runs per side we have, the bootstrap distribution of a median takes only a
    handful of distinct values and its percentile interval under-covers (it is
    random too, and needs a seed to be reproducible), while the HL interval has guaranteed
    coverage for any continuous shift model, is as efficient as the t-interval under
    normal noise (95 %) and much better with the outliers benchmarks produce, and agrees
    with the Mann-Whitney p-value we report next to it. When the samples are too small for
    any 95 % interval (e.g. 1 vs 7 points) the bounds are infinite and the caller must say
    "can't tell".

Paired samples (interleaved A/B runs, paired by repetition)
    Per pair ``r_i = log(c_i / b_i)``; estimate: the median of the Walsh averages
    ``(r_i + r_j) / 2, i <= j`` (the one-sample HL estimate); interval: the one that
    inverts the Wilcoxon signed-rank test, with ``k`` from its exact null distribution.
    Pairing removes the drift shared by the two runs of a pair, which is what makes it
    tighter than the unpaired interval on a shared machine. Chosen over the t-interval on
    the log ratios because it is correct without assuming normality (only symmetry of the
    per-pair log ratio, which the alternating A B B A order supports), it keeps ~95 % of the
    t-interval's efficiency when the noise *is* normal and is tighter as soon as one
    repetition is disturbed (a single outlier pair inflates the standard deviation, hence
    the whole t-interval, but moves the Walsh-average quantiles very little), and it is
    consistent with the signed-rank p-value reported next to it.

Null distributions are never re-implemented here: the exact CDFs of U and of the
signed-rank statistic come from scipy's own implementation, queried through its public
p-value functions on a synthetic sample built to have a given statistic
(:func:`mwu_cdf`, :func:`signed_rank_cdf`); large samples use scipy's asymptotic method.

False discoveries across tests are controlled with Benjamini-Hochberg (:func:`bh_adjust`).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any, TypeAlias

import numpy as np

from redis_benchmarks_spec.common.lazy import LazyModule

sps: Any = LazyModule("scipy.stats")

#: measurements of one side: a list or a numpy array
Values: TypeAlias = "Sequence[float] | np.ndarray"

#: above these sizes scipy's exact null distributions get slow; use its asymptotic method
EXACT_MWU_MAX_PRODUCT = 2500
EXACT_SIGNED_RANK_MAX_N = 50
#: 1.4826 * MAD estimates the standard deviation of normal data
MAD_TO_SD = 1.4826


@dataclass(frozen=True)
class ShiftEstimate:
    """A location shift on the log scale with its confidence interval and test p-value.

    ``low``/``high`` may be ``-inf``/``inf`` when the samples are too small for an interval
    at the requested confidence. ``p_value`` is NaN when no test is possible.
    """

    estimate: float
    low: float
    high: float
    p_value: float
    method: str
    # where the interval's spread came from (every row says it: issue 39)
    spread_from: str = ""

    @property
    def bounded(self) -> bool:
        """True when both interval bounds are finite."""
        return math.isfinite(self.low) and math.isfinite(self.high)


def log_to_pct(shift: float) -> float:
    """Convert a log-scale shift to a percent change (``log(1.1)`` -> ``10.0``)."""
    if math.isinf(shift):
        return shift
    return (math.exp(shift) - 1.0) * 100.0


def median(values: Values) -> float:
    """Median of a non-empty sequence."""
    return float(np.median(np.asarray(values, dtype=float)))


def cv(values: Values) -> float | None:
    """Coefficient of variation (sample SD / mean), or None with fewer than 2 values."""
    arr = np.asarray(values, dtype=float)
    if arr.size < 2 or arr.mean() == 0:
        return None
    return float(arr.std(ddof=1) / abs(arr.mean()))


def robust_sd(values: Values) -> float:
    """1.4826 * median absolute deviation: an SD estimate that ignores outliers."""
    arr = np.asarray(values, dtype=float)
    return float(MAD_TO_SD * np.median(np.abs(arr - np.median(arr))))


def _logs(values: Values) -> np.ndarray:
    arr = np.asarray(values, dtype=float)
    if arr.size == 0 or np.any(arr <= 0) or not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite and positive for a log-scale comparison")
    return np.log(arr)


def _mwu_sample_with_u(u: int, m: int, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Tie-free samples x (size m), y (size n) whose Mann-Whitney U for x equals ``u``."""
    y = np.arange(n, dtype=float)
    counts, rest = [], u
    for _ in range(m):
        take = min(n, rest)
        counts.append(take)
        rest -= take
    # x_i sits just below y[take] (above exactly `take` y values); tiny offsets break x ties
    x = np.array([c - 0.5 + i * 1e-3 / max(m, 1) for i, c in enumerate(counts)])
    return x, y


def mwu_cdf(u: int, m: int, n: int) -> float:
    """P(U <= u) under the null for sample sizes m, n (scipy's exact or asymptotic law)."""
    if u < 0:
        return 0.0
    if u >= m * n:
        return 1.0
    x, y = _mwu_sample_with_u(u, m, n)
    method = "exact" if m * n <= EXACT_MWU_MAX_PRODUCT else "asymptotic"
    return float(sps.mannwhitneyu(x, y, alternative="less", method=method).pvalue)


def _signed_sample_with_t(t: int, n: int) -> np.ndarray:
    """Differences with ranks 1..n whose positive-rank sum equals ``t`` (greedy subset)."""
    signs, rest = {}, t
    for rank in range(n, 0, -1):
        signs[rank] = 1.0 if rank <= rest else -1.0
        rest -= rank if rank <= rest else 0
    return np.array([signs[r] * r for r in range(1, n + 1)])


def signed_rank_cdf(t: int, n: int) -> float:
    """P(T+ <= t) under the null of the Wilcoxon signed-rank test with n non-zero pairs."""
    if t < 0:
        return 0.0
    if t >= n * (n + 1) // 2:
        return 1.0
    d = _signed_sample_with_t(t, n)
    method = "exact" if n <= EXACT_SIGNED_RANK_MAX_N else "asymptotic"
    return float(sps.wilcoxon(d, alternative="less", method=method).pvalue)


def _order_index(cdf: Callable[[int], float], total: int, confidence: float) -> int:
    """Largest k >= 0 with cdf(k - 1) <= (1 - confidence) / 2, by bisection (cdf rises)."""
    tail = (1.0 - confidence) / 2.0
    lo, hi = 0, total // 2 + 1  # invariant: cdf(lo - 1) <= tail
    while hi - lo > 1:
        mid = (lo + hi) // 2
        if cdf(mid - 1) <= tail:
            lo = mid
        else:
            hi = mid
    return lo


@lru_cache(maxsize=1024)
def mwu_order_index(m: int, n: int, confidence: float) -> int:
    """k of the unpaired interval: the k-th smallest/largest of the m*n differences.

    Cached: every test of a comparison usually has the same sample sizes, and each
    evaluation asks scipy for several exact null probabilities.
    """
    return _order_index(lambda u: mwu_cdf(u, m, n), m * n, confidence)


@lru_cache(maxsize=1024)
def signed_rank_order_index(n: int, confidence: float) -> int:
    """k of the paired interval: the k-th smallest/largest of the n(n+1)/2 Walsh averages."""
    return _order_index(lambda t: signed_rank_cdf(t, n), n * (n + 1) // 2, confidence)


def _interval_from_sorted(values: np.ndarray, k: int) -> tuple[float, float]:
    """The k-th smallest and k-th largest (1-based) of sorted values; infinite if k == 0."""
    if k < 1:
        return -math.inf, math.inf
    return float(values[k - 1]), float(values[values.size - k])


def mann_whitney_p(baseline: Values, comparison: Values) -> float:
    """Two-sided Mann-Whitney U p-value (scipy's method choice), NaN if a side is empty."""
    if len(baseline) == 0 or len(comparison) == 0:
        return math.nan
    res = sps.mannwhitneyu(comparison, baseline, alternative="two-sided")
    return float(res.pvalue)


def mann_whitney_ps(sides: Sequence[tuple[Values, Values]]) -> list[float]:
    """:func:`mann_whitney_p` of many (baseline, comparison) pairs, the same floats, from one
    scipy call per group of pairs alike in sizes and in having ties (scipy chooses its exact
    or asymptotic method from the sizes and from any tie in what it is given, so a group
    mixing them would not be judged as each pair alone). A pair with an empty side or a
    value not finite is asked alone (scipy refuses NaN: so does this)."""
    out = [math.nan] * len(sides)
    groups: dict[tuple[int, int, bool], list[int]] = {}
    for i, (baseline, comparison) in enumerate(sides):
        both = [*baseline, *comparison]
        if not len(baseline) or not len(comparison) or not all(map(math.isfinite, both)):
            out[i] = mann_whitney_p(baseline, comparison)
            continue
        groups.setdefault((len(baseline), len(comparison), len(set(both)) < len(both)),
                          []).append(i)
    for members in groups.values():
        res = sps.mannwhitneyu(np.array([sides[i][1] for i in members], dtype=float),
                               np.array([sides[i][0] for i in members], dtype=float),
                               alternative="two-sided", axis=-1)
        for i, p in zip(members, np.atleast_1d(res.pvalue), strict=True):
            out[i] = float(p)
    return out


def wilcoxon_p(log_ratios: Values) -> float:
    """Two-sided Wilcoxon signed-rank p-value; 1.0 if every difference is zero, NaN if none."""
    arr = np.asarray(log_ratios, dtype=float)
    if arr.size == 0:
        return math.nan
    if np.all(arr == 0):
        return 1.0
    return float(sps.wilcoxon(arr, alternative="two-sided").pvalue)


def unpaired_shift(baseline: Values, comparison: Values,
                   confidence: float = 0.95) -> ShiftEstimate:
    """HL log-ratio shift of comparison vs baseline with its Mann-Whitney interval."""
    lb, lc = _logs(baseline), _logs(comparison)
    diffs = np.sort(np.subtract.outer(lc, lb).ravel())
    m, n = lb.size, lc.size
    k = mwu_order_index(m, n, confidence)
    low, high = _interval_from_sorted(diffs, k)
    return ShiftEstimate(float(np.median(diffs)), low, high,
                         mann_whitney_p(baseline, comparison),
                         "Hodges-Lehmann shift of log values, Mann-Whitney interval",
                         f"own runs ({m} + {n}, ranks)")


def paired_shift(pairs: Sequence[tuple[float, float]], confidence: float = 0.95) -> ShiftEstimate:
    """Walsh-average HL of per-pair log ratios with its Wilcoxon signed-rank interval."""
    if not pairs:
        raise ValueError("no pairs")
    ratios = _logs([c for _, c in pairs]) - _logs([b for b, _ in pairs])
    i, j = np.triu_indices(ratios.size)
    walsh = np.sort((ratios[i] + ratios[j]) / 2.0)
    k = signed_rank_order_index(ratios.size, confidence)
    low, high = _interval_from_sorted(walsh, k)
    return ShiftEstimate(float(np.median(walsh)), low, high, wilcoxon_p(ratios),
                         "Hodges-Lehmann (Walsh averages) of per-pair log ratios, "
                         "Wilcoxon signed-rank interval", f"own pairs ({ratios.size}, ranks)")


def _bh_from_definition(p: np.ndarray) -> np.ndarray:
    """Benjamini-Hochberg: min over j >= i of p_(j) * m / j, capped at 1, in input order."""
    m = p.size
    order = np.argsort(p)
    scaled = p[order] * m / np.arange(1, m + 1)
    adjusted = np.minimum.accumulate(scaled[::-1])[::-1]
    out = np.empty(m)
    out[order] = np.minimum(adjusted, 1.0)
    return out


def bh_adjust(p_values: Values) -> list[float]:
    """Benjamini-Hochberg adjusted p-values; NaN entries stay NaN and are not counted."""
    arr = np.asarray(p_values, dtype=float)
    out = np.full(arr.size, math.nan)
    valid = ~np.isnan(arr)
    if not valid.any():
        return out.tolist()
    fdc = getattr(sps, "false_discovery_control", None)
    adjusted = fdc(arr[valid], method="bh") if fdc else _bh_from_definition(arr[valid])
    out[valid] = adjusted
    return out.tolist()


def runs_needed(n: int, half_width: float, target: float, cap: int = 200) -> int:
    """Runs per side for the interval half-width to shrink below ``target``.

    The half-width scales like ``1/sqrt(n)``, so ``n * (half_width / target)**2``; at least
    one more run than ``n`` and at most ``cap``.
    """
    if target <= 0 or not math.isfinite(half_width):
        return cap
    needed = math.ceil(n * (half_width / target) ** 2)
    return int(min(cap, max(n + 1, needed)))
