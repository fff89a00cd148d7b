"""An A/B session from plan to verdict: the one owner of interleaved A/B work.

``rbs run --baseline-server ...`` and the agent's pull-request A/B (and so the PR comment)
both describe what they want in an :class:`ABSessionPlan` and get an :class:`ABSessionResult`
back: every run, the report of :func:`analysis.engine.judge` (the one verdict engine), and
for ``--until-decided`` the record of its looks. Planning the tests, choosing the metric
(``--metric auto``), replacing disturbed pairs, the rounds of the group-sequential design and
the judging happen here once, and so do the writes of what the session produces besides its
runs (the noise it is judged with, the ``--until-decided`` record, an A/A session's noise
book entries: :mod:`runner.ab_files`); the CLI prints the result, the agent stores and
comments it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.context import (
    CompareContext,
    context_from_results,
    side_from_results,
)
from redis_benchmarks_spec.analysis.engine import MEMORY_METRIC, Judging, SessionPriors, judge
from redis_benchmarks_spec.analysis.noise import NoiseBook
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.sequential_compare import SequentialRecord
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun, deterministic
from redis_benchmarks_spec.analysis.verdict import HostNoise
from redis_benchmarks_spec.results.comparison_key import with_topology
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner import ab_files
from redis_benchmarks_spec.runner.ab import (
    ABConfig,
    ab_tests,
    disturbed_problems,
    run_ab_replacing,
)
from redis_benchmarks_spec.runner.adaptive import (
    ABPairSource,
    AdaptivePlan,
    session_record,
    until_decided,
)
from redis_benchmarks_spec.runner.metric_choice import AUTO, THROUGHPUT_METRIC, MetricChoice
from redis_benchmarks_spec.suites.suite import Suite


@dataclass
class Rounds:
    """``--until-decided``: the design and how pairs are added after the first round."""

    design: SequentialPlan
    round_pairs: int = 4
    time_budget_s: float | None = None


@dataclass
class ABSessionPlan:
    """What an A/B session runs and how it decides."""

    config: ABConfig  # the sides, the shared session, the first round's repetitions
    suites: list[Suite]
    metric: str = THROUGHPUT_METRIC  # or AUTO (the server's CPU per op when client-bound)
    alpha: float = 0.05
    noise_floor_pct: float | None = None  # None: the metric's default
    instructions_floor_pct: float | None = None
    max_pairs: int = 20  # fixed sessions: disturbed pairs are replaced up to this many
    rounds: Rounds | None = None  # None: a fixed number of pairs
    replace_disturbed: bool = True
    priors: SessionPriors = field(default_factory=dict)
    side_labels: tuple[str, str] | None = None  # the report header's (default: binaries)
    # timed metrics' noise on this host from its calibration (analysis.noise), per metric;
    # a floor given by the user (noise_floor_pct) replaces the calibrated floors
    host_noise: dict[str, HostNoise] = field(default_factory=dict)
    # the noise book an A/A session (the same binary on both sides) records its spreads in
    # (None: not recorded)
    noise_book: NoiseBook | None = None

    def options(self, metric: str) -> CompareOptions:
        base = CompareOptions.for_metric(metric, alpha=self.alpha)
        if deterministic(metric):
            return base if self.noise_floor_pct is None else \
                replace(base, noise_floor_pct=self.noise_floor_pct)
        options = base.with_host(self.host_noise.get(metric))
        if self.noise_floor_pct is not None:
            options = replace(options, noise_floor_pct=self.noise_floor_pct, floors={})
        return options


@dataclass
class ABSessionResult:
    """Every run, the engine's report (with its header and problems) and, for rounds, the
    record of the looks taken."""

    runs: list[ABRun]
    report: ComparisonReport
    record: SequentialRecord | None
    metric_why: str = ""
    noise_recorded: int = 0  # test/metric spreads an A/A session put in the noise book

    @property
    def failed(self) -> list[RunResult]:
        return [r.result for r in self.runs if not r.result.ok]

    @property
    def disturbed(self) -> list[str]:
        return disturbed_problems([r.result for r in self.runs], self.report.options.metric)


OnRun = Callable[[ABRun], None]
OnStart = Callable[[str, int, Suite], None]


def _rounds(plan: ABSessionPlan, rounds: Rounds, choice: MetricChoice, on_run: OnRun | None,
            on_start: OnStart | None) -> tuple[list[ABRun], SequentialRecord]:
    runs: list[ABRun] = []
    adaptive = adaptive_plan(plan, rounds, choice)
    source = ABPairSource(plan.config, plan.suites, choice, runs, on_run, on_start)
    outcome = until_decided(source.tests, source, adaptive, choice=choice)
    return runs, session_record(adaptive, outcome, choice.metric or THROUGHPUT_METRIC,
                                choice.why)


def adaptive_plan(plan: ABSessionPlan, rounds: Rounds, choice: MetricChoice) -> AdaptivePlan:
    """The ``--until-decided`` loop of this session: its looks judge each metric with the
    same options and priors :func:`run_session`'s final verdict uses."""
    return AdaptivePlan(rounds.design, plan.options(choice.metric or THROUGHPUT_METRIC),
                        first_round=plan.config.repetitions, round_pairs=rounds.round_pairs,
                        time_budget_s=rounds.time_budget_s, priors=plan.priors,
                        options_for=plan.options,
                        stored_base=plan.config.stored is not None and
                        bool(plan.config.stored.runs))


def _header(plan: ABSessionPlan, runs: list[ABRun]) -> CompareContext:
    docs = {side: [r.result for r in runs if r.side == side and r.result.ok]
            for side in (BASELINE, COMPARISON)}
    labels = plan.side_labels or (f"redis-server {plan.config.baseline.redis_server}",
                                  f"redis-server {plan.config.comparison.redis_server}")
    return context_from_results(
        side_from_results(labels[0], docs[BASELINE]),
        side_from_results(labels[1], docs[COMPARISON]),
        docs[BASELINE] + docs[COMPARISON], paired=True)


def run_session(plan: ABSessionPlan, on_run: OnRun | None = None,
                on_start: OnStart | None = None) -> ABSessionResult:
    """Run the session and judge it (module doc). ``on_start(side, repetition, suite)`` may
    raise to stop it (the agent, when told to stop); nothing is judged then."""
    tests = ab_tests(plan.config.session, plan.suites)
    choice = MetricChoice(plan.metric, plan.config.session.thresholds)
    root = plan.config.session.results_dir
    ab_files.write_judging(root, plan.priors, plan.host_noise)
    ab_files.write_sides(root, plan.side_labels)
    record = None
    if plan.rounds is not None:
        runs, record = _rounds(plan, plan.rounds, choice, on_run, on_start)
    else:
        metric = THROUGHPUT_METRIC if plan.metric == AUTO else plan.metric
        most = plan.max_pairs if plan.replace_disturbed else plan.config.repetitions
        runs = run_ab_replacing(plan.config, tests, metric, most, on_run=on_run,
                                on_start=on_start)
    metric = choice.resolve(runs)
    failed = [f"{with_topology(r.result)} ({r.side}): {r.result.reason}"
              for r in runs if not r.result.ok]
    how = Judging(plan.options(metric), paired=True, record=record, priors=plan.priors,
                  tests=[t.key for t in tests],
                  instructions_floor_pct=plan.instructions_floor_pct,
                  memory_floor_pct=plan.noise_floor_pct if metric == MEMORY_METRIC else None,
                  context=_header(plan, runs),
                  # rounds: the record says why (analysis.sequential_compare)
                  metric_why=choice.why if plan.rounds is None else "")
    report = judge(runs, how, [*failed, *disturbed_problems([r.result for r in runs], metric)])
    ab_files.write_record(root, record)
    recorded = 0 if plan.noise_book is None else \
        ab_files.record_aa(plan.noise_book, plan.config, runs, report)
    return ABSessionResult(runs, report, record, choice.why, recorded)


def with_rounds(plan: ABSessionPlan, design: SequentialPlan, round_pairs: int,
                time_budget_s: float | None) -> ABSessionPlan:
    """The plan run as ``--until-decided``."""
    return replace(plan, rounds=Rounds(design, round_pairs, time_budget_s))
