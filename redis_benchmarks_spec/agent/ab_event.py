"""A pull-request event answered with interleaved baseline/PR pairs until decided.

When the platform's settings allow a budget (:mod:`.platform_config`) and the event is a
pull request's, the agent looks for the base commit's build: the base sha the webhook stored
with the request (``pullrequest.state``) and the artifact a builder stored for that commit in
the event's build variant (same key, same MAC check as the event's own artifact). Found: the
suites run as A/B pairs (base build = baseline, PR build = comparison, alternating order,
fresh servers) in rounds of :func:`runner.adaptive.until_decided`; each run is a point of
its own commit's history (the baseline side filed under the base commit). Not found: the
reason is returned, the agent runs the event as before and the comment says why.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.agent.base_counts import BaseQuery, base_runs, reuse_line
from redis_benchmarks_spec.agent.platform_config import UntilDecidedBudget
from redis_benchmarks_spec.agent.suite_cost import EtaPlan, RunMeter
from redis_benchmarks_spec.analysis.context import short
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY, function_movers
from redis_benchmarks_spec.analysis.noise import family_of, timed_metrics
from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.session_runs import (
    deterministic,
    keys_of,
    topology_moves_counts,
)
from redis_benchmarks_spec.analysis.verdict import HostNoise
from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.common.metrics import COUNT, MIN_PAIRS
from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.datasink.lab_ab import LabAB, LabABKey
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.inputs import noise_file
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.pullrequest.ab_record import ABRecord, TestProgress
from redis_benchmarks_spec.results.comparison_key import split
from redis_benchmarks_spec.results.document import GitInfo, RunResult
from redis_benchmarks_spec.runner import count_lanes
from redis_benchmarks_spec.runner.ab import (
    BASELINE,
    COMPARISON,
    ABConfig,
    ABRun,
    Side,
    ab_tests,
)
from redis_benchmarks_spec.runner.ab_session import (
    ABSessionPlan,
    ABSessionResult,
    run_session,
    with_rounds,
)
from redis_benchmarks_spec.runner.ab_stored import StoredBaseline
from redis_benchmarks_spec.runner.adaptive import deterministic_rounds
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.telemetry.fingerprint import fingerprint_id, host_fingerprint

log = logging.getLogger(__name__)


class Interrupted(Exception):
    """The agent was asked to stop, or lost the entry, between two runs of the A/B."""


@dataclass(frozen=True)
class BaseBuild:
    """The pull request's base commit and its stored build in the event's variant."""

    sha: str
    ref: ArtifactRef
    git: GitInfo
    build: dict[str, Any] = field(default_factory=dict)  # artifacts.provenance of its build


def find_base(client: redis.Redis, names: StreamNames, key: bytes,
              event: BuildEvent) -> tuple[BaseBuild | None, str]:
    """The base build, or None and why there is none (said in the comment)."""
    try:
        info = pr_state.load_info(client, names, event.request_id)
    except pr_state.PrInfoError as exc:
        return None, f"the pull request's stored base is unreadable ({exc})"
    if info is None or not info.base_sha or info.head_sha != event.sha:
        return None, ("the pull request's base commit is not known for this build (only a "
                      "webhook delivery stores it)")
    variant = event.build_variant
    manifest = artifacts.artifact_key(names.prefix, info.base_sha, variant, event.env)
    found = artifacts.existing(client, manifest, artifacts.Signer(key, info.base_sha, variant))
    if found is None:
        return None, (f"no build of the base commit `{short(info.base_sha)}` in `{variant}` "
                      "is stored (build it with `rbs trigger --commit` or a push to the base "
                      "branch)")
    git = GitInfo(org=event.org, repo=event.repo, hash=info.base_sha)
    build = artifacts.provenance(client, manifest)
    return BaseBuild(info.base_sha, found.ref, git, build), ""


@dataclass
class PairedRun:
    """What one A/B of an event needs besides the suites."""

    session: SessionConfig  # the PR build's session (its redis-server, context, pinning)
    base_server: Path
    base: BaseBuild
    budget: UntilDecidedBudget
    interrupted: Callable[[], bool]  # stop requested or entry lost
    # this platform's recorded noise per metric and test (analysis.noise), pooled with the
    # pairs of instruction counts
    priors: dict[str, dict[str, NoisePrior]] = field(default_factory=dict)
    # the datasink the base's push was stored in: its counts stand in for the base side of
    # an instruction-count A/B (agent.base_counts); None: every test runs both sides
    datasink: redis.Redis | None = None
    stored: StoredBaseline | None = None  # found by :func:`find_stored`
    # wall seconds of every run made, per suite: the ETA's costs and the machine minutes
    meter: RunMeter = field(default_factory=RunMeter)
    left_out: str = ""  # the tests :func:`counted_topologies` did not run, and why


def platform_priors(platform: str) -> dict[str, dict[str, NoisePrior]]:
    """The noise book's priors of this platform (``$RBS_NOISE_FILE``, filled by calibration
    A/A sessions); an unreadable book is logged and ignored: the A/B still runs."""
    try:
        book = noise_file.load()
    except noise_file.NoiseBookError as exc:
        log.warning("noise priors not used: %s", exc)
        return {}
    tests = sorted({e.test for e in book.entries.values() if e.platform == platform})
    return book.session_priors(platform, tests)


def platform_noise(job: PairedRun, suites: list[Suite], metric: str
                   ) -> dict[str, HostNoise]:
    """Timed metrics' per-test floors from this platform's calibration A/A sessions (the
    noise book); an unreadable book leaves the uncalibrated floor, and says so."""
    try:
        book = noise_file.load()
    except noise_file.NoiseBookError as exc:
        log.warning("calibrated noise floors not used: %s", exc)
        return {}
    families = {t.key: family_of(t.suite.tested_groups) for t in ab_tests(job.session, suites)}
    return book.session_noise(job.session.context.platform, families, timed_metrics(metric))


def session_plan(job: PairedRun, suites: list[Suite]) -> ABSessionPlan:
    """The event's A/B: base build against the PR build, in rounds within the budget."""
    budget = job.budget
    noise = platform_noise(job, suites, budget.metric)
    config = ABConfig(session=job.session,
                      baseline=Side(BASELINE, str(job.base_server), git=job.base.git,
                                    build=job.base.build),
                      comparison=Side(COMPARISON, str(job.session.tools.redis_server)),
                      repetitions=budget.first_round, history=True, stored=job.stored,
                      lanes=lanes_for(budget, job.session, suites))
    plan = ABSessionPlan(config, suites, metric=budget.metric, alpha=budget.alpha,
                         noise_floor_pct=budget.noise_floor_pct,
                         max_pairs=budget.max_repetitions, priors=job.priors,
                         host_noise=noise,
                         side_labels=("base commit (interleaved pairs)",
                                      "head commit (interleaved pairs)"))
    design = SequentialPlan(budget.max_repetitions, budget.alpha, budget.spending)
    return with_rounds(plan, design, budget.round_repetitions, budget.time_budget_s)


def lanes_for(budget: UntilDecidedBudget, session: SessionConfig,
              suites: list[Suite]) -> list[list[int]]:
    """The disjoint CPU sets an instruction-count A/B runs its tests in side by side
    (``runner.count_lanes``; none for a timed metric, or on a host too small for two)."""
    if not deterministic(budget.metric):
        return []
    tests = [(t.suite, t.topology) for t in ab_tests(session, suites) if not t.skipped]
    return count_lanes.host_lanes(session, tests, budget.count_lanes)


def may_use_stored(budget: UntilDecidedBudget, datasink: redis.Redis | None) -> bool:
    """Whether a pull request's A/B may stand the base's push counts in for its base side:
    a datasink holds them and the platform does not ask for fresh pairs."""
    return datasink is not None and budget.stored_base


def find_stored(job: PairedRun, suites: list[Suite]) -> StoredBaseline | None:
    """The base's counts from its push for an instruction-count A/B (``agent.base_counts``);
    None for a timed metric (timed metrics stay interleaved pairs), without a datasink, or
    when the platform asks for fresh pairs (``until_decided.stored_base: false``)."""
    if job.datasink is None or not may_use_stored(job.budget, job.datasink) or \
            not deterministic(job.budget.metric):
        return None
    ctx = job.session.context
    query = BaseQuery(keys.Scope(ctx.triggering_env, ctx.git.org, ctx.git.repo), job.base.sha,
                      ctx.platform, ctx.build_variant, ctx.host_fingerprint)
    tests = [(t.key, t.suite.name, t.topology) for t in ab_tests(job.session, suites)
             if not t.skipped]
    try:
        return base_runs(job.datasink, query, tests)
    except (redis.RedisError, ValueError) as exc:
        log.warning("the base's stored counts not used: %s", exc)
        return None


def eta_plan(budget: UntilDecidedBudget, stored_base: bool, lanes: int = 1) -> EtaPlan:
    """The plan the queued line's ETA counts: an instruction-count A/B runs the rounds of a
    deterministic metric (:func:`runner.adaptive.deterministic_rounds`) and, with a datasink
    holding the base's counts from its push, the head's runs only."""
    if deterministic(budget.metric):
        counted = stored_base and catalogued(budget.metric).kind == COUNT
        # the base's stored runs give a least spread: 3 pairs can decide, as with a prior
        first, most = deterministic_rounds(budget.metric, budget.first_round,
                                           budget.max_repetitions, priors=counted)
        runs = 1 if counted else 2
        return EtaPlan(min(first, most), most, budget.time_budget_s, runs_per_pair=runs,
                       lanes=max(1, lanes))
    return EtaPlan(budget.first_round, budget.max_repetitions, budget.time_budget_s)


def counted_topologies(budget: UntilDecidedBudget, catalogue: dict[str, Any],
                       suites: list[Suite]) -> tuple[list[Suite], str]:
    """An instruction-count A/B capped below the pairs a count that moves with the host
    needs (:data:`~common.metrics.MIN_PAIRS`: I/O threads, replicas, a cluster) runs each
    suite without those topologies where it keeps another: they could only end UNKNOWN
    ("too few points"), and they are the costliest runs under callgrind (a 3-node cluster
    failed to form in 60 s on one CPU; 20 of the 70 tests of a 55-suite replay of #11779
    ended so, docs/lab.md). The line says which were left out and why."""
    if catalogued(budget.metric).kind != COUNT or budget.max_repetitions >= MIN_PAIRS:
        return suites, ""
    out, dropped = [], []
    for suite in suites:
        why = {t: topology_moves_counts(catalogue.get(t), budget.metric)
               for t in suite.topologies}
        kept = [t for t in suite.topologies if not why[t]]
        if kept and len(kept) < len(suite.topologies):
            dropped += [f"{suite.name} @ {t} ({why[t]})" for t in suite.topologies if why[t]]
            suite = replace(suite, topologies=kept)
        out.append(suite)
    if not dropped:
        return suites, ""
    shown = ", ".join(dropped[:3]) + (f" and {len(dropped) - 3} more" if len(dropped) > 3 else "")
    return out, (f"Not counted: {len(dropped)} test(s) in topologies whose instruction counts "
                 f"move with the host ({shown}): they need {MIN_PAIRS} pairs, this platform "
                 f"allows {budget.max_repetitions}; each suite's other topologies were "
                 "counted.")


def run_pairs(job: PairedRun, suites: list[Suite],
              on_run: Callable[[ABRun], None] | None = None) -> ABSessionResult:
    """Rounds of pairs until every suite is decided or the budget is spent, judged.
    :class:`Interrupted` when the agent must stop (nothing is recorded then)."""
    def check(side: str, repetition: int, suite: Suite) -> None:
        if job.interrupted():
            raise Interrupted(f"stopped before {side} {repetition + 1} of {suite.name}")
        job.meter.started()

    def ran(run: ABRun) -> None:
        # the run's own start and end: a test paired with the base's stored counts reports
        # its head runs together after the last (started/ended counted only that one)
        spent = (run.result.end_ms - run.result.start_ms) / 1000
        if spent > 0:
            job.meter.add(run.result.test_name, spent)
        else:
            job.meter.ended(run.result.test_name)
        if on_run is not None:
            on_run(run)

    suites, job.left_out = counted_topologies(job.budget, job.session.catalogue(), suites)
    if job.stored is None:
        job.stored = find_stored(job, suites)
    return run_session(session_plan(job, suites), on_run=ran, on_start=check)


def record_of(job: PairedRun, result: ABSessionResult) -> ABRecord:
    """The record the comment is rendered from: the session's report (header, problems),
    per test the pairs taken and why it stopped, and the flags of the PR build's runs."""
    record = result.record
    progress = {} if record is None else {
        t: TestProgress(record.pairs.get(t, 0), list(looks), record.stopped.get(t, ""),
                        record.disturbed.get(t, 0))
        for t, looks in record.looks.items()}
    keys = keys_of(result.runs)
    flags: dict[str, set[str]] = {}
    for run in result.runs:
        if run.side == COMPARISON:
            flags.setdefault(keys(run.result), set()).update(run.result.flags)
    reuse = reuse_line(job.stored, len(progress)) if job.stored is not None else ""
    return ABRecord(base_sha=job.base.sha, report=result.report.to_dict(), progress=progress,
                    machine_s=round(job.meter.machine_s, 1),
                    flags={t: sorted(f) for t, f in flags.items() if f},
                    movers=movers_of(result), note=" ".join(
                        n for n in (reuse, job.left_out, host_line(result)) if n))


def lab_entries(event: BuildEvent, platform: str, record: ABRecord,
                runs: list[ABRun]) -> list[tuple[LabABKey, LabAB]]:
    """What the datasink keeps of the A/B the comment was rendered from (``record``, merged
    with a previous holder's), per metric the engine judged (its own, and instructions per
    op when a timed A/B counted them): the report, what each row is (test and topology,
    from ``runs``; a previous holder's rows by their label), the pairs and why each
    stopped. The site, ``rbs compare`` of the datasink and the comment's datasink route
    render it instead of judging the two commits' points again (``inputs.lab_ab_report``)."""
    report = record.comparison()
    if report is None or not record.base_sha:
        return []
    label = keys_of(runs)
    tests: dict[str, tuple[str, str | None]] = {
        label(r.result): (r.result.test_name, r.result.context.topology) for r in runs}
    out = []
    for part in (report, report.instructions):
        if part is None or not part.rows:
            continue
        rows = [r.test for r in part.rows]
        entry = LabAB(replace(part, instructions=None, memory=None, context=None).to_dict(),
                      tests={t: tests.get(t, split(t)) for t in rows},
                      pairs={t: record.progress[t].pairs for t in rows if t in record.progress},
                      stopped={t: record.progress[t].stopped for t in rows
                               if t in record.progress and record.progress[t].stopped},
                      note=record.note, event=event.id, stored_ms=int(time.time() * 1000))
        out.append((LabABKey(event.org, event.repo, record.base_sha, event.sha, platform,
                             part.options.metric), entry))
    return out


def host_line(result: ABSessionResult) -> str:
    """The host the pairs ran on, as the comment shows it: its fingerprint (what, when it
    changes, moves every timed series) and where the timed metric's noise floor came from."""
    fp = host_fingerprint()
    facts = ", ".join(f"{name} {fp[key]}" for key, name in (
        ("cpu_model", "CPU"), ("microcode", "microcode"), ("kernel", "kernel"),
        ("governor", "governor"), ("turbo", "turbo"), ("thp", "THP"), ("smt", "SMT"),
        ("numa_nodes", "NUMA nodes")) if fp.get(key))
    floor = result.report.options.floor_note
    return (f"Host: {facts} (fingerprint {fingerprint_id(fp)})."
            + (f" Timed noise: {floor}." if floor else ""))


def movers_of(result: ABSessionResult) -> dict[str, list[dict[str, Any]]]:
    """Per test measured in instructions: the functions whose self instructions per op
    moved most between the base and the head runs (``analysis.function_movers``)."""
    report = result.report
    # the instruction rows: their own section, or the main rows when they decided the pairs
    rows = report.counted.rows if report.counted is not None else []
    keys = keys_of(result.runs)
    out = {}
    for row in rows:
        sides = {side: [read_functions(Path(r.result.paths[PATH_KEY])) for r in result.runs
                        if r.side == side and r.result.ok and keys(r.result) == row.test
                        and PATH_KEY in r.result.paths] for side in (BASELINE, COMPARISON)}
        moves = function_movers(sides[BASELINE], sides[COMPARISON], row.baseline_median or 0.0)
        if moves:
            out[row.test] = [m.to_dict() for m in moves]
    return out


def results_by_suite(runs: list[ABRun], suites: list[Suite],
                     stored: StoredBaseline | None = None) -> dict[str, list[RunResult]]:
    """Every run's result document, per suite (both sides, in run order); the base's runs
    from its push that stood in for a side (``stored``) are not this event's."""
    out: dict[str, list[RunResult]] = {s.name: [] for s in suites}
    skip = stored.run_ids if stored is not None else set()
    for run in runs:
        if run.result.test_name in out and run.result.run_id not in skip:
            out[run.result.test_name].append(run.result)
    return out


def interrupted_by(*events: threading.Event) -> Callable[[], bool]:
    """True once any of ``events`` is set."""
    return lambda: any(e.is_set() for e in events)
