"""Many unpaired comparisons measured at once (analysis/unpaired_many.py) give every test
the row, and so the verdict, that measuring it alone gives (the engine's one-test path)."""

from __future__ import annotations

import math
import random

from redis_benchmarks_spec.analysis import stats
from redis_benchmarks_spec.analysis.compare import (
    UNPAIRED_METHOD,
    CompareOptions,
    _measure_unpaired,
    compare_samples,
    compare_samples_many,
    finish_report,
)

METRICS = ("ALL_STATS.Totals.Ops/sec", "ALL_STATS.Totals.Latency")


def _side(rnd: random.Random, n: int, shift: float) -> list[float]:
    values = [50_000.0 * (1 + shift) * (1 + rnd.gauss(0, 0.01)) for _ in range(n)]
    if rnd.random() < 0.3:  # counts rounded: ties within and across the sides
        values = [float(round(v, -2)) for v in values]
    return values


def _samples(seed: int) -> dict[str, tuple[list[float], list[float]]]:
    """Sizes 0 to 12 a side (scipy's exact and asymptotic laws, one point, none), changes
    from none to 10 %, ties, and a few values no log scale takes."""
    rnd = random.Random(seed)
    out = {}
    for i in range(300):
        m, n = rnd.choice([0, 1, 2, 3, 5, 5, 5, 7, 9, 12]), rnd.choice([0, 1, 3, 5, 5, 5, 9, 12])
        base, comp = _side(rnd, m, 0.0), _side(rnd, n, rnd.choice([0.0, 0.005, -0.03, 0.1]))
        if i % 37 == 0 and comp:
            comp[0] = rnd.choice([0.0, -1.0, math.inf])
        out[f"t{i:03d}"] = (base, comp)
    out["all tied"] = ([100.0] * 5, [100.0] * 5)
    return out


def _one_by_one(samples: dict[str, tuple[list[float], list[float]]],
                options: CompareOptions) -> tuple:
    pending = [_measure_unpaired(t, list(b), list(c), options)
               for t, (b, c) in sorted(samples.items())]
    return finish_report(pending, options, [], UNPAIRED_METHOD).rows


def test_measured_together_equals_measured_alone() -> None:
    for seed, metric in ((1, METRICS[0]), (2, METRICS[1]), (3, METRICS[0])):
        samples = _samples(seed)
        options = CompareOptions(noise_floor_pct=2.0, alpha=0.05, metric=metric)
        rows = compare_samples(samples, options).rows
        alone = _one_by_one(samples, options)
        assert [r.verdict for r in rows] == [r.verdict for r in alone]
        for together, one in zip(rows, alone, strict=True):
            # every field, floats compared exactly (NaN equal to NaN)
            assert repr(together) == repr(one), together.test
        assert {r.verdict for r in rows} >= {"REGRESSION", "IMPROVEMENT", "NO CHANGE"}


def test_mann_whitney_p_of_many_is_each_ones() -> None:
    rnd = random.Random(4)
    sides = [(_side(rnd, rnd.choice([1, 3, 5, 9]), 0.0), _side(rnd, rnd.choice([1, 5, 9]), 0.01))
             for _ in range(200)]
    assert stats.mann_whitney_ps(sides) == [stats.mann_whitney_p(b, c) for b, c in sides]


def test_platforms_judged_together_equal_each_judged_alone() -> None:
    """A compare page of every platform judges them in one go (compare_samples_many): each
    report is the one compare_samples gives that platform alone, row for row, float for
    float (the Benjamini-Hochberg step stays per platform)."""
    per_platform = {f"lab-{i}": _samples(10 + i) for i in range(3)}
    problems = {"lab-0": ["a note"], "lab-1": [], "lab-2": []}
    options = CompareOptions(noise_floor_pct=2.0, alpha=0.05, metric=METRICS[0])
    together = compare_samples_many(per_platform, options, problems)
    assert list(together) == list(per_platform)
    for platform, samples in per_platform.items():
        alone = compare_samples(samples, options, problems[platform])
        assert repr(together[platform]) == repr(alone), platform
