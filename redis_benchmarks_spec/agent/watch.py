"""The agent's watch of a tracked branch: each pushed point judged as it arrives.

After a test's results are pushed (:class:`WatchingPusher` wraps the datasink pusher), every
``by.branch`` series of a watched metric is read back (its history, one point per commit,
each with the host fingerprint it ran under) and judged by :func:`analysis.arrival.judge`:

- a *candidate* is stored (``datasink.watch_store``), one per commit whatever the number of
  tests and platforms that see it; nobody is told yet: ``notify.watch_confirm`` re-runs
  both sides and alerts only a confirmed change;
- a *host changed* boundary (the point's fingerprint differs from its history's) is never a
  candidate: it asks for the last commit before it to be measured again on the new host
  (``watch_store.add_remeasure``; the confirmer asks the re-run, as it asks a candidate's:
  ``notify.watch_remeasure``), and opens ONE note per platform and new host, whatever the
  number of tests and commits that see it: from which commit, what changed in the
  fingerprint, and that the previous commit is measured again;
- that re-measure, when it arrives, is the first point of the new host's series
  (``arrival.series_of``): the new host's first points are judged against it
  (``arrival.judge_boundary``), so a change at the boundary commit is a candidate too.

The fingerprint of a point is the host's (``telemetry.fingerprint``) plus the build
variant's compiler. ``RBS_FINGERPRINT_CHANGE_AT=<sha>`` (the lab replay's
``--fingerprint-change-at``) makes this agent report a changed fingerprint from that commit
on, as a host whose governor changed mid-history would.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
import re
import statistics
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.arrival import (
    ArrivalPoint,
    Judgement,
    judge,
    judge_boundary,
    series_of,
)
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY
from redis_benchmarks_spec.analysis.history import HistoryError, HistoryQuery, unsuspected
from redis_benchmarks_spec.analysis.lab_table import LabTable
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC, THROUGHPUT_METRIC
from redis_benchmarks_spec.datasink import keys, lab_profile, watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch, Remeasure, SeriesStep
from redis_benchmarks_spec.datasink.writer import PushOptions, timestamp_of
from redis_benchmarks_spec.inputs.history import read_history
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.inputs.reports import read_lab_table
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.telemetry.fingerprint import FIELDS as FINGERPRINT_FIELDS
from redis_benchmarks_spec.telemetry.fingerprint import (
    changes,
    fingerprint_id,
    host_fingerprint,
)

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
    host_id: str = ""  # "": the id of ``host_facts``
    change_at: str = field(default_factory=lambda: os.environ.get(ENV_CHANGE_AT, ""))
    host_facts: dict[str, str] = field(default_factory=host_fingerprint)

    def __post_init__(self) -> None:
        self.host_id = self.host_id or fingerprint_id(self.host_facts)
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

    def _facts(self, build_variant: str) -> dict[str, str]:
        """The host's fingerprint fields and the build's compiler (a simulated change says
        so, as its only difference)."""
        facts = {**self.config.host_facts, "compiler": build_variant.split("-", 1)[0]}
        if self._changed:
            facts["simulated"] = f"{ENV_CHANGE_AT}={self.config.change_at}"
        return facts

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
            watch_store.record_host(self.client, where, fp,
                                    self._facts(result.context.build_variant))
            if self._record_profile(result):
                profiled.add((git.org, git.repo, str(git.branch)))
            ts = timestamp_of(result, PushOptions())
            for series in keys.series_ids(result):
                if series.side.kind != "branch" or series.metric not in self.config.metrics:
                    continue
                watch_store.record_fingerprint(self.client, where, series.key, ts, fp)
                seen.append(self._judge(where, result, series, fp))
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
                series: keys.SeriesId) -> tuple[list[ArrivalPoint], int]:
        """One point per commit and fingerprint, in order of first arrival (re-runs of an
        older commit keep its place; a re-measure on a new host goes first among that host's
        points: ``arrival.series_of``), valued by the median of its runs; and the newest
        run's timestamp."""
        ctx = result.context
        history = read_history(self.client, HistoryQuery(
            test=series.test_name, metric=series.metric, branch=where.branch,
            platform=ctx.platform, topology=ctx.topology, build_variant=ctx.build_variant,
            last_n=HISTORY_POINTS))
        fps = watch_store.fingerprints(self.client, where, history.series_key)
        values: dict[tuple[str, str], list[float]] = {}
        for p in unsuspected(history.points):  # a suspect point never raises a candidate
            if p.commit:
                values.setdefault((p.commit, fps.get(p.ts_ms, "")), []).append(p.value)
        newest = max((p.ts_ms for p in history.points), default=0)
        return series_of([ArrivalPoint(c, statistics.median(v), fp, runs=len(v))
                          for (c, fp), v in values.items()]), newest

    def _judge(self, where: Branch, result: RunResult, series: keys.SeriesId,
               fingerprint: str) -> Seen:
        ctx = result.context
        try:
            points, newest_ms = self._points(where, result, series)
        except HistoryError as exc:
            log.warning("watch: %s %s not judged: %s", result.test_name, series.metric, exc)
            return Seen(result.test_name, series.metric, ctx.platform, Judgement("none"))
        first = [p for p in points if p.commit == ctx.git.hash and p.runs == 1
                 and p.fingerprint == fingerprint]
        if first and first[0] is points[-1]:
            got = judge(points, series.metric)
        elif first and first[0].remeasure:
            got = judge_boundary(points, series.metric)  # the new host's re-measure came
        else:
            # a re-run (a confirmation's): not a new point of the history, and its runs
            # never move the step its candidate was raised with
            return Seen(result.test_name, series.metric, ctx.platform, Judgement("none"))
        if got.outcome == "candidate":
            step = SeriesStep(series.test_name, ctx.platform, ctx.build_variant, series.metric,
                              got.change_pct, got.low_pct, got.high_pct, got.noise_pct,
                              newest_ms)
            _, created = watch_store.add_candidate(self.client, where, got.before_commit,
                                                   got.after_commit, step)
            log.info("watch: %s candidate %+.2f%% at %s (%s on %s)%s", series.metric,
                     got.change_pct, got.after_commit[:10], series.test_name, ctx.platform,
                     "" if created else " (joined)")
        elif got.outcome == "host-changed":
            self._host_changed(where, result, series.test_name, (points[-2], points[-1]))
        return Seen(result.test_name, series.metric, ctx.platform, got)

    def _host_changed(self, where: Branch, result: RunResult, test: str,
                      boundary: tuple[ArrivalPoint, ArrivalPoint]) -> None:
        """Ask for the last commit before the boundary to be measured again on the new host
        (for this test), and note the change once per platform and new host."""
        platform, (old, new) = result.context.platform, boundary
        watch_store.add_remeasure(self.client, where, Remeasure(platform, old.commit,
                                                                new.commit), test)
        facts = [watch_store.host_facts(self.client, where, p.fingerprint) for p in boundary]
        if not watch_store.noted(self.client, where, f"host-changed@{platform}",
                                 change_key(facts[0], facts[1], new.fingerprint)):
            return
        what = host_difference(facts[0], facts[1])
        watch_store.add_log(self.client, where, "host-changed", new.commit, (
            f"host changed on {platform} from {new.commit[:10]}: {old.commit[:10]}, the last "
            "commit before it, is measured again on the new host, and the new host's first "
            f"points are judged against that re-measure, never against the old host's; "
            f"what changed: {what}"))  # last: a long list is what the log's bound cuts


def change_key(old: dict[str, str], new: dict[str, str], fingerprint: str) -> str:
    """What one host change is noted under: the new host's recorded fields when the host
    itself changed (every build variant, every test sees the same one), else the point
    fingerprint (a variant's compiler changed on the same host)."""
    host = {k: v for k, v in new.items() if k != "compiler"}
    if host == {k: v for k, v in old.items() if k != "compiler"}:
        return fingerprint
    return hashlib.sha256(json.dumps(host, sort_keys=True).encode()).hexdigest()[:12]


def host_difference(old: dict[str, str], new: dict[str, str]) -> str:
    """What changed between two recorded hosts: the fingerprint's fields
    (``telemetry.fingerprint.changes``), then the compiler and anything else recorded."""
    lines = changes(old, new)
    lines += [f"{k}: {old.get(k, '') or '?'} -> {new.get(k, '') or '?'}"
              for k in sorted(set(old) | set(new))
              if k not in FINGERPRINT_FIELDS and old.get(k, "") != new.get(k, "")]
    return "; ".join(lines) if lines else "no recorded field differs"


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
