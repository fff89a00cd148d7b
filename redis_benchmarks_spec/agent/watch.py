"""The agent's watch of a tracked branch: each pushed point judged as it arrives.

After a test's results are pushed (:class:`WatchingPusher` wraps the datasink pusher), every
``by.branch`` series of a watched metric is read back (its history, one point per commit,
each with the host fingerprint it ran under) and judged by :func:`analysis.arrival.judge`:

- a *candidate* is stored (``datasink.watch_store``), one per commit whatever the number of
  tests and platforms that see it; nobody is told yet: ``notify.watch_confirm`` re-runs
  both sides and alerts only a confirmed change;
- a *host changed* boundary (the point's fingerprint differs from its history's) opens one
  note per commit and platform, and is never a candidate.

The fingerprint of a point is the host's (``telemetry.fingerprint``) plus the build
variant's compiler. ``RBS_FINGERPRINT_CHANGE_AT=<sha>`` (the lab replay's
``--fingerprint-change-at``) makes this agent report a changed fingerprint from that commit
on, as a host whose governor changed mid-history would.
"""

from __future__ import annotations

import hashlib
import logging
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.arrival import ArrivalPoint, Judgement, judge
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY
from redis_benchmarks_spec.analysis.history import HistoryError, HistoryQuery
from redis_benchmarks_spec.analysis.lab_table import LabTable
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC, THROUGHPUT_METRIC
from redis_benchmarks_spec.datasink import keys, lab_profile, watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch, SeriesStep
from redis_benchmarks_spec.datasink.writer import PushOptions, timestamp_of
from redis_benchmarks_spec.inputs.history import read_history
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.inputs.reports import read_lab_table
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.telemetry.fingerprint import fingerprint_id, host_fingerprint

log = logging.getLogger(__name__)

ENV_CHANGE_AT = "RBS_FINGERPRINT_CHANGE_AT"
COUNT_METRIC = INSTRUCTIONS_METRIC
WATCHED_METRICS = (COUNT_METRIC, THROUGHPUT_METRIC)
HISTORY_POINTS = 200


def point_fingerprint(host_id: str, build_variant: str) -> str:
    """The id a point is gated on: the host fingerprint and the variant's compiler (the
    variant id's first part, ``gcc:12.2.0``)."""
    compiler = build_variant.split("-", 1)[0]
    return hashlib.sha256(f"{host_id}|{compiler}".encode()).hexdigest()[:12]


@dataclass
class WatchConfig:
    """Which branches are tracked and what the agent's host looks like."""

    branches: tuple[str, ...] = ("unstable",)
    metrics: tuple[str, ...] = WATCHED_METRICS
    host_id: str = field(default_factory=lambda: fingerprint_id(host_fingerprint()))
    change_at: str = field(default_factory=lambda: os.environ.get(ENV_CHANGE_AT, ""))

    def __post_init__(self) -> None:
        if self.change_at and not re.fullmatch(r"[0-9a-f]{7,40}", self.change_at):
            raise ValueError(f"{ENV_CHANGE_AT}={self.change_at!r}: expected 7 to 40 hex digits")
        for name in self.branches:
            if not re.fullmatch(r"[A-Za-z0-9._/-]{1,200}", name):
                raise ValueError(f"--watch-branch {name!r}: not a branch name")


@dataclass(frozen=True)
class Seen:
    """What one series said on arrival (for logs and tests)."""

    test: str
    metric: str
    platform: str
    judgement: Judgement


class BranchWatch:
    """Judges a tracked branch's new points; stores candidates and host-changed notes."""

    def __init__(self, client: redis.Redis, config: WatchConfig) -> None:
        self.client = client
        self.config = config
        self._changed = False  # the simulated fingerprint change has begun

    def _host_id(self, sha: str) -> str:
        if self.config.change_at and sha.startswith(self.config.change_at):
            self._changed = True
        return self.config.host_id + ("-changed" if self._changed else "")

    def arrived(self, results: list[RunResult]) -> list[Seen]:
        """Judge every watched series of ``results`` (those of a tracked branch)."""
        seen: list[Seen] = []
        profiled: set[tuple[str, str, str]] = set()
        for result in results:
            git = result.context.git
            if result.status != "ok" or not result.context.is_history or git.pr \
                    or git.branch not in self.config.branches or not git.hash:
                continue
            fp = point_fingerprint(self._host_id(git.hash), result.context.build_variant)
            where = Branch(git.org, git.repo, git.branch)
            if self._record_profile(result):
                profiled.add((git.org, git.repo, str(git.branch)))
            ts = timestamp_of(result, PushOptions())
            for series in keys.series_ids(result):
                if series.side.kind != "branch" or series.metric not in self.config.metrics:
                    continue
                watch_store.record_fingerprint(self.client, where, series.key, ts, fp)
                seen.append(self._judge(where, result, series))
        for branch in sorted(profiled):
            publish_lab_table(self.client, branch)
        return seen

    def _record_profile(self, result: RunResult) -> bool:
        """The run's self counts per function and its suite's groups, for the lab-wide
        instruction table (False when the run has no per-function count)."""
        path = result.paths.get(PATH_KEY)
        functions = read_functions(Path(path)) if path else []
        rows = [(str(f["function"]), str(f.get("file") or ""), float(f.get("self_per_op", 0)))
                for f in functions]
        if not rows:
            return False
        git = result.context.git
        total = float(result.metrics.get(COUNT_METRIC) or sum(r[2] for r in rows))
        lab_profile.record(self.client, (git.org, git.repo, str(git.branch)), str(git.hash),
                           result.test_name, (total, rows), tuple(result.tested_groups))
        return True

    def _points(self, where: Branch, result: RunResult,
                series: keys.SeriesId) -> list[ArrivalPoint]:
        """One point per commit, in order of first arrival (re-runs of an older commit keep
        its place), valued by the median of its runs."""
        ctx = result.context
        history = read_history(self.client, HistoryQuery(
            test=series.test_name, metric=series.metric, branch=where.branch,
            platform=ctx.platform, topology=ctx.topology, build_variant=ctx.build_variant,
            last_n=HISTORY_POINTS))
        fps = watch_store.fingerprints(self.client, where, history.series_key)
        values: dict[str, list[float]] = {}
        first_fp: dict[str, str] = {}
        for p in history.points:
            if p.commit:
                values.setdefault(p.commit, []).append(p.value)
                first_fp.setdefault(p.commit, fps.get(p.ts_ms, ""))
        return [ArrivalPoint(c, statistics.median(v), first_fp[c]) for c, v in values.items()]

    def _judge(self, where: Branch, result: RunResult, series: keys.SeriesId) -> Seen:
        ctx = result.context
        try:
            points = self._points(where, result, series)
        except HistoryError as exc:
            log.warning("watch: %s %s not judged: %s", result.test_name, series.metric, exc)
            return Seen(result.test_name, series.metric, ctx.platform, Judgement("none"))
        if not points or points[-1].commit != ctx.git.hash:
            # a re-run of an older commit (confirmation): not a new point of the history
            return Seen(result.test_name, series.metric, ctx.platform, Judgement("none"))
        got = judge(points, series.metric)
        if got.outcome == "candidate":
            step = SeriesStep(series.test_name, ctx.platform, ctx.build_variant, series.metric,
                              got.change_pct, got.low_pct, got.high_pct, got.noise_pct)
            _, created = watch_store.add_candidate(self.client, where, got.before_commit,
                                                   got.after_commit, step)
            log.info("watch: %s candidate %+.2f%% at %s (%s on %s)%s", series.metric,
                     got.change_pct, got.after_commit[:10], series.test_name, ctx.platform,
                     "" if created else " (joined)")
        elif got.outcome == "host-changed" and \
                watch_store.noted(self.client, where, f"host-changed@{ctx.platform}",
                                  got.after_commit):
            watch_store.add_log(self.client, where, "host-changed", got.after_commit,
                                f"host changed on {ctx.platform} at {got.after_commit[:10]}: "
                                f"points from here are judged apart from the history "
                                f"before it (no alert across the boundary)")
        return Seen(result.test_name, series.metric, ctx.platform, got)


def publish_lab_table(client: redis.Redis, where: tuple[str, str, str]) -> LabTable | None:
    """Fold the branch's last profiled commit into its lab table and store the table's top
    rows as the derived keys the Grafana panel reads (``lab_profile.store_top``)."""
    table = read_lab_table(client, where)
    if table is not None:
        lab_profile.store_top(client, where, (table.commit, table.previous, table.suites),
                              [(r.function, r.share_pct, r.change_pp) for r in table.rows])
    return table


class WatchingPusher:
    """The agent's push, then the watch of what it pushed (a failed judgement is logged,
    never fails the push: the points are stored either way)."""

    def __init__(self, push: Callable[[list[RunResult]], None], watch: BranchWatch) -> None:
        self.push = push
        self.watch = watch

    def __call__(self, results: list[RunResult]) -> None:
        self.push(results)
        try:
            self.watch.arrived(results)
        except (redis.RedisError, ValueError, TypeError) as exc:
            log.warning("watch: points not judged: %s", exc)
