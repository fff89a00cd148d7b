"""``--until-decided``: interleaved pairs in rounds, only for tests still UNKNOWN.

Round 1 runs ``first_round`` pairs of every test (of a deterministic metric, the pairs that
can decide it, in a shorter design: :func:`for_metric`); after each round the pairs so far are
judged by the group-sequential comparison (:mod:`analysis.sequential_compare`), and the
tests still UNKNOWN get ``round_pairs`` more, until each is decided, reaches
``max_pairs``, cannot be decided within them (:func:`_futile`) or the time budget is spent (counted from the start; the first round always
completes, and a pair started before the deadline is finished). Where the pairs come from is a
:data:`PairSource` (the real one, :class:`ABPairSource`, runs redis-server and the client
tool through :func:`runner.ab.run_ab_tests`), so the loop itself can be checked by simulation.
"""

from __future__ import annotations

import math
import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.analysis.compare import UNKNOWN, CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.engine import host_judged, priors_for
from redis_benchmarks_spec.analysis.paired import MIN_PRIOR_PAIRS, NoisePrior
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.sequential_compare import (
    SequentialRecord,
    compare_sequential,
)
from redis_benchmarks_spec.analysis.session_runs import deterministic, pair_runs
from redis_benchmarks_spec.common.metrics import DETERMINISTIC_MAX_PAIRS
from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys
from redis_benchmarks_spec.runner.ab import ABConfig, ABRun, ab_tests, run_ab_tests
from redis_benchmarks_spec.runner.metric_choice import MetricChoice
from redis_benchmarks_spec.suites.suite import Suite

#: (tests, first repetition, repetitions, deadline or None) -> new (baseline, comparison)
#: pairs per test; it must stop starting pairs once the monotonic deadline has passed
PairSource = Callable[[list[str], int, int, float | None],
                      dict[str, list[tuple[float, float]]]]

DECIDED = "decided"
MAX_REACHED = "max repetitions reached"
BUDGET_SPENT = "time budget spent"
NO_PAIRS = "no complete pair in the last round (runs failed)"
#: under 80 characters: the comment's count of stop reasons cuts there
FUTILE = "more pairs cannot decide it (not even {most} without spread)"


@dataclass
class AdaptivePlan:
    """How many pairs per round, how far, how long."""

    design: SequentialPlan
    options: CompareOptions
    first_round: int = 6
    round_pairs: int = 4
    time_budget_s: float | None = None
    # metric -> test -> known noise (analysis.noise), pooled with each test's own pairs
    priors: dict[str, dict[str, NoisePrior]] = field(default_factory=dict)
    # the options a metric is judged with (the session's: ABSessionPlan.options), so the
    # looks judge the metric ``auto`` picks exactly as the final verdict will; None: ``options``
    options_for: Callable[[str], CompareOptions] | None = None
    # the base side of counts is the base's runs stored at its push (``runner.ab_stored``):
    # their spread is a measured least spread, which decides from 3 pairs as a prior does
    stored_base: bool = False

    @property
    def max_pairs(self) -> int:
        return self.design.max_pairs


@dataclass
class TestProgress:
    """Pairs of one test, the pair counts it was judged at, and why it stopped."""

    test: str
    pairs: list[tuple[float, float]] = field(default_factory=list)
    looks: list[int] = field(default_factory=list)
    stop_reason: str = ""
    disturbed: int = 0  # pairs run but left out: other processes disturbed them

    def line(self) -> str:
        looks = ", ".join(str(n) for n in self.looks)
        return f"{len(self.pairs)} pairs (looks at {looks}): {self.stop_reason}"


@dataclass
class AdaptiveOutcome:
    report: ComparisonReport
    progress: dict[str, TestProgress]
    design: SequentialPlan | None = None  # the design the looks used (None: the plan's)


def for_metric(plan: AdaptivePlan, metric: str | None) -> AdaptivePlan:
    """``plan`` as it runs ``metric``: for a deterministic one (counts, memory after the
    preload) a design over at most :data:`~common.metrics.DETERMINISTIC_MAX_PAIRS` pairs and a
    first round of the pairs that can decide (3 with a prior of every test or the metric's
    own ``min_pairs``; 3 too when the base was counted at its push), so a decided test stops
    there and the rounds go to open ones."""
    if metric is None or not catalogued(metric).deterministic:
        return plan
    first, most = deterministic_rounds(metric, plan.first_round, plan.design.max_pairs,
                                       bool(plan.priors.get(metric)) or plan.stored_base)
    return replace(plan, design=replace(plan.design, max_pairs=most), first_round=first)


def deterministic_rounds(metric: str, first_round: int, max_pairs: int,
                         priors: bool = False) -> tuple[int, int]:
    """(first round, most pairs) of a deterministic ``metric`` (:func:`for_metric`; the
    queued line's ETA counts with the same)."""
    most = min(max_pairs, max(first_round, DETERMINISTIC_MAX_PAIRS))
    needed = catalogued(metric).min_pairs
    if priors:
        needed = min(needed, MIN_PRIOR_PAIRS)
    return max(2, min(first_round, needed)), most


def _round_size(plan: AdaptivePlan, done: int) -> int:
    wanted = plan.first_round if done == 0 else plan.round_pairs
    return max(0, min(wanted, plan.max_pairs - done))


def _judging(plan: AdaptivePlan, choice: MetricChoice | None, runs: list[ABRun]
             ) -> tuple[CompareOptions, dict[str, NoisePrior] | None]:
    """The options and priors a look judges with: the metric's own (floor, prior spread,
    calibration), never those of the metric the plan was made with before ``auto`` chose,
    and counts a deployment moves judged as the final verdict judges them (engine)."""
    metric = choice.metric if choice is not None and choice.metric is not None \
        else plan.options.metric
    options = plan.options_for(metric) if plan.options_for is not None else \
        replace(plan.options, metric=metric)
    return host_judged(runs, options, priors_for(plan.priors, metric))


def _judge(progress: dict[str, TestProgress], plan: AdaptivePlan, problems: list[str],
           choice: MetricChoice | None, runs: list[ABRun]) -> ComparisonReport:
    """One look: the pairs so far, judged as the session's final verdict judges them."""
    pairs = {t: p.pairs for t, p in progress.items()}
    looks = {t: p.looks for t, p in progress.items()}
    options, priors = _judging(plan, choice, runs)
    return compare_sequential(pairs, looks, plan.design, options, problems, priors)


def _stop_reason(progress: TestProgress, verdict: str, plan: AdaptivePlan,
                 out_of_time: bool, grew: bool, done: int) -> str:
    if verdict != UNKNOWN:
        return f"{DECIDED} ({verdict})"
    # the cap is on pairs run: disturbed pairs were run, and replaced while the cap allows
    if len(progress.pairs) >= plan.max_pairs or done >= plan.max_pairs:
        return MAX_REACHED
    if out_of_time:
        return BUDGET_SPENT
    return "" if grew or progress.disturbed else NO_PAIRS


#: where :func:`_futile` continues an open test's estimate: at today's, one standard error
#: farther from no change (the estimate can still grow), at no change (it can shrink to 0)
CONTINUATIONS = ("today", "farther", "none")


def _ratio(usable: list[tuple[float, float]], where: str) -> float:
    """The comparison/baseline ratio the pairs left are continued at (:data:`CONTINUATIONS`)."""
    logs = [math.log(c / b) for b, c in usable]
    mean = statistics.fmean(logs)
    if where == "none":
        return 1.0
    if where == "today":
        return math.exp(mean)
    return math.exp(mean + math.copysign(statistics.stdev(logs) / math.sqrt(len(logs)), mean))


def _continued(progress: dict[str, TestProgress], open_tests: list[str], plan: AdaptivePlan,
               where: str, done: int) -> tuple[dict[str, TestProgress], list[str]]:
    """Every open test's pairs continued with no spread by the pairs the cap leaves (pairs
    run, disturbed ones included, count against it: ``done``), at ``where``."""
    out: dict[str, TestProgress] = {}
    continued = []
    for test, prog in progress.items():
        left = plan.max_pairs - max(len(prog.pairs), done)
        usable = [(b, c) for b, c in prog.pairs if b > 0 and c > 0]
        if test not in open_tests or left <= 0 or len(usable) < 2:
            out[test] = prog
            continue
        ratio, base = _ratio(usable, where), usable[-1][0]
        out[test] = replace(prog, pairs=[*prog.pairs, *[(base, base * ratio)] * left],
                            looks=[*prog.looks, len(prog.pairs) + left])
        continued.append(test)
    return out, continued


def _futile(progress: dict[str, TestProgress], open_tests: list[str], plan: AdaptivePlan,
            choice: MetricChoice | None, runs: list[ABRun], done: int) -> set[str]:
    """The open tests more pairs are not expected to decide. Each is judged again (the same
    judgment, design and multiplicity) as if every pair the cap leaves had no spread, three
    times: at today's estimate (the interval only narrows), one standard error of today's
    pairs farther from no change (the estimate grows as far as its own uncertainty allows:
    the best case for the change it shows), and at no change (the best case for NO CHANGE).
    A test UNKNOWN in all three is stopped, since real pairs spread and a count whose base was
    counted once at its push narrows slower still; its pairs go to tests that can still close.
    This is a projection, not a proof: an estimate that moves by more than a standard error
    could have decided. Deterministic metrics only (counts, memory after the preload), and
    not where the deployment moves the count (``options.host_dependent``): a timed estimate
    after a few pairs, or a host-dependent count, still moves by more than its floor."""
    metric = choice.metric if choice is not None and choice.metric is not None \
        else plan.options.metric
    if not catalogued(metric).deterministic:
        return set()
    moved = _judging(plan, choice, runs)[0].host_dependent
    open_tests = [t for t in open_tests if t not in moved]
    futile: set[str] | None = None
    for where in CONTINUATIONS:
        projected, candidates = _continued(progress, open_tests, plan, where, done)
        if not candidates:
            return set()
        verdicts = {r.test: r.verdict
                    for r in _judge(projected, plan, [], choice, runs).rows}
        stuck = {t for t in candidates if verdicts.get(t, UNKNOWN) == UNKNOWN}
        futile = stuck if futile is None else futile & stuck
    return futile or set()


def until_decided(tests: list[str], source: PairSource, plan: AdaptivePlan,
                  clock: Callable[[], float] = time.monotonic,
                  problems: list[str] | None = None,
                  choice: MetricChoice | None = None) -> AdaptiveOutcome:
    """Rounds of pairs until every test is decided or out of pairs or time. ``choice`` is
    the metric the source resolves from its first round (``--metric auto``), when it may
    differ from ``plan.options.metric``."""
    plan = for_metric(plan, choice.metric if choice is not None else plan.options.metric)
    deadline = None if plan.time_budget_s is None else clock() + plan.time_budget_s
    progress = {t: TestProgress(t) for t in tests}
    problems = problems if problems is not None else []
    done = 0
    report = _judge(progress, plan, problems, choice, getattr(source, "runs", []))
    while True:
        open_tests = [t for t, p in progress.items() if not p.stop_reason]
        size = _round_size(plan, done)
        if not open_tests or size == 0:
            break
        # the first round always completes: without it there is nothing to judge
        new = source(open_tests, done, size, deadline if done else None)
        done += size
        grew = {t: bool(new.get(t)) for t in open_tests}
        disturbed = getattr(source, "last_disturbed", {})
        for test in open_tests:
            progress[test].disturbed += disturbed.get(test, 0)
            progress[test].pairs.extend(new.get(test, []))
            if grew[test] and len(progress[test].pairs) >= 2:
                progress[test].looks.append(len(progress[test].pairs))
        report = _judge(progress, plan, problems, choice, getattr(source, "runs", []))
        out_of_time = deadline is not None and clock() >= deadline
        verdicts = {r.test: r.verdict for r in report.rows}
        for test in open_tests:
            progress[test].stop_reason = _stop_reason(
                progress[test], verdicts.get(test, UNKNOWN), plan, out_of_time, grew[test],
                done)
        still = [t for t in open_tests if not progress[t].stop_reason]
        for test in _futile(progress, still, plan, choice, getattr(source, "runs", []),
                             done):
            progress[test].stop_reason = FUTILE.format(most=plan.max_pairs)
    for p in progress.values():
        p.stop_reason = p.stop_reason or MAX_REACHED
    rows = tuple(replace(row, reason=f"{row.reason}; {progress[row.test].line()}")
                 for row in report.rows)
    return AdaptiveOutcome(replace(report, rows=rows), progress, plan.design)


def session_record(plan: AdaptivePlan, outcome: AdaptiveOutcome, metric: str,
                   why: str = "") -> SequentialRecord:
    """What a later report needs to judge the session as the loop did (``sequential.json``)."""
    done = outcome.progress.values()
    return SequentialRecord(outcome.design or plan.design, metric, {p.test: p.looks for p in done},
                            {p.test: p.stop_reason for p in done},
                            {p.test: len(p.pairs) for p in done}, why,
                            {p.test: p.disturbed for p in done if p.disturbed})


class ABPairSource:
    """A :data:`PairSource` running real interleaved A/B pairs of the session's tests (a
    suite in one topology each, :func:`runner.ab.ab_tests`); every run is appended to
    ``runs`` (failed ones too, for the report). ``metric`` is resolved from the first round."""

    def __init__(self, config: ABConfig, suites: list[Suite], metric: MetricChoice,
                 runs: list[ABRun], on_run: Callable[[ABRun], None] | None = None,
                 on_start: Callable[[str, int, Suite], None] | None = None) -> None:
        self.config, self.metric, self.runs = config, metric, runs
        self.on_run, self.on_start = on_run, on_start
        self.by_key = {t.key: t for t in ab_tests(config.session, suites)}
        self.keys = ComparisonKeys((t.suite.name, t.topology) for t in self.by_key.values()
                                   if not t.skipped)
        self.last_disturbed: dict[str, int] = {}  # per test, pairs of the last round left out

    @property
    def tests(self) -> list[str]:
        """The labels the loop is run over, in plan order."""
        return list(self.by_key)

    def __call__(self, tests: list[str], first: int, count: int,
                 deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        # lanes only for a deterministic metric: a timed run keeps the host to itself
        counted = deterministic(self.metric.metric or "")
        cfg = replace(self.config, repetitions=count, first_repetition=first,
                      deadline=deadline, lanes=self.config.lanes if counted else [])
        new = run_ab_tests(cfg, [self.by_key[t] for t in tests if t in self.by_key],
                           on_run=self.on_run, on_start=self.on_start)
        self.runs.extend(new)
        sets = pair_runs(new, self.metric.resolve(new, self.keys), self.keys)
        self.last_disturbed = {t: s.disturbed for t, s in sets.items()}
        return {t: s.pairs for t, s in sets.items()}
