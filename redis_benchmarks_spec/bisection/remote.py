"""``rbs bisect`` without ``--local``: every probe goes through the builder and the agents.

For a probe commit and ``n`` pairs, ``2n`` build requests are published the way
``rbs trigger`` does (:func:`intake.trigger.trigger`, one commit each, the test alone in the
suite filter, one platform, one build variant), in the order good, probe, probe, good, ...
The requests name no branch (``Selection.detached``): a probe is not a new point of the
branch's history, so an agent watching the branch (docs/watch.md) never judges it and
``rbs history`` of the branch never shows it. A platform's agents take build events in
stream order, so on one agent host the runs are
interleaved exactly as the local A/B mode interleaves them. The builder compiles each commit
once: a later request for the same commit and variant reuses the stored artifact.

The requests are followed with :class:`events.follow.Follower` (build events, build
failures, the agents' per-platform completion) until done, a build failed, or the deadline.
Each request's result is read from the agent's ledger in the broker and validated
(:mod:`.agent_results`); pairs are (good, probe) of the same round and are judged with the
same paired comparison and decision rule as the local mode (:mod:`.search`).

The metric: ``instructions`` needs the platform's agents to run the instructions profiler
(``rbs agent --profilers instructions``); ``auto`` uses instructions per op when the bad-end
check's results all carry it, else throughput.
"""

from __future__ import annotations

import re
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.analysis.engine import judge_pairs
from redis_benchmarks_spec.bisection.agent_results import ResultRejected, event_metric, has_metric
from redis_benchmarks_spec.bisection.search import (
    METRIC_AUTO,
    METRIC_INSTRUCTIONS,
    METRIC_THROUGHPUT,
    BisectError,
    BudgetSpent,
    Measurement,
)
from redis_benchmarks_spec.events.follow import Follower, RequestProgress, wait
from redis_benchmarks_spec.events.messages import SuiteFilters
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import cancel
from redis_benchmarks_spec.intake import gitsource
from redis_benchmarks_spec.intake.trigger import (
    RedisSourceStore,
    RequestOptions,
    Selection,
    Triggered,
    TriggerError,
    trigger,
)
from redis_benchmarks_spec.telemetry.profilers import instructions

POLL_S = 1.0


@dataclass
class RemotePlan:
    """Where and how the probes run."""

    client: redis.Redis
    names: StreamNames
    repo: Path  # the local repository the commits are archived from
    test: str
    platform: str
    build_variant: str
    options: CompareOptions  # its metric: the throughput metric (CompareOptions.for_metric)
    metric: str = METRIC_AUTO  # auto | instructions | throughput
    request: RequestOptions = field(default_factory=RequestOptions)
    source_ttl_s: int = 24 * 3600
    probe_timeout_s: float = 6 * 3600


class RemoteProber:
    """Probes through the broker (see the module docstring)."""

    def __init__(self, plan: RemotePlan, good_sha: str) -> None:
        self.plan = plan
        self.good_sha = good_sha
        self.shas: set[str] = set()
        self.metric = plan.metric  # fixed to a metric name at the bad-end check
        self.requests: list[str] = []  # every request id published (for the report)
        self.pace: list[float] = []  # seconds a pair took, per probe (the budget's estimate)

    def built(self) -> int:
        return len(self.shas)

    def pair_seconds(self) -> float | None:
        """The slowest recent probe's seconds per pair (builds and queueing included)."""
        return max(self.pace[-3:]) if self.pace else None

    # -- publishing ---------------------------------------------------------------------

    def _options(self) -> RequestOptions:
        filters = SuiteFilters(tests_regexp=re.escape(self.plan.test))
        return replace(self.plan.request, filters=filters, platforms=(self.plan.platform,),
                       build_variants=(self.plan.build_variant,))

    def _publish(self, sha: str) -> Triggered:
        try:
            done = trigger(self.plan.client, self.plan.names, str(self.plan.repo),
                           Selection(commit=sha, detached=True), self._options(),
                           RedisSourceStore(self.plan.source_ttl_s))
        except (TriggerError, gitsource.GitError) as exc:
            raise BisectError(f"cannot request a build of {sha[:12]}: "
                              f"{str(exc).splitlines()[0] if str(exc) else exc!r}") from exc
        self.shas.add(sha)
        self.requests.append(done[0].request.id)
        return done[0]

    def _round_order(self, sha: str, rounds: int) -> list[tuple[int, str, str]]:
        """(round, side, sha) in publishing order: A B B A A B ..."""
        out = []
        for r in range(rounds):
            sides = [("good", self.good_sha), ("probe", sha)]
            out += [(r, side, s) for side, s in (sides if r % 2 == 0 else sides[::-1])]
        return out

    # -- following ----------------------------------------------------------------------

    def _follow(self, queued: list[Triggered], deadline: float | None) -> list[RequestProgress]:
        follower = Follower(self.plan.client, self.plan.names,
                            [(t.request, t.entry_id) for t in queued])
        limit = self.plan.probe_timeout_s
        if deadline is not None:
            limit = min(limit, max(0.0, deadline - time.monotonic()))
        finished = wait(follower, limit, interval_s=POLL_S)
        progress = {p.request.id: p for p in follower.poll()}
        for t in queued:
            failures = progress[t.request.id].failures
            if failures:
                self._cancel(queued)
                raise BisectError(f"build of {t.request.sha[:12]} failed: "
                                  f"{failures[0].reason.splitlines()[0][:300]}")
        if not finished:
            self._cancel(queued)
            if deadline is not None and time.monotonic() >= deadline:
                raise BudgetSpent(queued[0].request.sha)
            raise BisectError(f"no result within --probe-timeout {limit:.0f}s (are a builder "
                              f"and an agent of platform {self.plan.platform} running?)")
        return [progress[t.request.id] for t in queued]

    def _cancel(self, queued: list[Triggered]) -> None:
        """Nothing left running for a probe we gave up on."""
        for t in queued:
            cancel(self.plan.client, self.plan.names, t.request.id)

    def _event_key(self, prog: RequestProgress) -> tuple[str, str]:
        if prog.cancelled or not prog.events:
            raise BisectError(f"request {prog.request.id} ({prog.request.sha[:12]}) was "
                              "cancelled or produced no build event")
        event_id = next(iter(prog.events))
        return event_id, self.plan.platform

    # -- measuring ----------------------------------------------------------------------

    def _choose_metric(self, progress: list[RequestProgress]) -> None:
        if self.metric not in (METRIC_AUTO, METRIC_INSTRUCTIONS, METRIC_THROUGHPUT):
            return  # already chosen, or an exporter metric path given by the user
        keys = [self._event_key(p) for p in progress]
        counted = all(has_metric(self.plan.client, self.plan.names, k, self.plan.test,
                                 instructions.METRIC) for k in keys)
        if self.metric == METRIC_INSTRUCTIONS and not counted:
            raise BisectError(f"--metric instructions: the results of platform "
                              f"{self.plan.platform} carry no {instructions.METRIC} (run its "
                              "agents with --profilers instructions)")
        self.metric = instructions.METRIC if counted and self.metric != METRIC_THROUGHPUT \
            else self.plan.options.metric

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        order = self._round_order(sha, pairs)
        queued = [self._publish(s) for _, _, s in order]
        started = time.monotonic()
        progress = self._follow(queued, deadline)
        self._choose_metric(progress)
        values: dict[tuple[int, str], float] = {}
        for (rnd, side, commit), prog in zip(order, progress, strict=True):
            try:
                values[(rnd, side)] = event_metric(self.plan.client, self.plan.names,
                                                   self._event_key(prog), self.plan.test,
                                                   commit, self.metric)
            except ResultRejected as exc:
                raise BisectError(str(exc)) from None
        got = [(values[(r, "good")], values[(r, "probe")]) for r in range(pairs)]
        row = judge_pairs({self.plan.test: got}, self.plan.options.with_metric(self.metric)
                          ).rows[0]
        self.pace.append((time.monotonic() - started) / max(pairs, 1))
        # the builder's compile is inside the probe's time, which the pace already counts
        return Measurement(row.change_pct, row.verdict, len(got), 0.0, row.reason)
