"""Interleaved A/B runs: the same suites against two redis-server binaries, alternating
A B B A A B ... per suite with a fresh server every time and identical pinning.

Interleaving spreads slow drifts of a shared machine (other tenants, thermal state) over both
sides; alternating the order inside each pair cancels "second run of the pair" effects.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.analysis.session_runs import (
    BASELINE,
    COMPARISON,
    ABRun,
    deterministic,
    keys_of,
    pair_runs,
)
from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys, label, with_topology
from redis_benchmarks_spec.results.document import (
    DISTURBED,
    SESSION_AB,
    SESSION_RUN,
    GitInfo,
    RunResult,
)
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.results.profile import under_profiler
from redis_benchmarks_spec.runner import count_lanes
from redis_benchmarks_spec.runner.ab_stored import (
    StoredBaseline,
    pair_with_stored,
    registry_runner,
)
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests, run_suites
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.telemetry.cpu import FOREIGN


@dataclass
class Side:
    name: str
    redis_server: str
    server_args: list[str] = field(default_factory=list)
    # the commit this side's binary was built from, when it is not the session's (the agent's
    # pull-request A/B: the base commit's build against the head's)
    git: GitInfo | None = None
    # how that binary was built (RunContext.build); a side of another commit never takes
    # the session's
    build: dict[str, Any] | None = None


@dataclass
class Pace:
    """How long pairs took, so that no pair starts that would end after a deadline (a
    budget is a promise). Shared by the sessions of one bisection prober."""

    seconds: list[float] = field(default_factory=list)

    def estimate(self) -> float | None:
        """The slowest of the last few pairs (a promise errs long); None before any."""
        return max(self.seconds[-4:]) if self.seconds else None


def out_of_time(config: ABConfig) -> bool:
    """The deadline passed, or the next pair (at the pace so far) would end after it."""
    if config.deadline is None:
        return False
    now = time.monotonic()
    pair = config.pace.estimate() if config.pace is not None else None
    return now >= config.deadline or (pair is not None and now + pair > config.deadline)


@dataclass
class ABConfig:
    session: SessionConfig  # tools, pinning, test time, context shared by both sides
    baseline: Side
    comparison: Side
    repetitions: int = 10
    first_repetition: int = 0  # later rounds of --until-decided continue the numbering
    deadline: float | None = None  # time.monotonic() after which no new pair starts
    pace: Pace | None = None  # with a deadline: no pair starts that would end after it
    # both sides are unmodified builds of their own commits (no extra server arguments): each
    # run is a point of its commit's history, labelled with its side, instead of an A/B run
    history: bool = False
    # per test, the base commit's runs that stand in for the baseline side (runner.ab_stored)
    stored: StoredBaseline | None = None
    # disjoint CPU sets the tests of a deterministic metric run in side by side, one test per
    # lane at a time (runner.count_lanes); empty: one test after another on every CPU
    lanes: list[list[int]] = field(default_factory=list)


def order(repetition: int) -> tuple[str, str]:
    """A B for even repetitions, B A for odd ones: A B B A A B B A ..."""
    return (BASELINE, COMPARISON) if repetition % 2 == 0 else (COMPARISON, BASELINE)


def _side_config(config: ABConfig, side: Side, repetition: int) -> SessionConfig:
    base = config.session
    tools = replace(base.tools, redis_server=side.redis_server)
    results_dir = run_folder(base.results_dir, RunPlace(side.name, repetition))
    # labelled in every result document: which side, with which extra server arguments
    kind = base.context.session_kind if not base.context.is_history else SESSION_AB
    if config.history and not side.server_args and not base.server_args:
        kind = SESSION_RUN
    context = replace(base.context, session_kind=kind, ab_side=side.name, repetition=repetition,
                      git=side.git or base.context.git,
                      build=dict(side.build if side.build is not None else
                                 {} if side.git is not None else base.context.build),
                      extra_server_args=[*base.server_args, *side.server_args])
    return replace(base, tools=tools, results_dir=results_dir, context=context,
                   server_args=[*base.server_args, *side.server_args])


def run_ab(config: ABConfig, suites: list[Suite],
           on_run: Callable[[ABRun], None] | None = None,
           stop: threading.Event | None = None,
           on_start: Callable[[str, int, Suite], None] | None = None) -> list[ABRun]:
    """Every suite ``repetitions`` times per side, interleaved; returns every run.

    ``on_start(side, repetition, suite)`` is called before each run (progress displays).
    A pair that started before ``config.deadline`` is finished; no pair starts after it, nor
    (with ``config.pace``) one that would end after it at the pace of the pairs so far.
    """
    sides = {BASELINE: config.baseline, COMPARISON: config.comparison}
    registry = ProcessRegistry()
    runs: list[ABRun] = []
    for suite in suites:
        for rep in range(config.first_repetition,
                         config.first_repetition + config.repetitions):
            if out_of_time(config):
                break
            started = time.monotonic()
            for side_name in order(rep):
                if stop is not None and stop.is_set():
                    return runs
                cfg = _side_config(config, sides[side_name], rep)
                if on_start:
                    on_start(side_name, rep, suite)
                for result in run_suites(cfg, [suite], registry=registry):
                    run = ABRun(side_name, rep, result)
                    runs.append(run)
                    if on_run:
                        on_run(run)
            if config.pace is not None:
                config.pace.seconds.append(time.monotonic() - started)
    return runs


@dataclass(frozen=True)
class ABTest:
    """One test of an A/B session: a suite in one topology, and its label in the report
    (``results.comparison_key``: the suite's name, or ``name @ topology`` when the suite runs
    in several)."""

    key: str
    suite: Suite
    topology: str
    skipped: bool = False  # planned but cannot run here (its runs report why)


def ab_tests(session: SessionConfig, suites: list[Suite]) -> list[ABTest]:
    """Every (suite, topology) the session plans, labelled as
    :meth:`ComparisonKeys.of` labels their results: by the tests that run. A skipped one
    (it still runs, to report why) is always ``name @ topology``, so it never takes the label
    of a topology of its suite that runs."""
    planned = [(p, bool(p.skip_reason) or p.topology is None)
               for p in plan_tests(session, suites)]
    keys = ComparisonKeys((p.suite.name, p.topology_name) for p, skip in planned if not skip)
    return [ABTest(label(p.suite.name, p.topology_name, True) if skip
                   else keys.key(p.suite.name, p.topology_name),
                   p.suite, p.topology_name, skip)
            for p, skip in planned]


def run_ab_tests(config: ABConfig, tests: list[ABTest],
                 on_run: Callable[[ABRun], None] | None = None,
                 on_start: Callable[[str, int, Suite], None] | None = None) -> list[ABRun]:
    """:func:`run_ab` of each test alone in its topology, in the order given: rounds of
    ``--until-decided`` give more pairs only to the tests still open, not to every topology
    of their suite."""
    if len(config.lanes) >= 2 and len(tests) >= 2:
        return _run_lanes(config, tests, on_run, on_start)
    runs: list[ABRun] = []
    for test in tests:
        session = replace(config.session, topology_filter=test.topology)
        if config.stored is not None and config.stored.runs.get(test.key):
            runs += _run_stored(replace(config, session=session), test, on_run, on_start)
            continue
        runs += run_ab(replace(config, session=session), [test.suite], on_run=on_run,
                       on_start=on_start)
    return runs


def _run_lanes(config: ABConfig, tests: list[ABTest],
               on_run: Callable[[ABRun], None] | None,
               on_start: Callable[[str, int, Suite], None] | None) -> list[ABRun]:
    """:func:`run_ab_tests` with each lane (``config.lanes``) taking the next test left, on
    its own CPUs; the callbacks are called one at a time, and an exception of one (the agent
    told to stop) stops every lane before its next run and is raised here. Runs come back in
    the order of ``tests``."""
    lock = threading.Lock()
    left = list(enumerate(tests))
    done: dict[int, list[ABRun]] = {}
    failed: list[BaseException] = []

    def started(side: str, rep: int, suite: Suite) -> None:
        with lock:
            if failed:
                raise failed[0]
            if on_start is not None:
                on_start(side, rep, suite)

    def ran(run: ABRun) -> None:
        with lock:
            if on_run is not None:
                on_run(run)

    def lane(index: int) -> None:
        cpus = config.lanes[index]
        session = replace(config.session, cpus=cpus,
                          cpu_note=count_lanes.lane_note(index, config.lanes))
        lane_config = replace(config, session=session, lanes=[])
        while True:
            with lock:
                if failed or not left:
                    return
                position, test = left.pop(0)
            try:
                done[position] = run_ab_tests(lane_config, [test], on_run=ran,
                                              on_start=started)
            except BaseException as exc:  # noqa: BLE001 - raised again below, in the caller
                with lock:
                    failed.append(exc)
                return

    threads = [threading.Thread(target=lane, args=(i,), name=f"count-lane-{i + 1}",
                                daemon=True)
               for i in range(min(len(config.lanes), len(tests)))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    if failed:
        raise failed[0]
    return [run for position in sorted(done) for run in done[position]]


def _run_stored(config: ABConfig, test: ABTest, on_run: Callable[[ABRun], None] | None,
                on_start: Callable[[str, int, Suite], None] | None) -> list[ABRun]:
    """A test whose baseline side was measured at the base's push (``runner.ab_stored``):
    the head side runs, the base side only where the stored runs do not fit."""
    assert config.stored is not None
    sides = {BASELINE: config.baseline, COMPARISON: config.comparison}

    def run(name: str, rep: int, registry: ProcessRegistry) -> list[RunResult]:
        return run_suites(_side_config(config, sides[name], rep), [test.suite],
                          registry=registry)
    reps = (rep for rep in range(config.first_repetition,
                                 config.first_repetition + config.repetitions)
            if not out_of_time(config))
    runs = pair_with_stored(test.key, reps, config.stored,
                            registry_runner(run, test.suite, on_start))
    stored_ids = config.stored.run_ids
    for item in runs:
        if on_run and item.result.run_id not in stored_ids:
            on_run(item)
    return runs


def disturbed_problems(results: list[RunResult], metric: str) -> list[str]:
    """One line per disturbed run, for the report's problems (none for instruction counts,
    which foreign load does not move: their pairs are all used). A timed metric measured
    under a profiler is not judged (``results.profile.under_profiler``): its disturbed runs
    are one counted line, as no pair of it is left out of anything."""
    if deterministic(metric):
        return []
    disturbed = [r for r in results if r.ok and DISTURBED in r.flags]
    profiled = sum(1 for r in disturbed if under_profiler(r.flags, metric))
    out = [_not_judged(profiled, len(results), metric)] if profiled else []
    for r in disturbed:
        if not under_profiler(r.flags, metric):
            foreign = r.cpu.get(FOREIGN)
            used = f"{foreign.mean_pct:.0f} % of a core" if foreign else "CPU time"
            out.append(f"{with_topology(r)} ({r.context.ab_side}): disturbed (other processes "
                       f"used {used} on its CPUs); its pair is left out of {metric}")
    return out


def _not_judged(disturbed: int, runs: int, metric: str) -> str:
    return (f"{disturbed} of {runs} run(s) disturbed by other processes: {metric} is not "
            "judged (measured under a profiler), so no pair is left out")


def run_ab_replacing(config: ABConfig, tests: list[ABTest], metric: str, max_repetitions: int,
                     on_run: Callable[[ABRun], None] | None = None,
                     on_start: Callable[[str, int, Suite], None] | None = None) -> list[ABRun]:
    """:func:`run_ab_tests`, then for a time metric a new pair for each disturbed one (a test
    needs ``config.repetitions`` clean pairs), as long as the test has had fewer than
    ``max_repetitions`` pairs and the deadline allows."""
    runs = run_ab_tests(config, tests, on_run=on_run, on_start=on_start)
    if deterministic(metric):
        return runs
    wanted, done = config.repetitions, config.first_repetition + config.repetitions
    while done < config.first_repetition + max_repetitions:
        if out_of_time(config):
            break
        sets = pair_runs(runs, metric, keys_of(runs))
        short = [t for t in tests if not t.skipped and t.key in sets and
                 sets[t.key].disturbed and len(sets[t.key].pairs) < wanted]
        if not short:
            break
        more = min(wanted - min(len(sets[t.key].pairs) for t in short),
                   config.first_repetition + max_repetitions - done)
        runs += run_ab_tests(replace(config, first_repetition=done, repetitions=more), short,
                             on_run=on_run, on_start=on_start)
        done += more
    return runs


def results_root(config: ABConfig) -> Path:
    return config.session.results_dir
