"""The one verdict engine: runs in, a :class:`ComparisonReport` out.

Every surface calls :func:`judge` with the runs it has (in memory after an A/B, read once
from a session folder, or from two results folders) and gets the same verdicts, intervals and
pair counts for the same runs: the A/B table, ``--format json|markdown``, ``rbs compare``
of folders, ``rbs report``/HTML, the pull-request comment, the agent's A/B and bisect.

What it does, in order:

1. label the tests (a suite in one topology, ``results.comparison_key``);
2. pair or sample the runs with the one rule of :mod:`analysis.session_runs` (deterministic
   metrics keep every pair; a disturbed pair of a time metric is counted, not used); the
   counts of a deployment that moves them (io-threads, replicas, a cluster) are judged as
   host-dependent (:func:`host_judged`), and their rows say so;
3. measure each test (paired: ``analysis.paired``, for instruction counts with the test's
   noise recorded by calibration A/A sessions; an ``--until-decided`` session at the looks
   its record took)
   and decide it after one Benjamini-Hochberg step (``analysis.compare``);
4. a test left UNKNOWN with disturbed pairs becomes ``BUSY: k of n pairs disturbed``;
5. when the runs counted instructions and the metric is another, the same runs are judged on
   instructions per op too (``report.instructions``), so every format carries both; a
   verdict metric the runs measured but this report does not judge (throughput, under
   ``--metric instructions_per_op``) is named in ``report.hidden``;
6. a timed verdict of the opposite sign to the decided instruction count of the same test is
   SUSPECT (both numbers in its reason): evidence that contradicts itself is not a verdict,
   and it never sets an exit code (issue 28);
7. when the runs measured memory after their preload (``results.memory``), the same runs are
   judged on each memory figure (``report.memory``: a row per test and figure, named as INFO
   names it), as deterministic as instruction counts: every pair kept, the test's A/A noise
   pooled, a noise floor of its own. With the metric :data:`MEMORY_METRIC`
   (``rbs run --memory-only``) that table is the report.

Timed metrics are judged against each test's noise floor from this host's calibration
and its least pair spread (``HostNoise``, :meth:`analysis.noise.NoiseBook.host_noise`), or
against the uncalibrated :data:`~analysis.verdict.DEFAULT_NOISE_FLOOR_PCT` and
:data:`~analysis.verdict.UNCALIBRATED_PAIR_SD`; the report's ``floor_note`` says which.
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass, field, replace

import numpy as np

from redis_benchmarks_spec.analysis.compare import (
    BUSY,
    DEFAULT_METRIC,
    IMPROVEMENT,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
    compare_paired,
    compare_samples,
    compare_samples_many,
)
from redis_benchmarks_spec.analysis.context import CompareContext
from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.sequential_compare import SequentialRecord, compare_recorded
from redis_benchmarks_spec.analysis.session_files import SessionPriors
from redis_benchmarks_spec.analysis.session_runs import (
    BASELINE,
    SIDES,
    STORED_BASE,
    ABRun,
    PairSet,
    SampleSet,
    deterministic,
    host_dependent_tests,
    keys_of,
    metrics_present,
    only_under_profiler,
    pair_runs,
    sample_runs,
)
from redis_benchmarks_spec.analysis.verdict import HostNoise, default_noise_floor
from redis_benchmarks_spec.common.metrics import (
    INSTRUCTIONS_METRIC,
    MEMORY_FLOOR_PCT,
    MEMORY_METRICS,
    MEMORY_SESSION,
)

#: the metrics a session is judged on by default, when its runs measured them
VERDICT_METRICS = (DEFAULT_METRIC, INSTRUCTIONS_METRIC)
#: the metric of a memory-only session: every memory figure, a row per test and figure
MEMORY_METRIC = MEMORY_SESSION
MEMORY_NOISE_FLOOR_PCT = MEMORY_FLOOR_PCT


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
    # host-noise.json); applied when the options carry none
    host_noise: dict[str, HostNoise] = field(default_factory=dict)
    memory_floor_pct: float | None = None  # None: MEMORY_NOISE_FLOOR_PCT
    context: CompareContext | None = None  # the report's header: what was compared
    metric_why: str = ""  # why the metric was chosen (``--metric auto``), after the method


def catalogue_options(metric: str, alpha: float = 0.05) -> CompareOptions:
    """The options ``metric`` is judged with where no host calibration applies (points read
    from the datasink, two folders): the catalogue's floor of the metric
    (``common.metrics``, through :func:`~analysis.verdict.default_noise_floor`) and
    ``alpha``. ``rbs compare``, both routes of the pull-request comment and the site's
    compare page ask here, so none of them judges with a floor of its own."""
    return CompareOptions(noise_floor_pct=default_noise_floor(metric), alpha=alpha,
                          metric=metric)


def judge_pairs(pairs: dict[str, list[tuple[float, float]]], options: CompareOptions,
                problems: list[str] | None = None,
                priors: dict[str, NoisePrior] | None = None,
                record: SequentialRecord | None = None) -> ComparisonReport:
    """Paired values per test (bisect through agents has values, not documents)."""
    if record is not None and record.metric == options.metric:
        report = compare_recorded(pairs, record, options, priors)
        return replace(report, problems=(*report.problems, *(problems or [])))
    return compare_paired(pairs, options, problems, priors)


def judge_samples(samples: dict[str, tuple[list[float], list[float]]], options: CompareOptions,
                  problems: list[str] | None = None) -> ComparisonReport:
    """Independent values per test and side, without their documents (datasink points of
    two branches, versions, commits or platforms): the unpaired comparison."""
    return compare_samples(samples, options, problems)


def judge_samples_many(samples: dict[str, dict[str, tuple[list[float], list[float]]]],
                       options: CompareOptions,
                       problems: dict[str, list[str]] | None = None,
                       ) -> dict[str, ComparisonReport]:
    """:func:`judge_samples` of each of several comparisons (a compare page's platforms),
    measured together: each report the one :func:`judge_samples` gives it alone."""
    return compare_samples_many(samples, options, problems)


def _busy_row(row: Comparison, left_out: int, total: int) -> Comparison:
    """UNKNOWN with disturbed pairs is BUSY; a decided row says what it left out."""
    if not left_out:
        return replace(row, n_disturbed=0)
    what = f"{left_out} of {total} {'pairs' if row.paired else 'runs'} disturbed " \
           "(other processes used the test's CPUs)"
    # pairs to run, counting those that get left out
    needed = None if row.runs_needed is None else row.runs_needed + left_out
    if row.verdict == UNKNOWN:
        return replace(row, n_disturbed=left_out, runs_needed=needed, verdict=BUSY,
                       reason=f"BUSY: {what}; {row.reason}")
    return replace(row, n_disturbed=left_out, runs_needed=needed,
                   reason=f"{row.reason}; {what}, left out")


def _with_busy(report: ComparisonReport,
               disturbed: dict[str, tuple[int, int]]) -> ComparisonReport:
    return replace(report, rows=tuple(_busy_row(r, *disturbed.get(r.test, (0, 0)))
                                      for r in report.rows))


def priors_for(priors: SessionPriors, metric: str) -> dict[str, NoisePrior] | None:
    """The tests' noise priors ``metric`` is judged with: a prior holds only while the noise
    is what it was at calibration, true of deterministic metrics only (``common.metrics``).
    The ``--until-decided`` loop and the final verdict both ask here."""
    return priors.get(metric) if deterministic(metric) else None


def stored_base_spreads(runs: list[ABRun], metric: str) -> dict[str, tuple[float, int]]:
    """Per test whose baseline side is k stored runs (flagged ``STORED_BASE``: the base
    commit counted at its push, ``runner.ab_stored``) in n > k pairs, the least spread of its per-pair log
    ratios that counts the base's own run-to-run spread: the mean log ratio's variance is
    var(head)/n + var(base)/k for n pairs over k base runs, and the base's spread is taken as
    the head's (the same suite, tool and platform), so the least pair spread is
    sd(head) * sqrt(1 + n/k). Without it, one base run (its process's hash seed, its cron
    ticks) stood as an exact value and a same-binary head was judged a change."""
    keys = keys_of(runs)
    bases: dict[str, set[str]] = {}
    for run in runs:
        if run.side == BASELINE and STORED_BASE in run.result.flags and \
                metric in run.result.metrics:
            bases.setdefault(keys(run.result), set()).add(run.result.run_id)
    out: dict[str, tuple[float, int]] = {}
    for test, found in pair_runs(runs, metric, keys).items():
        n, k = len(found.pairs), len(bases.get(test, ()))
        if n < 2 or not 0 < k < n:
            continue
        heads = np.log(np.asarray([c for _, c in found.pairs], dtype=float))
        out[test] = (float(np.std(heads, ddof=1)) * math.sqrt(1 + n / k), k)
    return out


def _stored_base_judged(runs: list[ABRun], options: CompareOptions,
                        priors: dict[str, NoisePrior] | None
                        ) -> tuple[CompareOptions, dict[str, NoisePrior] | None]:
    """The options judging tests whose base was counted once (:func:`stored_base_spreads`):
    their least spread is the two-sample one, and an A/A prior of pairs (both sides run
    now) does not stand in for it."""
    widened = stored_base_spreads(runs, options.metric)
    if not widened:
        return options, priors
    sources = {t: f"the base counted at its push ({k} run(s)), its spread taken as the "
                  "head's" for t, (_, k) in widened.items()}
    spreads = {t: max(sd, options.spreads.get(t, 0.0)) for t, (sd, _) in widened.items()}
    options = replace(options, spreads={**options.spreads, **spreads},
                      spread_sources={**options.spread_sources, **sources})
    kept = {t: p for t, p in (priors or {}).items() if t not in widened}
    return options, kept or None


def host_judged(runs: list[ABRun], options: CompareOptions,
                priors: dict[str, NoisePrior] | None
                ) -> tuple[CompareOptions, dict[str, NoisePrior] | None]:
    """``options`` and ``priors`` for the tests whose counts their deployment moves
    (``session_runs.host_dependent_tests``): named in the options, and a calibration of such a
    test widens its interval (a least spread) instead of pooling, since the spread it
    measured need not hold under another load. The ``--until-decided`` loop asks here too."""
    options, priors = _stored_base_judged(runs, options, priors)
    moved = host_dependent_tests(runs, options.metric, keys_of(runs))
    if not moved:
        return options, priors
    priors = priors or {}
    spreads = {**options.spreads, **{t: p.sd for t, p in priors.items() if t in moved}}
    kept = {t: p for t, p in priors.items() if t not in moved}
    return replace(options, host_dependent=moved, spreads=spreads), kept or None


def _judge_paired(runs: list[ABRun], options: CompareOptions, how: Judging,
                  problems: list[str]) -> ComparisonReport:
    sets: dict[str, PairSet] = pair_runs(runs, options.metric, keys_of(runs), how.tests)
    options, priors = host_judged(runs, options, priors_for(how.priors, options.metric))
    report = judge_pairs({t: s.pairs for t, s in sets.items()}, options, problems, priors,
                         how.record)
    return _with_busy(report, {t: (s.disturbed, s.complete) for t, s in sets.items()})


def _absent_side(row: Comparison, found: SampleSet | None) -> Comparison:
    """A test one side has no run of at all is UNKNOWN for that, whatever the other side's
    runs were (disturbed ones too): the reason names the side that lacks it."""
    missing = [side for side in SIDES if found is None or side not in found.sides]
    if not missing or len(missing) == len(SIDES):
        return row
    return replace(row, verdict=UNKNOWN, runs_needed=None,
                   reason=f"no run of this test on the {missing[0]} side")


def _judge_unpaired(runs: list[ABRun], options: CompareOptions, how: Judging,
                    problems: list[str]) -> ComparisonReport:
    sets: dict[str, SampleSet] = sample_runs(runs, options.metric, keys_of(runs))
    for test in how.tests:
        sets.setdefault(test, SampleSet())
    report = compare_samples({t: (s.baseline, s.comparison) for t, s in sets.items()},
                             options, problems)
    report = _with_busy(report, {t: (s.disturbed, s.disturbed + len(s.baseline) +
                                     len(s.comparison)) for t, s in sets.items()})
    return replace(report, rows=tuple(_absent_side(r, sets.get(r.test)) for r in report.rows))


def _judge_metric(runs: list[ABRun], options: CompareOptions, how: Judging,
                  problems: list[str]) -> ComparisonReport:
    if how.paired and not options.floor_note and not deterministic(options.metric):
        # a timed metric's pairs are judged with the host's noise: what the session
        # recorded, else the uncalibrated floor and spread (as the session itself judged)
        options = options.with_host(how.host_noise.get(options.metric))
    if how.paired:
        return _judge_paired(runs, options, how, problems)
    return _judge_unpaired(runs, options, how, problems)


def judge_memory(runs: list[ABRun], how: Judging,
                 problems: Iterable[str] = ()) -> ComparisonReport | None:
    """Every memory figure the runs measured after their preload, judged like instruction
    counts; one Benjamini-Hochberg family per figure, the rows of all figures in one report
    (None when no run measured memory)."""
    present = metrics_present(runs)
    floor = MEMORY_NOISE_FLOOR_PCT if how.memory_floor_pct is None else how.memory_floor_pct
    parts = [_judge_metric(runs, how.options.for_deterministic(m, floor),
                           replace(how, record=None), []) for m in MEMORY_METRICS if m in present]
    if not parts:
        return None
    order = {m: i for i, m in enumerate(MEMORY_METRICS)}
    rows = sorted((r for p in parts for r in p.rows), key=lambda r: (r.test, order[r.metric]))
    return ComparisonReport(tuple(rows), how.options.for_deterministic(MEMORY_METRIC, floor),
                            tuple(problems), parts[0].method)


def judged_deterministic(report: ComparisonReport) -> list[str]:
    """The deterministic metrics a report judged (its own, instructions, memory figures):
    those whose A/A spread is the test's and goes into the noise book."""
    out = [r.metric for sub in (report, report.instructions, report.memory)
           if sub is not None for r in sub.rows if deterministic(r.metric)]
    return list(dict.fromkeys(out))


def judge(runs: list[ABRun], how: Judging, problems: Iterable[str] = ()) -> ComparisonReport:
    """The verdict of every test of these runs (module doc), with ``how.context`` as its
    header and ``how.metric_why`` after its method: the report is final when it returns."""
    if how.options.metric == MEMORY_METRIC:
        memory = judge_memory(runs, how, problems)
        report = memory or _judge_metric(runs, how.options, how, list(problems))
    else:
        how, instrumented = _off_profiler(runs, how)
        report = _with_others(runs, how, _judge_metric(runs, how.options, how, list(problems)))
        report = replace(report, instrumented=instrumented)
    method = f"{report.method}; metric {how.options.metric}: {how.metric_why}" \
        if how.metric_why else report.method
    return replace(report, context=how.context, method=method)


def _off_profiler(runs: list[ABRun], how: Judging) -> tuple[Judging, tuple[str, ...]]:
    """``how``, judging instructions per op instead of a timed metric the runs measured only
    under a profiler (callgrind: the server ran ~6x slower), and the timed verdict metrics so
    measured: named in the report, never judged as the server's speed."""
    instrumented = tuple(m for m in dict.fromkeys((how.options.metric, *VERDICT_METRICS))
                         if only_under_profiler(runs, m))
    if how.options.metric not in instrumented or \
            INSTRUCTIONS_METRIC not in metrics_present(runs):
        return how, instrumented
    floor = how.instructions_floor_pct
    options = how.options.for_deterministic(
        INSTRUCTIONS_METRIC, default_noise_floor(INSTRUCTIONS_METRIC) if floor is None else floor)
    return replace(how, options=options, record=None), instrumented


def _with_others(runs: list[ABRun], how: Judging, report: ComparisonReport) -> ComparisonReport:
    """The report with the same runs judged on memory and instructions (SUSPECT rows marked)
    and the verdict metrics it does not judge named (module doc, steps 5 to 7)."""
    present = metrics_present(runs)
    instructions = None
    if how.options.metric != INSTRUCTIONS_METRIC and INSTRUCTIONS_METRIC in present:
        floor = how.instructions_floor_pct
        options = how.options.for_deterministic(
            INSTRUCTIONS_METRIC, default_noise_floor(INSTRUCTIONS_METRIC) if floor is None
            else floor)
        instructions = _judge_metric(runs, options, replace(how, record=None), [])
    judged = {how.options.metric, *([INSTRUCTIONS_METRIC] if instructions else [])}
    report = replace(report, memory=judge_memory(runs, how), instructions=instructions,
                     hidden=tuple(m for m in VERDICT_METRICS if m in present and m not in judged
                                  and not only_under_profiler(runs, m)))
    return mark_suspect(report)


def mark_suspect(report: ComparisonReport) -> ComparisonReport:
    """The report with each decided timed row whose sign contradicts the decided instruction
    count of the same test made SUSPECT, with both numbers (module doc, step 6)."""
    if report.instructions is None:
        return report
    decided = {r.test: r for r in report.instructions.rows
               if r.verdict in (REGRESSION, IMPROVEMENT)}
    return replace(report, rows=tuple(_suspect_row(row, decided.get(row.test))
                                      for row in report.rows))


def _suspect_row(row: Comparison, other: Comparison | None) -> Comparison:
    if other is None or row.verdict not in (REGRESSION, IMPROVEMENT) or \
            row.verdict == other.verdict:
        return row
    return replace(row, verdict=SUSPECT, reason=(
        f"SUSPECT: {row.metric} says {row.verdict} {_pct(row)} but instructions per op, "
        f"decided, say {other.verdict} {_pct(other)}; the timed result contradicts the "
        "deterministic one and is not a verdict (host noise, a saturated client, or a "
        "change that is not CPU work)"))


def _pct(row: Comparison) -> str:
    if row.change_pct is None or row.ci_low_pct is None or row.ci_high_pct is None:
        return "(no interval)"
    return f"{row.change_pct:+.1f} % [{row.ci_low_pct:+.1f}, {row.ci_high_pct:+.1f}]"
