"""Change points in a branch's history: where a series steps, by how much, how sure.

Detection is Apache Otava's (``otava.analysis.compute_change_points``): E-Divisive means
(Matteson & James 2014) over sliding windows, each candidate split kept only if a Student t
test between the segments on either side gives p below ``max_pvalue``, then weak points
merged away (Fleming et al. 2023, "Hunter", the MongoDB/DataStax line of work). It runs on
log values, so a step is a ratio and the multiplicative run-to-run noise is symmetric.

For each step we report what Otava does not: the commit range (last point before, first
point after) and the size of the step with a confidence interval, the Hodges-Lehmann shift
between the segments on either side with its Mann-Whitney interval (``stats``), the same
estimator ``rbs compare`` uses. ``p_value`` is Otava's t test of the split.

Otava returns plain Python lists; it is given lists (numpy arrays break its slicing).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from redis_benchmarks_spec.analysis import stats

#: significance of a split (Otava's default is 1e-3: at CV 10-15 % it flagged a change in
#: 3 of 60 flat 80-point series; 1e-4 flagged none and still found a -15 % step in 83 %),
#: and the sliding window of its first pass (Otava's default)
DEFAULT_MAX_PVALUE = 1e-4
DEFAULT_WINDOW = 50
#: how much of a baseline branch's history `rbs compare` searches for change points
CHANGE_POINT_HISTORY = 500


@dataclass(frozen=True)
class ChangePointOptions:
    """Detection thresholds."""

    max_pvalue: float = DEFAULT_MAX_PVALUE
    window: int = DEFAULT_WINDOW
    min_magnitude_pct: float = 0.0  # steps smaller than this are merged away
    confidence: float = 0.95


@dataclass(frozen=True)
class Step:
    """A change point: the series changes between ``index - 1`` and ``index``.

    Percentages are the segment after relative to the segment before.
    """

    index: int
    n_before: int
    n_after: int
    change_pct: float
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_value: float


class ChangePointError(RuntimeError):
    """Otava is not installed (or not importable)."""


def _otava():  # type: ignore[no-untyped-def]
    try:
        from otava import analysis
    except ImportError as exc:
        raise ChangePointError(
            "change points need Apache Otava: .venv/bin/pip install --no-deps "
            f"apache-otava==0.8.0 (scripts/setup.sh does it) ({exc})") from None
    return analysis


def change_indices(values: Sequence[float], options: ChangePointOptions) -> list[tuple[int, float]]:
    """(index of the first point after each change, Otava's p-value), in series order."""
    if len(values) < 4:
        return []
    logs = [math.log(v) for v in values]
    points, _ = _otava().compute_change_points(
        logs, window_len=options.window, max_pvalue=options.max_pvalue,
        min_magnitude=0.0)  # Otava's is relative to the (log) values: ours is applied in steps()
    found = [(int(cp.index), float(cp.stats.pvalue)) for cp in points]
    return sorted(found)


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def steps(values: Sequence[float], options: ChangePointOptions | None = None) -> list[Step]:
    """Every change point of a series (oldest first) with its step and interval."""
    options = options or ChangePointOptions()
    found = change_indices(values, options)
    bounds = [0, *[i for i, _ in found], len(values)]
    out: list[Step] = []
    for k, (index, p_value) in enumerate(found):
        before = list(values[bounds[k]:index])
        after = list(values[index:bounds[k + 2]])
        shift = stats.unpaired_shift(before, after, options.confidence)
        change = stats.log_to_pct(shift.estimate)
        if abs(change) < options.min_magnitude_pct:
            continue
        out.append(Step(index, len(before), len(after), change,
                        _finite(stats.log_to_pct(shift.low)),
                        _finite(stats.log_to_pct(shift.high)), p_value))
    return out


def since_last_change(values: Sequence[float],
                      options: ChangePointOptions | None = None) -> int:
    """Index of the first point after the last change point (0 when there is none)."""
    found = steps(values, options)
    return found[-1].index if found else 0
