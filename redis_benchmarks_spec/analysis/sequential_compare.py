"""The paired comparison of a round of ``--until-decided``: repeated p-values and repeated
confidence intervals (``analysis.sequential``) in place of fixed-sample ones, then the same
Benjamini-Hochberg step and verdict rules as :func:`compare.compare_paired`."""

from __future__ import annotations

import math
from collections.abc import Sequence

from redis_benchmarks_spec.analysis.compare import (
    CompareOptions,
    ComparisonReport,
    _base_row,
    _fill_shift,
    _finish,
    _Pending,
)
from redis_benchmarks_spec.analysis.paired import best_paired_shift, log_ratios
from redis_benchmarks_spec.analysis.sequential import (
    SequentialPlan,
    nominal_level,
    repeated_p,
    z_from_p,
)
from redis_benchmarks_spec.analysis.verdict import SinglePoint

SEQUENTIAL_METHOD = ("group-sequential design, Lan-DeMets {spending} alpha spending over "
                     "{max_pairs} pairs: repeated p-values (BH across tests) and repeated "
                     "confidence intervals of the per-pair log-ratio method of each row")


def _measure(test: str, pairs: Sequence[tuple[float, float]], looks: Sequence[int],
             plan: SequentialPlan, options: CompareOptions) -> _Pending:
    baseline, comparison = [b for b, _ in pairs], [c for _, c in pairs]
    row = _base_row(test, baseline, comparison, options)
    row.paired = True
    looks = [n for n in looks if n >= 2]
    if not looks:
        row.reason = "fewer than 2 complete pairs"
        return _Pending(row, False)
    try:
        p_values = [repeated_p(z_from_p(best_paired_shift(pairs[:n]).p_value),
                               plan.fractions(looks[:j + 1]), plan.spending)
                    for j, n in enumerate(looks)]
        level = nominal_level(plan.fractions(looks), plan.alpha, plan.spending)
        shift = best_paired_shift(pairs[:looks[-1]], 1.0 - level)
    except ValueError as exc:
        row.reason = str(exc)
        return _Pending(row, False)
    _fill_shift(row, shift)
    row.p_value = min(p_values)
    row.method = f"{shift.method}; repeated {1 - level:.4%} interval at look {len(looks)}"
    ratios = log_ratios(pairs[:looks[-1]])
    log_sd = float(ratios.std(ddof=1) / math.sqrt(2)) if ratios.size >= 2 else None
    single = SinglePoint("1 pair only") if len(pairs) == 1 else None
    return _Pending(row, True, single, log_sd)


def compare_sequential(pairs: dict[str, list[tuple[float, float]]],
                       looks: dict[str, list[int]], plan: SequentialPlan,
                       options: CompareOptions | None = None,
                       problems: list[str] | None = None) -> ComparisonReport:
    """Every test's pairs and the pair counts at which it was looked at (increasing, the last
    one the current look), judged with the design's repeated p-values and intervals."""
    options = options or CompareOptions(alpha=plan.alpha)
    for test, counts in looks.items():
        if list(counts) != sorted(set(counts)) or (counts and counts[-1] > plan.max_pairs):
            raise ValueError(f"{test}: looks must increase and stay within "
                             f"{plan.max_pairs} pairs: {counts}")
    pending = [_measure(t, list(p), looks.get(t, [len(p)]), plan, options)
               for t, p in sorted(pairs.items())]
    method = SEQUENTIAL_METHOD.format(spending=plan.spending, max_pairs=plan.max_pairs)
    return _finish(pending, options, problems or [], method)
