"""The numbers of many unpaired comparisons at once, the same floats as one at a time.

A comparison of two commits judges every test (551 suites on each platform). One test alone
costs ~1 ms here, nearly all of it numpy's and scipy's overhead on arrays of 5 values: the
medians, spreads, the Hodges-Lehmann shift and its interval, the Mann-Whitney p. Tests with
the same sample sizes (most of a comparison's) are measured here as the rows of one array
each, with the same numpy operations along the rows (:func:`analysis.stats.unpaired_shift`,
:func:`analysis.compare.base_row` and its pooled log SD, for one test), so every number is
the float the one-test path computes (``tests/test_unpaired_many.py`` holds them equal).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

import numpy as np

from redis_benchmarks_spec.analysis import stats

Sides = tuple[Sequence[float], Sequence[float]]
METHOD = "Hodges-Lehmann shift of log values, Mann-Whitney interval"


@dataclass(frozen=True)
class Measured:
    """One test's numbers: each side's median and CV, the shift and the pooled log SD."""

    baseline_median: float
    comparison_median: float
    cv_baseline: float | None
    cv_comparison: float | None
    shift: stats.ShiftEstimate
    log_sd: float | None


def measurable(baseline: Sequence[float], comparison: Sequence[float]) -> bool:
    """Both sides have points, all finite and positive (the log scale's domain)."""
    return bool(baseline) and bool(comparison) and all(
        math.isfinite(v) and v > 0 for side in (baseline, comparison) for v in side)


def measure_many(sides: Sequence[Sides], confidence: float) -> list[Measured | None]:
    """Per pair of sides its numbers (None for a pair :func:`measurable` refuses)."""
    out: list[Measured | None] = [None] * len(sides)
    groups: dict[tuple[int, int], list[int]] = {}
    for i, (baseline, comparison) in enumerate(sides):
        if measurable(baseline, comparison):
            groups.setdefault((len(baseline), len(comparison)), []).append(i)
    for members in groups.values():
        found = _group([sides[i] for i in members], confidence)
        for i, measured in zip(members, found, strict=True):
            out[i] = measured
    return out


def _cvs(values: np.ndarray) -> list[float | None]:
    """:func:`stats.cv` of each row."""
    if values.shape[1] < 2:
        return [None] * values.shape[0]
    means = values.mean(axis=1)
    sds = values.std(axis=1, ddof=1)
    return [None if m == 0 else float(s / abs(m)) for s, m in zip(sds, means, strict=True)]


def _log_sds(lb: np.ndarray, lc: np.ndarray) -> list[float | None]:
    """The pooled SD of log values over the sides with 2+ points, per row."""
    sds = [side.std(axis=1, ddof=1) for side in (lb, lc) if side.shape[1] >= 2]
    if not sds:
        return [None] * lb.shape[0]
    pooled = np.sqrt(np.mean(np.square(np.stack(sds, axis=1)), axis=1))
    return [float(v) for v in pooled]


def _group(sides: list[Sides], confidence: float) -> list[Measured]:
    """Pairs of equal sizes (m baseline, n comparison points), as arrays of rows."""
    b = np.array([s[0] for s in sides], dtype=float)
    c = np.array([s[1] for s in sides], dtype=float)
    m, n = b.shape[1], c.shape[1]
    lb, lc = np.log(b), np.log(c)
    diffs = np.sort((lc[:, :, None] - lb[:, None, :]).reshape(len(sides), n * m), axis=1)
    estimates = np.median(diffs, axis=1)
    k = stats.mwu_order_index(m, n, confidence)
    lows = diffs[:, k - 1] if k >= 1 else np.full(len(sides), -math.inf)
    highs = diffs[:, n * m - k] if k >= 1 else np.full(len(sides), math.inf)
    ps = stats.mann_whitney_ps([(list(x), list(y)) for x, y in sides])
    spread = f"own runs ({m} + {n}, ranks)"
    rows = zip(np.median(b, axis=1), np.median(c, axis=1), _cvs(b), _cvs(c), estimates,
               lows, highs, ps, _log_sds(lb, lc), strict=True)
    return [Measured(float(mb), float(mc), cvb, cvc,
                     stats.ShiftEstimate(float(e), float(lo), float(hi), p, METHOD, spread), sd)
            for mb, mc, cvb, cvc, e, lo, hi, p, sd in rows]
