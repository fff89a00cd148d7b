"""``rbs bisect --local``: build and measure the commits of ``good..bad`` on this machine.

1. The commits of the range (``git rev-list --ancestry-path good..bad``), oldest first.
2. Builds in **one work tree** (a ``git clone`` of the repository, checked out
   commit by commit): ``make`` only recompiles what a checkout changed, so after the first
   full build a midpoint costs one or two object files and a link. Each built redis-server
   is kept under ``<work>/bin/<sha>/`` and reused by later runs (the build cache). Compiling
   is :func:`builder.compile.run_make` with the build variant, in the builder's sandbox.
3. Measurements are interleaved A/B pairs against the good build (:func:`runner.ab.run_ab`),
   judged by the paired comparison, on instructions per op (the ``instructions`` profiler:
   callgrind, or ``perf stat`` where the host counts instructions) or on throughput.
4. The search and its decision rule are :mod:`.search`, shared with the remote mode.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, replace
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import BUSY, CompareOptions
from redis_benchmarks_spec.analysis.session_runs import ABRun, deterministic
from redis_benchmarks_spec.bisection.gitrange import commit_range
from redis_benchmarks_spec.bisection.search import (
    METRIC_AUTO,
    METRIC_INSTRUCTIONS,
    METRIC_THROUGHPUT,
    BisectError,
    BisectOutcome,
    Budget,
    BudgetSpent,
    HostBusy,
    Measurement,
    Prober,
    search,
)
from redis_benchmarks_spec.builder.commit_builds import CommitBuildError, CommitBuilds
from redis_benchmarks_spec.builder.source import SourceError
from redis_benchmarks_spec.builder.variants import BuildVariant
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.document import DISTURBED
from redis_benchmarks_spec.runner.ab import ABConfig, Pace, Side, out_of_time
from redis_benchmarks_spec.runner.ab_session import ABSessionPlan, run_session
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.telemetry.profilers import instructions
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions
from redis_benchmarks_spec.telemetry.window import WindowOptions

Say = Callable[[str], None]


def _quiet(_line: str) -> None:
    return None


@dataclass
class BisectPlan:
    repo: Path
    good: str
    bad: str
    suite: Suite
    variant: BuildVariant
    work_dir: Path
    session: SessionConfig
    options: CompareOptions  # its metric: the throughput metric
    budget: Budget
    metric: str = METRIC_AUTO  # auto | instructions | throughput
    profile_requests: int = ProfilerOptions.requests


class Builds:
    """redis-server per commit, built in one work tree and cached by sha and build flags:
    the builder's :class:`~builder.commit_builds.CommitBuilds` under the work folder, the
    cache ``rbs run --baseline-commit`` shares."""

    def __init__(self, plan: BisectPlan) -> None:
        self.plan = plan
        self.commits = CommitBuilds(plan.repo, plan.variant, plan.work_dir)

    @property
    def made(self) -> int:
        return self.commits.made

    @property
    def shas(self) -> set[str]:
        return self.commits.shas

    def cached(self, sha: str) -> bool:
        """``sha``'s redis-server is built already (this bisection or an earlier one)."""
        return self.commits.cached(sha)

    def server(self, sha: str, say: Say = _quiet) -> tuple[Path, float]:
        """The redis-server of ``sha`` and the seconds its build took (0 when cached);
        ``say`` hears what make is doing while it builds, and the build's duration."""
        def progress(seconds: float, phase: str) -> None:
            say(f"  {sha[:12]}: {seconds:.0f} s, {phase}")

        try:
            built = self.commits.server(sha, progress)
        except (CommitBuildError, SourceError) as exc:
            raise BisectError(str(exc)) from exc
        if not built.cached:
            say(f"  built {sha[:12]} in {built.seconds:.0f} s ({built.how()})")
        return built.binary, built.seconds


class LocalProber:
    """Interleaved pairs on this machine, judged on one metric."""

    def __init__(self, plan: BisectPlan, builds: Builds, good_sha: str,
                 window: WindowOptions, options: CompareOptions, say: Say = _quiet) -> None:
        self.plan = plan
        self.builds = builds
        self.good_sha = good_sha
        self.window = window
        self.options = options
        self.metric = options.metric
        self.say = say
        self.pace = Pace()  # how long this metric's pairs take: the budget's estimate

    def built(self) -> int:
        return len(self.builds.shas)

    def pair_seconds(self) -> float | None:
        return self.pace.estimate()

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        for commit in dict.fromkeys((self.good_sha, sha)):
            if not self.builds.cached(commit):
                self.say(f"  building {commit[:12]} ({self.plan.variant.id})")
        good_server, _ = self.builds.server(self.good_sha, self.say)
        candidate, build_s = self.builds.server(sha, self.say)
        tag = "instructions" if self.window.profilers.names else "throughput"
        session = replace(self.plan.session, window=self.window,
                          results_dir=self.plan.session.results_dir / f"{sha[:12]}-{tag}")
        config = ABConfig(session=session, baseline=Side("baseline", str(good_server)),
                          comparison=Side("comparison", str(candidate)),
                          repetitions=pairs, deadline=deadline, pace=self.pace)
        # the A/B session of rbs run: its engine, its replacement of disturbed pairs
        plan = ABSessionPlan(config, [self.plan.suite], metric=self.metric,
                             alpha=self.options.alpha,
                             noise_floor_pct=self.options.noise_floor_pct,
                             max_pairs=2 * pairs)
        result = run_session(plan, on_run=PairProgress(sha, pairs, self.metric, self.say))
        row = result.report.rows[0]
        if row.n_baseline < 2:
            if out_of_time(config):
                raise BudgetSpent(sha)
            if row.verdict == BUSY:
                raise HostBusy(f"{sha[:12]}: {row.reason}")
            failed = [r.reason for r in result.failed] or \
                [row.reason or f"no {self.metric} in the results"]
            raise BisectError(f"{sha[:12]}: fewer than 2 complete pairs ({'; '.join(failed)})")
        return Measurement(row.change_pct, row.verdict, row.n_baseline, build_s, row.reason)


class PairProgress:
    """A line per completed pair of a probe: both values and the running estimate (the
    geometric mean of the pairs' ratios so far; the verdict comes from the engine)."""

    def __init__(self, sha: str, pairs: int, metric: str, say: Say) -> None:
        self.sha, self.pairs, self.metric, self.say = sha, pairs, metric, say
        self.values: dict[int, dict[str, float]] = {}
        self.ratios: list[float] = []
        self.disturbed: set[int] = set()

    def __call__(self, run: ABRun) -> None:
        value = run.result.metrics.get(self.metric) if run.result.ok else None
        rep = run.repetition or 0
        if value is None or value <= 0:
            self.say(f"  {self.sha[:12]} pair {rep + 1}: {run.side} run has no "
                     f"{self.metric} ({run.result.status})")
            return
        pair = self.values.setdefault(rep, {})
        pair[run.side] = value
        if DISTURBED in run.result.flags:
            self.disturbed.add(rep)
        if len(pair) < 2:
            return
        base, comp = pair["baseline"], pair["comparison"]
        # the engine leaves a disturbed pair of a timed metric out: so does the estimate
        left_out = rep in self.disturbed and not deterministic(self.metric)
        if not left_out:
            self.ratios.append(math.log(comp / base))
        estimate = "none yet" if not self.ratios else \
            f"{(math.exp(sum(self.ratios) / len(self.ratios)) - 1) * 100:+.2f}%"
        which = f"{rep + 1}/{self.pairs}" if rep < self.pairs else \
            f"{rep + 1} (replacing a disturbed one)"
        self.say(f"  {self.sha[:12]} pair {which}: good {plain(base, 5)}, probe "
                 f"{plain(comp, 5)} {self.metric}; running estimate {estimate} from "
                 f"{len(self.ratios)} pair(s)"
                 + (" (disturbed by other processes: left out)" if left_out else ""))


def instructions_unavailable(requests: int) -> str:
    """Why the instructions profiler cannot run here ("" when it can)."""
    profiler = instructions.Instructions(ProfilerOptions(names=(instructions.NAME,),
                                                         requests=requests))
    return profiler.unavailable()


def probers(plan: BisectPlan, builds: Builds, good_sha: str, say: Say = _quiet
            ) -> list[Prober]:
    """The probers the metric choice asks for, best first (see :mod:`.search`)."""
    throughput = LocalProber(plan, builds, good_sha, replace(plan.session.window),
                             plan.options, say)
    if plan.metric == METRIC_THROUGHPUT:
        return [throughput]
    missing = instructions_unavailable(plan.profile_requests)
    if missing and plan.metric == METRIC_INSTRUCTIONS:
        raise BisectError(f"--metric instructions: {missing}")
    if missing:
        return [throughput]
    window = replace(plan.session.window, profilers=ProfilerOptions(
        names=(instructions.NAME,), requests=plan.profile_requests))
    counted = LocalProber(plan, builds, good_sha, window,
                          plan.options.with_metric(instructions.METRIC), say)
    return [counted] if plan.metric == METRIC_INSTRUCTIONS else [counted, throughput]


def bisect(plan: BisectPlan, say: Callable[[str], None] = lambda _: None) -> BisectOutcome:
    """Binary search of ``good..bad`` on this machine (see :func:`.search.search`)."""
    good_sha, commits = commit_range(plan.repo, plan.good, plan.bad)
    builds = Builds(plan)
    outcome = search(probers(plan, builds, good_sha, say), good_sha, commits, plan.budget,
                     say)
    outcome.compiles = builds.made
    return outcome
