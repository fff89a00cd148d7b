"""Baseline vs comparison per test: effect size, interval, FDR-adjusted p-value, verdict.

:func:`compare_samples` (independent runs) and :func:`compare_paired` (interleaved A/B
runs, paired by repetition) measure every test with :mod:`~.stats`, adjust the p-values
across all tests with Benjamini-Hochberg, and let :mod:`~.verdict` decide each one.
Runs become samples or pairs in :mod:`analysis.session_runs`, and verdicts of runs in
:mod:`analysis.engine`, for every surface.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, fields, replace
from typing import Any, TypeVar

import numpy as np

from redis_benchmarks_spec.analysis import stats
from redis_benchmarks_spec.analysis.context import CompareContext
from redis_benchmarks_spec.analysis.paired import NoisePrior, best_paired_shift
from redis_benchmarks_spec.analysis.unpaired_many import Measured, measure_many
from redis_benchmarks_spec.analysis.verdict import (
    BUSY,
    DEFAULT_METRIC,
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    VERDICTS,
    CompareOptions,
    Evidence,
    SinglePoint,
    decide,
    metric_direction,
    single_point_check,
)
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC

__all__ = [
    "BUSY",
    "DEFAULT_METRIC",
    "IMPROVEMENT",
    "NO_CHANGE",
    "REGRESSION",
    "SUSPECT",
    "UNKNOWN",
    "VERDICTS",
    "CompareOptions",
    "Comparison",
    "ComparisonReport",
    "compare_paired",
    "compare_samples",
    "metric_direction",
]

K = TypeVar("K")  # what names each comparison of compare_samples_many

UNPAIRED_METHOD = ("Hodges-Lehmann shift of log values with the exact Mann-Whitney interval; "
                   "p: two-sided Mann-Whitney U (one point on a side: Student-t prediction p "
                   "on log values)")
PAIRED_METHOD = ("per-pair log ratios: Student t interval and p from 5 pairs, or from 3 with "
                 "a recorded A/A prior (instruction counts, pooled) or the host's spread "
                 "(timed metrics, never narrower than it); an outlying pair stays in and "
                 "widens it; below that Hodges-Lehmann (Walsh averages) with the exact "
                 "Wilcoxon signed-rank interval; each row names its method")


@dataclass(frozen=True)
class Comparison:
    """One test's comparison; percentages are comparison relative to baseline."""

    test: str
    metric: str
    n_baseline: int
    n_comparison: int
    baseline_median: float | None = None
    comparison_median: float | None = None
    change_pct: float | None = None
    ci_low_pct: float | None = None
    ci_high_pct: float | None = None
    p_value: float | None = None
    p_adjusted: float | None = None
    cv_baseline: float | None = None
    cv_comparison: float | None = None
    verdict: str = UNKNOWN
    reason: str = ""
    runs_needed: int | None = None
    paired: bool = False
    # comparison median / baseline median - 1: shown beside the change (a different estimator)
    median_ratio_pct: float | None = None
    method: str = ""  # the interval method of this row (paired rows choose per test)
    # pairs (runs, unpaired) left out because other processes disturbed them (time metrics)
    n_disturbed: int = 0
    # the measured run-to-run spread: SD of the per-pair log ratios in % (paired rows)
    pair_sd_pct: float | None = None
    noise_floor_pct: float | None = None  # the floor this row was judged against
    # where the interval's spread came from: the pairs' own, pooled with a calibration
    # prior, the host's calibrated spread or the metric kind's prior (common.metrics)
    spread_from: str = ""

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> Comparison:
        """A row :func:`dataclasses.asdict` wrote; keys a newer version added are ignored."""
        return cls(**{k: v for k, v in raw.items() if k in _ROW_FIELDS})


_ROW_FIELDS = frozenset(f.name for f in fields(Comparison))


@dataclass(frozen=True)
class ComparisonReport:
    """All rows of one comparison, the options and non-fatal problems: a value, built once
    by :mod:`analysis.engine` and only read after (renderers, the PR comment, exit codes).
    A step that adds to it (the header, a note) builds a new one with ``dataclasses.replace``.
    Lists given for ``rows``, ``problems`` or ``hidden`` are kept as tuples."""

    rows: tuple[Comparison, ...]
    options: CompareOptions
    problems: tuple[str, ...] = ()
    method: str = UNPAIRED_METHOD
    context: CompareContext | None = None  # what was compared (the reports' header)
    # the same runs judged on instructions per op, when they were counted (analysis.engine)
    instructions: ComparisonReport | None = None
    # verdict metrics the runs measured that this report does not judge (analysis.engine):
    # every surface says they were hidden, and how to see them
    hidden: tuple[str, ...] = ()
    # the same runs judged on each memory figure after the preload (analysis.engine)
    memory: ComparisonReport | None = None
    # timed metrics the runs measured only under a profiler (not the server's speed): named,
    # never judged (analysis.engine)
    instrumented: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        for name in ("rows", "problems", "hidden", "instrumented"):
            object.__setattr__(self, name, tuple(getattr(self, name)))

    @property
    def summary(self) -> dict[str, int]:
        """Rows per verdict (every verdict named, 0 included), counted from the rows."""
        return {v: sum(1 for r in self.rows if r.verdict == v) for v in VERDICTS}

    def to_dict(self) -> dict[str, Any]:
        """Plain JSON-serialisable data (``summary`` included, for readers of the file);
        :meth:`from_dict` reads it back."""
        out = asdict(self)
        for name in ("rows", "problems", "hidden", "instrumented"):
            out[name] = list(out[name])
        out["summary"] = self.summary
        for sub in ("instructions", "memory"):
            part = getattr(self, sub)
            out[sub] = part.to_dict() if part is not None else None
        return out

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ComparisonReport:
        """The report :meth:`to_dict` wrote (its ``summary`` is counted again from the rows)."""
        context = raw.get("context")
        instructions, memory = raw.get("instructions"), raw.get("memory")
        return cls(rows=tuple(Comparison.from_dict(r) for r in raw["rows"]),
                   options=CompareOptions(**raw["options"]),
                   problems=tuple(raw.get("problems", [])),
                   method=raw.get("method", UNPAIRED_METHOD),
                   context=CompareContext.from_dict(context) if context else None,
                   instructions=cls.from_dict(instructions) if instructions else None,
                   hidden=tuple(raw.get("hidden", [])),
                   instrumented=tuple(raw.get("instrumented", [])),
                   memory=cls.from_dict(memory) if memory else None)

    def by_verdict(self, verdict: str) -> list[Comparison]:
        """Rows with ``verdict``, in report order."""
        return [r for r in self.rows if r.verdict == verdict]

    @property
    def has_regression(self) -> bool:
        return any(r.verdict == REGRESSION for r in self.rows)

    @property
    def counted(self) -> ComparisonReport | None:
        """The instruction-count verdicts: this report when it judged instructions per op
        (asked for, or the timed metric was measured only under a profiler), else its
        ``instructions`` part (None: no run counted them)."""
        return self if self.options.metric == INSTRUCTIONS_METRIC else self.instructions

    @property
    def has_busy(self) -> bool:
        """A test left undecided because its pairs were disturbed (here or on instructions)."""
        return any(r.verdict == BUSY for r in self.rows) or \
            (self.instructions is not None and self.instructions.has_busy)


@dataclass(frozen=True)
class PendingRow:
    """A measured row waiting for the FDR adjustment and its verdict."""

    row: Comparison
    measured: bool
    single_point: SinglePoint | None = None
    log_sd: float | None = None  # dispersion used to estimate runs when the CI is unbounded


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _log_sd(*sides: Sequence[float]) -> float | None:
    """Pooled SD of log values over the sides with at least 2 points."""
    sds = [float(np.std(np.log(np.asarray(s, dtype=float)), ddof=1)) for s in sides if len(s) >= 2]
    return float(np.sqrt(np.mean(np.square(sds)))) if sds else None


def base_row(test: str, baseline: Sequence[float], comparison: Sequence[float],
             options: CompareOptions, paired: bool = False) -> Comparison:
    """A row with the medians, counts and CVs of both sides and nothing decided yet."""
    return Comparison(
        test=test, metric=options.metric, n_baseline=len(baseline), n_comparison=len(comparison),
        baseline_median=stats.median(baseline) if baseline else None,
        comparison_median=stats.median(comparison) if comparison else None,
        cv_baseline=stats.cv(baseline), cv_comparison=stats.cv(comparison),
        median_ratio_pct=_median_ratio_pct(baseline, comparison), paired=paired)


def _median_ratio_pct(baseline: Sequence[float], comparison: Sequence[float]) -> float | None:
    if not baseline or not comparison or stats.median(baseline) == 0:
        return None
    return _finite((stats.median(comparison) / stats.median(baseline) - 1) * 100)


def fill_shift(row: Comparison, shift: stats.ShiftEstimate,
               options: CompareOptions | None = None) -> Comparison:
    """``row`` with the change, its interval and p of a log-scale shift, as percentages of
    the baseline; where its deployment moves the count (``options.host_dependent``), its
    ``spread_from`` says so first."""
    why = options.host_dependent.get(row.test) if options is not None else None
    spread = f"host-dependent count ({why}), not deterministic: {shift.spread_from}" \
        if why else shift.spread_from
    return replace(row, change_pct=stats.log_to_pct(shift.estimate),
                   ci_low_pct=_finite(stats.log_to_pct(shift.low)),
                   ci_high_pct=_finite(stats.log_to_pct(shift.high)),
                   p_value=_finite(shift.p_value), spread_from=spread)


def _measure_unpaired(test: str, baseline: Sequence[float], comparison: Sequence[float],
                      options: CompareOptions, known: Measured | None = None) -> PendingRow:
    """One test's row, measured; ``known``: its numbers when already measured with others
    (:func:`analysis.unpaired_many.measure_many`, the same floats)."""
    if known is not None:
        single = single_point_check(baseline, comparison, options.floor_of(test))
        return PendingRow(_known_row(test, (baseline, comparison), options, (known, single)),
                          True, single, known.log_sd)
    row = base_row(test, baseline, comparison, options)
    if not baseline or not comparison:
        side = "baseline" if not baseline else "comparison"
        return PendingRow(replace(row, reason=f"no points on {side} side"), False)
    try:
        shift = stats.unpaired_shift(baseline, comparison, options.confidence)
    except ValueError as exc:
        return PendingRow(replace(row, reason=str(exc)), False)
    row = fill_shift(row, shift)
    single = single_point_check(baseline, comparison, options.floor_of(test))
    if single is not None and math.isfinite(single.p_value):
        # a rank test cannot resolve one point; the prediction p joins the BH family instead
        row = replace(row, p_value=single.p_value)
    return PendingRow(row, True, single, _log_sd(baseline, comparison))


def _known_row(test: str, sides: tuple[Sequence[float], Sequence[float]],
               options: CompareOptions,
               known: tuple[Measured, SinglePoint | None]) -> Comparison:
    """The row :func:`base_row`, :func:`fill_shift` and the one-point p make, made at once
    from numbers already measured (a frozen row of 24 fields costs ~10 us a copy)."""
    found, single = known
    mb, mc, shift = found.baseline_median, found.comparison_median, found.shift
    p_value = single.p_value if single is not None and math.isfinite(single.p_value) \
        else _finite(shift.p_value)
    return Comparison(
        test=test, metric=options.metric, n_baseline=len(sides[0]),
        n_comparison=len(sides[1]), baseline_median=mb, comparison_median=mc,
        change_pct=stats.log_to_pct(shift.estimate),
        ci_low_pct=_finite(stats.log_to_pct(shift.low)),
        ci_high_pct=_finite(stats.log_to_pct(shift.high)), p_value=p_value,
        cv_baseline=found.cv_baseline, cv_comparison=found.cv_comparison,
        median_ratio_pct=None if mb == 0 else _finite((mc / mb - 1) * 100), paired=False,
        spread_from=shift.spread_from)


def _measure_paired(test: str, pairs: Sequence[tuple[float, float]],
                    options: CompareOptions, prior: NoisePrior | None = None) -> PendingRow:
    baseline, comparison = [b for b, _ in pairs], [c for _, c in pairs]
    row = base_row(test, baseline, comparison, options, paired=True)
    if not pairs:
        return PendingRow(replace(row, reason="no complete pairs"), False)
    try:
        shift = best_paired_shift(pairs, options.confidence, noise_prior(test, options, prior),
                                  least_spread(test, options), options.kind_of(test).min_pairs)
    except ValueError as exc:
        return PendingRow(replace(row, reason=str(exc)), False)
    single = SinglePoint("1 pair only: no spread to judge a change against") \
        if len(pairs) == 1 else None
    ratios = np.log(np.asarray(comparison) / np.asarray(baseline))
    row = replace(fill_shift(row, shift, options), method=shift.method,
                  pair_sd_pct=_finite(100 * float(np.std(ratios, ddof=1)))
                  if len(pairs) >= 2 else None)
    # per-side-equivalent SD, so the unpaired runs formula applies: var(ratio) = 2 * sd^2
    log_sd = float(np.std(ratios, ddof=1) / math.sqrt(2)) if len(pairs) >= 2 else None
    return PendingRow(row, True, single, log_sd)


def noise_prior(test: str, options: CompareOptions,
                recorded: NoisePrior | None) -> NoisePrior | None:
    """The prior pooled with ``test``'s pairs: the one this host recorded (a calibration
    A/A), else the one the metric's deterministic kind ships (``common.metrics``), so a host
    that never ran an A/A decides a clear count change in 3 pairs; none for a test whose
    least spread is set apart (a base counted once, a deployment that moves its counts)."""
    if recorded is not None:
        return recorded
    kind = options.kind_of(test)
    if not kind.deterministic or kind.prior_sd <= 0 or test in options.spreads:
        return None
    return NoisePrior(kind.prior_sd, kind.prior_df, kind.prior_source)


def least_spread(test: str, options: CompareOptions) -> NoisePrior | None:
    """The least spread a timed test's interval may assume, or a count's its deployment
    moves (``CompareOptions.host_dependent``); None: its own decides."""
    sd, source = options.spread_of(test)
    if sd <= 0:
        return None
    # a count its deployment moves decides from its own MIN_PAIRS pairs even where its
    # calibration measured the spread: that spread need not hold under another load
    measured = test in options.spreads and test not in options.host_dependent
    return NoisePrior(sd, 1, f"{source}: {100 * sd:.1f} %", measured=measured)


def _evidence(row: Comparison, pending: PendingRow, p_adjusted: float | None) -> Evidence:
    return Evidence(metric=row.metric, n=min(row.n_baseline, row.n_comparison),
                    change_pct=row.change_pct, ci_low_pct=row.ci_low_pct,
                    ci_high_pct=row.ci_high_pct, p_adjusted=p_adjusted,
                    log_sd=pending.log_sd, single_point=pending.single_point)


def _decided(item: PendingRow, adjusted: float, options: CompareOptions,
             floors: dict[float, CompareOptions] | None = None) -> Comparison:
    """The row with its adjusted p, its floor and (when measured) its verdict; ``floors``
    keeps the options of each floor across rows."""
    floor, p_adjusted = options.floor_of(item.row.test), _finite(adjusted)
    if not item.measured:  # rows without data keep UNKNOWN and the reason they already have
        return replace(item.row, p_adjusted=p_adjusted, noise_floor_pct=floor)
    floors = {} if floors is None else floors
    if floor not in floors:
        floors[floor] = replace(options, noise_floor_pct=floor)
    decision = decide(_evidence(item.row, item, p_adjusted), floors[floor])
    return _with(item.row, p_adjusted=p_adjusted, noise_floor_pct=floor,
                 verdict=decision.verdict, reason=decision.reason,
                 runs_needed=decision.runs_needed)


def _with(row: Comparison, **changes: Any) -> Comparison:
    """``dataclasses.replace(row, **changes)`` without its walk of the 24 fields (~13 us a
    row, and a comparison of every platform decides 2,204): the same frozen row."""
    new = object.__new__(Comparison)
    new.__dict__.update(row.__dict__, **changes)
    return new


def finish_report(pending: list[PendingRow], options: CompareOptions, problems: Sequence[str],
                  method: str) -> ComparisonReport:
    """One Benjamini-Hochberg step over the measured rows, then each row's verdict.

    The public row API: ``compare_*`` here and :mod:`analysis.sequential_compare` build
    :class:`PendingRow` items with :func:`base_row` and :func:`fill_shift`, then finish here.
    """
    p_values = [math.nan if p.row.p_value is None else p.row.p_value for p in pending]
    floors: dict[float, CompareOptions] = {}  # the options per floor, made once
    rows = tuple(_decided(item, adjusted, options, floors)
                 for item, adjusted in zip(pending, stats.bh_adjust(p_values), strict=True))
    return ComparisonReport(rows, options, tuple(problems), method)


def compare_samples(samples: dict[str, tuple[list[float], list[float]]],
                    options: CompareOptions | None = None,
                    problems: list[str] | None = None) -> ComparisonReport:
    """Compare independent (baseline, comparison) samples per test.

    ``options.metric`` names the metric (and so its direction); ``problems`` are carried
    into the report.
    """
    return compare_samples_many({"": samples}, options, {"": problems or []})[""]


def compare_samples_many(samples: Mapping[K, dict[str, tuple[list[float], list[float]]]],
                         options: CompareOptions | None = None,
                         problems: Mapping[K, Sequence[str]] | None = None,
                         ) -> dict[K, ComparisonReport]:
    """:func:`compare_samples` of each of several comparisons (a compare page's platforms):
    every test of all of them measured together, the same floats as each alone; each
    comparison then adjusted (Benjamini-Hochberg over its own tests) and decided alone."""
    options = options or CompareOptions()
    tests = {k: [(t, list(b), list(c)) for t, (b, c) in sorted(found.items())]
             for k, found in samples.items()}
    # tests of equal sample sizes measured together: the same numbers, ~30 times faster
    known = iter(measure_many([(b, c) for rows in tests.values() for _, b, c in rows],
                              options.confidence))
    return {k: finish_report([_measure_unpaired(t, b, c, options, next(known))
                              for t, b, c in rows],
                             options, list((problems or {}).get(k, ())), UNPAIRED_METHOD)
            for k, rows in tests.items()}


def compare_paired(pairs: dict[str, list[tuple[float, float]]],
                   options: CompareOptions | None = None,
                   problems: list[str] | None = None,
                   priors: dict[str, NoisePrior] | None = None) -> ComparisonReport:
    """Compare (baseline, comparison) pairs per test, paired by repetition; ``priors`` are
    the tests' known noise levels (:mod:`analysis.noise`)."""
    options = options or CompareOptions()
    priors = priors or {}
    pending = [_measure_paired(t, list(p), options, priors.get(t))
               for t, p in sorted(pairs.items())]
    return finish_report(pending, options, problems or [], PAIRED_METHOD)
