"""Per-test verdicts for baseline vs comparison: effect size, interval, FDR-adjusted p-value.

A test is a REGRESSION or an IMPROVEMENT only when all of these hold: the confidence
interval of the change excludes zero, the estimated change is beyond the noise floor, and
the Benjamini-Hochberg adjusted p-value (across every compared test) is below alpha. It is
NO CHANGE when the whole interval lies inside +/- the noise floor. Anything else is
UNKNOWN, with a reason and an estimate of the runs per side that would likely decide it.

One point on a side gives no interval; such a test is UNKNOWN unless that point lies beyond
the other side's observed min/max by more than the noise floor and by more than 3 robust
standard deviations (1.4826 * MAD) of the other side, which needs at least 3 points there.

The statistics themselves live in :mod:`redis_benchmarks_spec.analysis.stats`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Sequence
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as sps

from redis_benchmarks_spec.analysis import stats
from redis_benchmarks_spec.results.document import TestRunResult

REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
NO_CHANGE = "NO CHANGE"
UNKNOWN = "UNKNOWN"
VERDICTS = (REGRESSION, IMPROVEMENT, UNKNOWN, NO_CHANGE)

DEFAULT_METRIC = "ALL_STATS.Totals.Ops/sec"
#: the other side needs this many points before a single point can be judged against it
MIN_POINTS_FOR_SINGLE_POINT_RULE = 3
SINGLE_POINT_ROBUST_SDS = 3.0

_LOWER_IS_BETTER = re.compile(r"latenc|percentile|usec|msec|(^|[._])p\d{2}", re.IGNORECASE)

UNPAIRED_METHOD = ("Hodges-Lehmann shift of log values with the exact Mann-Whitney interval; "
                   "p: two-sided Mann-Whitney U")
PAIRED_METHOD = ("Hodges-Lehmann (Walsh averages) of per-pair log ratios with the exact "
                 "Wilcoxon signed-rank interval; p: two-sided Wilcoxon signed-rank")


def metric_direction(metric: str) -> int:
    """+1 when higher is better (ops/sec, rps, throughput), -1 for latencies."""
    return -1 if _LOWER_IS_BETTER.search(metric) else 1


@dataclass
class CompareOptions:
    """Decision thresholds of a comparison."""

    noise_floor_pct: float = 2.0
    alpha: float = 0.05
    confidence: float = 0.95
    metric: str = DEFAULT_METRIC
    max_runs: int = 200


@dataclass
class TestComparison:
    """One test's comparison; percentages are comparison relative to baseline."""

    __test__ = False  # not a pytest test class

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


@dataclass
class ComparisonReport:
    """All rows of one comparison, counts per verdict, the options and non-fatal problems."""

    rows: list[TestComparison]
    summary: dict[str, int]
    options: CompareOptions
    problems: list[str] = field(default_factory=list)
    method: str = UNPAIRED_METHOD

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ComparisonReport:
        return cls(rows=[TestComparison(**r) for r in raw["rows"]],
                   summary=dict(raw["summary"]),
                   options=CompareOptions(**raw["options"]),
                   problems=list(raw.get("problems", [])),
                   method=raw.get("method", UNPAIRED_METHOD))

    def by_verdict(self, verdict: str) -> list[TestComparison]:
        return [r for r in self.rows if r.verdict == verdict]

    @property
    def has_regression(self) -> bool:
        return any(r.verdict == REGRESSION for r in self.rows)


@dataclass
class _Pending:
    """A measured row waiting for the FDR adjustment and its verdict."""

    row: TestComparison
    shift: stats.ShiftEstimate | None
    single_point: str | None = None  # reason text when the one-point rule applies
    single_point_beyond: bool = False
    log_sd: float | None = None  # dispersion used to estimate runs when the CI is unbounded


def _finite(value: float | None) -> float | None:
    if value is None or not math.isfinite(value):
        return None
    return float(value)


def _log_sd(*sides: Sequence[float]) -> float | None:
    """Pooled SD of log values over the sides with at least 2 points."""
    sds = [float(np.std(np.log(np.asarray(s, dtype=float)), ddof=1)) for s in sides if len(s) >= 2]
    return float(np.sqrt(np.mean(np.square(sds)))) if sds else None


def _single_point_beyond(single: float, others: Sequence[float], floor_pct: float) -> bool:
    """True when ``single`` lies outside others' [min, max] by > floor and > 3 robust SDs."""
    lo, hi = min(others), max(others)
    margin = SINGLE_POINT_ROBUST_SDS * stats.robust_sd(others)
    if single > hi:
        return (single - hi) / hi * 100 > floor_pct and single - hi > margin
    if single < lo:
        return (lo - single) / lo * 100 > floor_pct and lo - single > margin
    return False


def _single_point_check(baseline: Sequence[float], comparison: Sequence[float],
                        floor_pct: float) -> tuple[str | None, bool]:
    """(reason, beyond) for the one-point rule, or (None, False) when it does not apply."""
    nb, nc = len(baseline), len(comparison)
    if nb != 1 and nc != 1:
        return None, False
    if nb == 1 and nc == 1:
        return "1 point on each side: no spread to judge a change against", False
    side, single, others = ("comparison", comparison[0], baseline) if nc == 1 else \
        ("baseline", baseline[0], comparison)
    reason = f"1 point on {side} side"
    if len(others) < MIN_POINTS_FOR_SINGLE_POINT_RULE:
        return f"{reason}, and fewer than {MIN_POINTS_FOR_SINGLE_POINT_RULE} on the other", False
    if _single_point_beyond(single, others, floor_pct):
        return (f"{reason}: it lies beyond the other side's range by more than the noise "
                f"floor and {SINGLE_POINT_ROBUST_SDS:g} robust SDs"), True
    return f"{reason}: not far enough outside the other side's observed spread", False


def _base_row(test: str, baseline: Sequence[float], comparison: Sequence[float],
              options: CompareOptions) -> TestComparison:
    return TestComparison(
        test=test, metric=options.metric, n_baseline=len(baseline), n_comparison=len(comparison),
        baseline_median=stats.median(baseline) if baseline else None,
        comparison_median=stats.median(comparison) if comparison else None,
        cv_baseline=stats.cv(baseline), cv_comparison=stats.cv(comparison))


def _fill_shift(row: TestComparison, shift: stats.ShiftEstimate) -> None:
    row.change_pct = stats.log_to_pct(shift.estimate)
    row.ci_low_pct = _finite(stats.log_to_pct(shift.low))
    row.ci_high_pct = _finite(stats.log_to_pct(shift.high))
    row.p_value = _finite(shift.p_value)


def _measure_unpaired(test: str, baseline: Sequence[float], comparison: Sequence[float],
                      options: CompareOptions) -> _Pending:
    row = _base_row(test, baseline, comparison, options)
    if not baseline or not comparison:
        side = "baseline" if not baseline else "comparison"
        row.reason = f"no points on {side} side"
        return _Pending(row, None)
    try:
        shift = stats.unpaired_shift(baseline, comparison, options.confidence)
    except ValueError as exc:
        row.reason = str(exc)
        return _Pending(row, None)
    _fill_shift(row, shift)
    reason, beyond = _single_point_check(baseline, comparison, options.noise_floor_pct)
    return _Pending(row, shift, reason, beyond, _log_sd(baseline, comparison))


def _measure_paired(test: str, pairs: Sequence[tuple[float, float]],
                    options: CompareOptions) -> _Pending:
    baseline, comparison = [b for b, _ in pairs], [c for _, c in pairs]
    row = _base_row(test, baseline, comparison, options)
    row.paired = True
    if not pairs:
        row.reason = "no complete pairs"
        return _Pending(row, None)
    try:
        shift = stats.paired_shift(pairs, options.confidence)
    except ValueError as exc:
        row.reason = str(exc)
        return _Pending(row, None)
    _fill_shift(row, shift)
    single = "1 pair only: no spread to judge a change against" if len(pairs) == 1 else None
    ratios = np.log(np.asarray(comparison) / np.asarray(baseline))
    # per-side-equivalent SD, so the unpaired runs formula applies: var(ratio) = 2 * sd^2
    log_sd = float(np.std(ratios, ddof=1) / math.sqrt(2)) if len(pairs) >= 2 else None
    return _Pending(row, shift, single, False, log_sd)


def _fmt_ci(row: TestComparison) -> str:
    return f"CI [{row.ci_low_pct:+.2f}%, {row.ci_high_pct:+.2f}%]"


def _direction_verdict(row: TestComparison) -> str:
    worse = (row.change_pct or 0.0) * metric_direction(row.metric) < 0
    return REGRESSION if worse else IMPROVEMENT


def _runs_needed(pending: _Pending, options: CompareOptions) -> int | None:
    """Runs per side that would likely shrink the interval enough to decide."""
    row = pending.row
    change = abs(row.change_pct or 0.0)
    floor = options.noise_floor_pct
    target = change if change > floor else floor - change
    n = min(row.n_baseline, row.n_comparison)
    if row.ci_low_pct is not None and row.ci_high_pct is not None:
        return stats.runs_needed(n, (row.ci_high_pct - row.ci_low_pct) / 2, target,
                                 options.max_runs)
    if pending.log_sd is None:
        return None
    z = float(sps.norm.ppf(0.5 + options.confidence / 2))
    # normal approximation of the half-width, 100 * z * sd * sqrt(2 / n), solved for n
    if target <= 0:
        return options.max_runs
    needed = math.ceil(2 * (100 * z * pending.log_sd / target) ** 2)
    return int(min(options.max_runs, max(n + 1, needed)))


def _unknown_reason(row: TestComparison, options: CompareOptions) -> str:
    floor = options.noise_floor_pct
    if row.ci_low_pct is None or row.ci_high_pct is None:
        return (f"too few points for a {options.confidence:.0%} interval "
                f"(n={row.n_baseline}/{row.n_comparison})")
    ci = _fmt_ci(row)
    excludes_zero = row.ci_low_pct > 0 or row.ci_high_pct < 0
    if not excludes_zero:
        return f"{ci} includes 0 and reaches beyond the ±{floor:g}% noise floor"
    if abs(row.change_pct or 0.0) <= floor:
        return f"{ci} excludes 0 but the change is within the ±{floor:g}% noise floor"
    return (f"{ci} excludes 0 but the adjusted p={row.p_adjusted:.3g} is not below "
            f"alpha={options.alpha:g} after Benjamini-Hochberg across tests")


def _decide(pending: _Pending, options: CompareOptions) -> None:
    """Set verdict, reason and runs_needed of a measured row."""
    row, floor = pending.row, options.noise_floor_pct
    if pending.shift is None:
        return  # no data: reason already set, runs unknown
    if pending.single_point is not None:
        row.verdict = _direction_verdict(row) if pending.single_point_beyond else UNKNOWN
        row.reason = pending.single_point
    elif row.ci_low_pct is not None and row.ci_high_pct is not None \
            and -floor < row.ci_low_pct and row.ci_high_pct < floor:
        row.verdict, row.reason = NO_CHANGE, f"{_fmt_ci(row)} inside ±{floor:g}% noise floor"
    elif _is_significant(row, options):
        row.verdict = _direction_verdict(row)
        row.reason = (f"{row.change_pct:+.2f}%, {_fmt_ci(row)} excludes 0, "
                      f"adjusted p={row.p_adjusted:.3g}")
    else:
        row.verdict, row.reason = UNKNOWN, _unknown_reason(row, options)
    if row.verdict == UNKNOWN:
        row.runs_needed = _runs_needed(pending, options)
        if row.runs_needed is not None:
            row.reason += f"; ~{row.runs_needed} runs per side would likely decide"


def _is_significant(row: TestComparison, options: CompareOptions) -> bool:
    if row.ci_low_pct is None or row.ci_high_pct is None or row.p_adjusted is None:
        return False
    excludes_zero = row.ci_low_pct > 0 or row.ci_high_pct < 0
    beyond_floor = abs(row.change_pct or 0.0) > options.noise_floor_pct
    return excludes_zero and beyond_floor and row.p_adjusted < options.alpha


def _finish(pending: list[_Pending], options: CompareOptions, problems: list[str],
            method: str) -> ComparisonReport:
    p_values = [math.nan if p.row.p_value is None else p.row.p_value for p in pending]
    for item, adjusted in zip(pending, stats.bh_adjust(p_values), strict=True):
        item.row.p_adjusted = _finite(adjusted)
        _decide(item, options)
    rows = [p.row for p in pending]
    summary = {v: sum(1 for r in rows if r.verdict == v) for v in VERDICTS}
    return ComparisonReport(rows, summary, options, list(problems), method)


def compare_samples(samples: dict[str, tuple[list[float], list[float]]],
                    options: CompareOptions | None = None,
                    problems: list[str] | None = None) -> ComparisonReport:
    """Compare independent (baseline, comparison) samples per test."""
    options = options or CompareOptions()
    pending = [_measure_unpaired(t, list(b), list(c), options)
               for t, (b, c) in sorted(samples.items())]
    return _finish(pending, options, problems or [], UNPAIRED_METHOD)


def compare_paired(pairs: dict[str, list[tuple[float, float]]],
                   options: CompareOptions | None = None,
                   problems: list[str] | None = None) -> ComparisonReport:
    """Compare (baseline, comparison) pairs per test, paired by repetition."""
    options = options or CompareOptions()
    pending = [_measure_paired(t, list(p), options) for t, p in sorted(pairs.items())]
    return _finish(pending, options, problems or [], PAIRED_METHOD)


# --- results directories -------------------------------------------------------------------


def _result_files(directory: Path) -> list[Path]:
    return sorted(p for p in directory.rglob("*.json") if p.name != "summary.json")


def _looks_like_result(path: Path) -> bool:
    """result.json always counts; another *.json only if it carries the document's keys."""
    if path.name == "result.json":
        return True
    try:
        head = path.read_text(errors="replace")[:4096]
    except OSError:
        return False
    return '"schema_version"' in head and '"test_name"' in head


@dataclass
class ResultFilter:
    """Which result documents take part: regexps on test name, tested groups and commands."""

    name: str = ".*"
    groups: str | None = None
    commands: str | None = None

    def accepts(self, doc: TestRunResult) -> bool:
        if not re.search(self.name, doc.test_name):
            return False
        if self.groups and not any(re.search(self.groups, g) for g in doc.tested_groups):
            return False
        return not self.commands or any(re.search(self.commands, c)
                                        for c in doc.tested_commands)


def _load_side(directory: Path, metric: str, keep: ResultFilter,
               problems: list[str]) -> dict[str, list[float]]:
    """Metric values per test of the ok runs under ``directory``; trouble goes to problems."""
    values: dict[str, list[float]] = {}
    if not directory.is_dir():
        problems.append(f"{directory}: not a directory")
        return values
    for path in _result_files(directory):
        if not _looks_like_result(path):
            continue
        try:
            doc = TestRunResult.read(path)
        except (ValueError, OSError) as exc:
            problems.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            continue
        if not keep.accepts(doc):
            continue
        if not doc.ok:
            problems.append(f"{path}: status {doc.status!r}, ignored")
        elif metric not in doc.metrics:
            problems.append(f"{path}: no metric {metric!r}")
        else:
            values.setdefault(doc.test_name, []).append(float(doc.metrics[metric]))
    return values


def load_dir_samples(baseline_dir: Path | str, comparison_dir: Path | str, metric: str,
                     name_regexp: str = ".*", *, keep: ResultFilter | None = None
                     ) -> tuple[dict[str, tuple[list[float], list[float]]], list[str]]:
    """Samples per test from two results directories (``**/result.json``), and problems.

    Only runs with status "ok" count; unreadable documents, failed runs, runs without the
    metric and tests present on one side only are reported in problems, never fatal.
    ``keep`` (if given) replaces ``name_regexp`` with name/group/command filters.
    """
    problems: list[str] = []
    keep = keep or ResultFilter(name=name_regexp)
    base = _load_side(Path(baseline_dir), metric, keep, problems)
    comp = _load_side(Path(comparison_dir), metric, keep, problems)
    samples = {t: (base.get(t, []), comp.get(t, [])) for t in sorted(set(base) | set(comp))}
    for test, (b, c) in samples.items():
        if not b or not c:
            side = "baseline" if not b else "comparison"
            problems.append(f"{test}: no valid run on the {side} side")
    return samples, problems
