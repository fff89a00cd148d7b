"""The one verdict engine: runs in, a :class:`ComparisonReport` out.

Every surface calls :func:`judge` with the runs it has (in memory after an A/B, read once
from a session folder, or from two results folders) and gets the same verdicts, intervals and
pair counts for the same runs: the A/B table, ``--format json|markdown``, ``rbs compare``
of folders, ``rbs report``/HTML, the pull-request comment, the agent's A/B and bisect.

What it does, in order:

1. label the tests (a suite in one topology, ``results.comparison_key``);
2. pair or sample the runs with the one rule of :mod:`analysis.session_runs` (deterministic
   metrics keep every pair; a disturbed pair of a time metric is counted, not used);
3. measure each test (paired: ``analysis.paired``, for instruction counts with the test's
   noise recorded by calibration A/A sessions; an ``--until-decided`` session at the looks
   its record took)
   and decide it after one Benjamini-Hochberg step (``analysis.compare``);
4. a test left UNKNOWN with disturbed pairs becomes ``BUSY: k of n pairs disturbed``;
5. when the runs counted instructions and the metric is another, the same runs are judged on
   instructions per op too (``report.instructions``), so every format carries both;
6. a timed verdict of the opposite sign to the decided instruction count of the same test is
   SUSPECT (both numbers in its reason): evidence that contradicts itself is not a verdict,
   and it never sets an exit code (issue 28).

Timed metrics are judged against each test's noise floor from this host's calibration
and its least pair spread (``HostNoise``, :meth:`analysis.noise.NoiseBook.host_noise`), or
against the uncalibrated :data:`~analysis.verdict.DEFAULT_NOISE_FLOOR_PCT` and
:data:`~analysis.verdict.UNCALIBRATED_PAIR_SD`; the report's ``floor_note`` says which.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.analysis.compare import (
    BUSY,
    IMPROVEMENT,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
    compare_paired,
    compare_samples,
)
from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.sequential_compare import SequentialRecord, compare_recorded
from redis_benchmarks_spec.analysis.session_runs import (
    ABRun,
    PairSet,
    SampleSet,
    deterministic,
    keys_of,
    metrics_present,
    pair_runs,
    sample_runs,
)
from redis_benchmarks_spec.analysis.verdict import HostNoise, default_noise_floor

INSTRUCTIONS_METRIC = "instructions_per_op"

#: metric -> test label -> the noise known before the session (analysis.noise)
SessionPriors = dict[str, dict[str, NoisePrior]]


@dataclass
class Judging:
    """How to judge: the decision options and what the session knew and recorded."""

    options: CompareOptions
    paired: bool = True
    record: SequentialRecord | None = None  # an --until-decided session's design and looks
    priors: SessionPriors = field(default_factory=dict)
    tests: list[str] = field(default_factory=list)  # labels that get a row even without runs
    instructions_floor_pct: float | None = None  # None: the metric's default (0.5 %)
    # per timed metric, the host's noise a session was judged with (a session folder's
    # noise-floors.json); applied when the options carry none
    host_noise: dict[str, HostNoise] = field(default_factory=dict)


def judge_pairs(pairs: dict[str, list[tuple[float, float]]], options: CompareOptions,
                problems: list[str] | None = None,
                priors: dict[str, NoisePrior] | None = None,
                record: SequentialRecord | None = None) -> ComparisonReport:
    """Paired values per test (bisect through agents has values, not documents)."""
    if record is not None and record.metric == options.metric:
        report = compare_recorded(pairs, record, options, priors)
        report.problems.extend(problems or [])
        return report
    return compare_paired(pairs, options, problems, priors)


def judge_samples(samples: dict[str, tuple[list[float], list[float]]], options: CompareOptions,
                  problems: list[str] | None = None) -> ComparisonReport:
    """Independent values per test and side, without their documents (datasink points of
    two branches, versions, commits or platforms): the unpaired comparison."""
    return compare_samples(samples, options, problems)


def _mark_busy(report: ComparisonReport, disturbed: dict[str, tuple[int, int]]) -> None:
    """UNKNOWN with disturbed pairs is BUSY; a decided row says what it left out."""
    for row in report.rows:
        left_out, total = disturbed.get(row.test, (0, 0))
        row.n_disturbed = left_out
        if not left_out:
            continue
        what = f"{left_out} of {total} {'pairs' if row.paired else 'runs'} disturbed " \
               "(other processes used the test's CPUs)"
        if row.runs_needed is not None:  # pairs to run, counting those that get left out
            row.runs_needed += left_out
        if row.verdict == UNKNOWN:
            row.verdict, row.reason = BUSY, f"BUSY: {what}; {row.reason}"
        else:
            row.reason = f"{row.reason}; {what}, left out"
    report.recount()


def _judge_paired(runs: list[ABRun], options: CompareOptions, how: Judging,
                  problems: list[str]) -> ComparisonReport:
    sets: dict[str, PairSet] = pair_runs(runs, options.metric, keys_of(runs), how.tests)
    # a prior holds only while the noise is what it was at calibration: instruction counts
    priors = how.priors.get(options.metric) if deterministic(options.metric) else None
    report = judge_pairs({t: s.pairs for t, s in sets.items()}, options, problems, priors,
                         how.record)
    _mark_busy(report, {t: (s.disturbed, s.complete) for t, s in sets.items()})
    return report


def _judge_unpaired(runs: list[ABRun], options: CompareOptions, how: Judging,
                    problems: list[str]) -> ComparisonReport:
    sets: dict[str, SampleSet] = sample_runs(runs, options.metric, keys_of(runs))
    for test in how.tests:
        sets.setdefault(test, SampleSet())
    report = compare_samples({t: (s.baseline, s.comparison) for t, s in sets.items()},
                             options, problems)
    _mark_busy(report, {t: (s.disturbed, s.disturbed + len(s.baseline) + len(s.comparison))
                        for t, s in sets.items()})
    return report


def _judge_metric(runs: list[ABRun], options: CompareOptions, how: Judging,
                  problems: list[str]) -> ComparisonReport:
    if how.paired and not options.floor_note and not deterministic(options.metric):
        # a timed metric's pairs are judged with the host's noise: what the session
        # recorded, else the uncalibrated floor and spread (as the session itself judged)
        options = options.with_host(how.host_noise.get(options.metric))
    if how.paired:
        return _judge_paired(runs, options, how, problems)
    return _judge_unpaired(runs, options, how, problems)


def judge(runs: list[ABRun], how: Judging, problems: Iterable[str] = ()) -> ComparisonReport:
    """The verdict of every test of these runs (module doc)."""
    report = _judge_metric(runs, how.options, how, list(problems))
    if how.options.metric != INSTRUCTIONS_METRIC and \
            INSTRUCTIONS_METRIC in metrics_present(runs):
        floor = how.instructions_floor_pct
        options = replace(how.options, metric=INSTRUCTIONS_METRIC,
                          noise_floor_pct=default_noise_floor(INSTRUCTIONS_METRIC)
                          if floor is None else floor, floors={}, spreads={},
                          default_spread=0.0, floor_note="")
        report.instructions = _judge_metric(runs, options, replace(how, record=None), [])
        mark_suspect(report)
    return report


def mark_suspect(report: ComparisonReport) -> None:
    """A decided timed row whose sign contradicts the decided instruction count of the same
    test becomes SUSPECT, with both numbers (module doc, step 6)."""
    if report.instructions is None:
        return
    decided = {r.test: r for r in report.instructions.rows
               if r.verdict in (REGRESSION, IMPROVEMENT)}
    for row in report.rows:
        other = decided.get(row.test)
        if other is None or row.verdict not in (REGRESSION, IMPROVEMENT) or \
                row.verdict == other.verdict:
            continue
        row.reason = (f"SUSPECT: {row.metric} says {row.verdict} {_pct(row)} but "
                      f"instructions per op, decided, say {other.verdict} {_pct(other)}; "
                      "the timed result contradicts the deterministic one and is not a "
                      "verdict (host noise, a saturated client, or a change that is not "
                      "CPU work)")
        row.verdict = SUSPECT
    report.recount()


def _pct(row: Comparison) -> str:
    if row.change_pct is None or row.ci_low_pct is None or row.ci_high_pct is None:
        return "(no interval)"
    return f"{row.change_pct:+.1f} % [{row.ci_low_pct:+.1f}, {row.ci_high_pct:+.1f}]"

