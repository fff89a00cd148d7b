"""Push result documents into RedisTimeSeries: one pipelined round trip per batch of runs.

Every write of a batch of runs (each metric on each side, the index sets, the result
documents) is packed into one buffer and sent at once (:mod:`.wire`); batches overlap, the
next one packed and sent while the server works on the last. Series are created with
``DUPLICATE_POLICY LAST`` and points added with ``ON_DUPLICATE LAST``, so pushing the same
run again rewrites the same points and adds none.
"""

from __future__ import annotations

import contextlib
import functools
import gc
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any, Literal

import redis

from redis_benchmarks_spec.datasink import commit_runs, documents, keys
from redis_benchmarks_spec.datasink.wire import Batch, Wire, bulk_strings, command_resp, wire
from redis_benchmarks_spec.results.document import RunResult

TimestampSource = Literal["start", "commit"]
#: runs per pipelined round trip (a batch of 64 five-metric runs is ~1,000 points)
BATCH_RUNS = 64
#: chunk of a series that holds few points (a commit's or a release's runs); others keep
#: RedisTimeSeries' default 4 KiB
SMALL_CHUNK_BYTES = {"hash": 128, "version": 256}


class DatasinkWriteError(RuntimeError):
    """A command of a push was rejected; the message names the test and the key."""


@dataclass(frozen=True)
class PushOptions:
    """How results are written.

    ``timestamp``: ``"start"`` stamps points with the run's start time; ``"commit"`` with the
    commit time of the measured Redis (runs without one are skipped, with the reason).
    ``retention_ms``: series retention on creation (0 keeps everything).
    """

    timestamp: TimestampSource = "start"
    retention_ms: int = 0
    store_documents: bool = True


@dataclass
class PushReport:
    """What a push did. ``round_trips`` counts pipeline executions (one per batch of runs)."""

    pushed: list[str] = field(default_factory=list)  # run ids
    skipped: dict[str, str] = field(default_factory=dict)  # run id -> why nothing to push
    failed: dict[str, str] = field(default_factory=dict)  # run id -> error, not pushed
    datapoints: int = 0
    round_trips: int = 0
    elapsed_s: float = 0.0
    error: str = ""  # why the whole push stopped (e.g. datasink unreachable)
    files_not_pushed: list[str] = field(default_factory=list)
    files_already_pushed: list[str] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not self.failed and not self.error and not self.files_not_pushed

    def merge(self, other: PushReport) -> None:
        """Add ``other``'s counts and lists to this report."""
        self.pushed += other.pushed
        self.skipped.update(other.skipped)
        self.failed.update(other.failed)
        self.datapoints += other.datapoints
        self.round_trips += other.round_trips
        self.elapsed_s += other.elapsed_s
        self.files_not_pushed += other.files_not_pushed
        self.files_already_pushed += other.files_already_pushed
        self.error = self.error or other.error

    def summary(self) -> str:
        """One line for people."""
        parts = [f"{len(self.pushed)} run(s) pushed", f"{self.datapoints} datapoint(s)",
                 f"{self.round_trips} round trip(s)"]
        if self.skipped:
            parts.append(f"{len(self.skipped)} skipped")
        if self.files_already_pushed:
            parts.append(f"{len(self.files_already_pushed)} already pushed")
        if self.failed:
            parts.append(f"{len(self.failed)} failed")
        if self.files_not_pushed:
            parts.append(f"{len(self.files_not_pushed)} file(s) NOT pushed (kept on disk)")
        text = ", ".join(parts)
        return f"{text}: {self.error}" if self.error else text


def push_results(client: redis.Redis, results: list[RunResult],
                 options: PushOptions | None = None,
                 known_series: set[str] | None = None) -> PushReport:
    """Push every ok result, :data:`BATCH_RUNS` runs to one pipelined round trip.

    Results that are not ok, or have nothing to write, are listed in ``skipped``; a run whose
    commands the server rejected is listed in ``failed`` (the others of its batch are still
    pushed). Connection errors propagate: the caller decides what stays on disk.
    ``known_series`` (keys this process already created, updated here) lets points of
    existing series go as one compact TS.MADD; pass the same set to consecutive calls to
    keep that benefit.
    """
    options = options or PushOptions()
    known = set() if known_series is None else known_series
    report = PushReport()
    started = time.monotonic()
    ready = []
    for result in results:
        why_not = skip_reason(result, options)
        if why_not:
            report.skipped[result.run_id] = why_not
        else:
            ready.append(result)
    if ready:
        with _no_cycle_collection():
            _push_ready(client, ready, (options, known), report)
    report.elapsed_s = time.monotonic() - started
    return report


@contextlib.contextmanager
def _no_cycle_collection() -> Iterator[None]:
    """The cycle collector paused for one push, as ``timeit`` does: a push makes ~100 short
    lived lists, dicts and key objects a run and no cycle, so reference counting frees them
    all, while the collections they trigger walk every object the process holds (a third of
    a push's client time in benchmarks/history_scale.py). Cycles made meanwhile elsewhere
    are collected when it resumes."""
    was_enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_enabled:
            gc.enable()


def _push_ready(client: redis.Redis, ready: list[RunResult],
                how: tuple[PushOptions, set[str]], report: PushReport) -> None:
    """Send the batches overlapped: batch k+1 is packed and sent while the server still
    works on batch k, whose replies are read after it (one connection, replies in order),
    so a push costs the larger of the client's and the server's work, not their sum.
    Points TS.MADD refused go again as TS.ADD in one last round trip."""
    options, known = how
    errors: dict[str, list[str]] = {}
    refused: list[tuple[keys.SeriesId, PlannedRun]] = []
    plans: list[PlannedRun] = []
    # series a sent batch creates, before its reply says so: later batches write them with
    # TS.MADD, whose refusal (should the creation have failed) goes again with labels
    inflight: set[str] = set()
    with wire(client) as link:
        waiting: PreparedBatch | None = None
        for first in range(0, len(ready), BATCH_RUNS):
            prepared = prepare_batch(ready[first:first + BATCH_RUNS], options,
                                     (known, inflight))
            inflight.update(prepared.created)
            link.send(prepared.batch)
            report.round_trips += 1
            if waiting:
                refused += settle_batch(waiting, link.replies(waiting.batch), known, errors)
            waiting = prepared
            plans += prepared.plans
        if waiting:
            refused += settle_batch(waiting, link.replies(waiting.batch), known, errors)
        if refused:
            readd(link, refused, options, errors)
            report.round_trips += 1
    _account(plans, errors, report)


def skip_reason(result: RunResult, options: PushOptions) -> str:
    """Why ``result`` has nothing to push, or '' when it has."""
    if not result.context.is_history:
        return (f"{result.context.session_label()}: not pushed, A/B and calibration runs "
                "stay out of the history series")
    if not result.ok:
        return f"status {result.status}"
    if not result.metrics:
        return "no metrics"
    if not keys.history_metrics(result):
        return "profiled run: its timings are kept out of regression history"
    if not keys.sides_of(result):
        return ("no branch, release version or commit to file the metrics under (rbs run "
                "--branch, --version-tag or --hash)")
    if options.timestamp == "commit" and result.context.git.commit_time_ms is None:
        return "timestamp=commit but the run has no commit time"
    return ""


def timestamp_of(result: RunResult, options: PushOptions) -> int:
    """The timestamp (ms) every point of ``result`` gets."""
    if options.timestamp == "commit":
        commit_ms = result.context.git.commit_time_ms
        if commit_ms is None:
            raise ValueError(f"{result.run_id}: no commit time for timestamp=commit")
        return commit_ms
    return result.start_ms


@dataclass
class PlannedRun:
    """One run's writes: its points' timestamp, its series and their labels' run part."""

    result: RunResult
    ts: int
    names: keys.RunNames
    series: list[keys.SeriesId]

    @classmethod
    def of(cls, result: RunResult, options: PushOptions) -> PlannedRun:
        names = keys.RunNames.of(result)
        return cls(result, timestamp_of(result, options), names,
                   keys.series_ids(result, names))

    @functools.cached_property
    def run_labels(self) -> dict[str, str]:
        """Only a series being created needs them (most runs create by.hash series only)."""
        return keys.run_labels(self.result)


@dataclass
class PreparedBatch:
    """A batch's commands and what its replies are checked against."""

    plans: list[PlannedRun]
    batch: Batch
    madd: list[tuple[keys.SeriesId, PlannedRun]]
    madd_at: int
    created: dict[str, int]  # series key -> index of the TS.ADD creating it
    one_commit: set[str]  # created by.hash series: never remembered in ``known``


def prepare_batch(results: list[RunResult], options: PushOptions,
                  existing: tuple[set[str], set[str]]) -> PreparedBatch:
    """The commands writing ``results``: one TS.ADD with labels for each series not in
    ``existing`` (known, or created by a batch in flight), one TS.MADD for every other
    point (its DUPLICATE_POLICY LAST keeps re-pushes idempotent), one command per index
    set, the documents' MSET."""
    known, inflight = existing
    plans = [PlannedRun.of(r, options) for r in results]
    batch = Batch()
    madd: list[tuple[keys.SeriesId, PlannedRun]] = []
    created: dict[str, int] = {}
    one_commit: set[str] = set()
    tails: dict[tuple[str, str, str], tuple[int, bytes]] = {}
    for plan in plans:
        for s in plan.series:
            key = s.key
            if key in known or key in inflight or key in created:
                madd.append((s, plan))
            elif s.side.kind == "hash":
                created[key] = queue_hash_add(batch, (s, plan), options, tails)
                one_commit.add(key)
            else:
                created[key] = batch.queue([plan.result], *add_args(s, plan, options))
    madd_at = batch.queue([p.result for _s, p in madd], "TS.MADD", *[
        arg for s, p in madd for arg in (s.key, p.ts, p.result.metrics[s.metric])]) \
        if madd else -1
    queue_indexes(batch, plans)
    commit_runs.queue(batch, plans)
    if options.store_documents:
        queue_documents(batch, plans)
    batch.queue([], "SET", keys.LAST_PUSH_KEY, int(time.time() * 1000))
    return PreparedBatch(plans, batch, madd, madd_at, created, one_commit)


def settle_batch(prepared: PreparedBatch, replies: list[Any], known: set[str],
                 errors: dict[str, list[str]]) -> list[tuple[keys.SeriesId, PlannedRun]]:
    """Record a batch's refusals in ``errors`` (by run id), its created series in
    ``known``; returns the points TS.MADD refused (a known series that vanished)."""
    batch, madd_at = prepared.batch, prepared.madd_at
    refused = madd_refusals(prepared.madd, replies[madd_at]) if prepared.madd else []
    for index, (args, reply) in enumerate(zip(batch.commands, replies)):
        if index != madd_at and isinstance(reply, Exception):
            for owner in batch.owners[index]:
                errors.setdefault(owner.run_id, []).append(_refusal(args, reply))
    # a commit's by.hash series get the points of one push: remembering them would grow an
    # agent's set by ~2,750 keys a commit (551 suites x 5 metrics), ~4 M keys a year
    known.update(k for k, at in prepared.created.items()
                 if k not in prepared.one_commit and not isinstance(replies[at], Exception))
    return refused


def _refusal(args: tuple[Any, ...], reply: Exception) -> str:
    key = args[1] if len(args) > 1 else "?"
    return f"{args[0]} {key}: {reply}"


def _account(plans: list[PlannedRun], errors: dict[str, list[str]],
             report: PushReport) -> None:
    for plan in plans:
        run = plan.result
        found = errors.get(run.run_id)
        if found:
            more = f" (and {len(found) - 1} more)" if len(found) > 1 else ""
            report.failed[run.run_id] = (f"test {run.test_name} run {run.run_id}: "
                                         f"{found[0]}{more}")
        else:
            report.pushed.append(run.run_id)
            report.datapoints += len(plan.series)


def add_args(series: keys.SeriesId, plan: PlannedRun, options: PushOptions) -> list[Any]:
    """A TS.ADD of one point that creates the series, with its labels, if needed."""
    # a by.hash series carries none of the run's labels: not computed for the 5 a run creates
    labels = keys.series_labels(series, {} if series.side.kind == "hash" else plan.run_labels)
    # by.hash and by.version series hold the few runs of one commit or release: a small
    # chunk saves most of the default 4 KiB each (docs/history.md)
    return ["TS.ADD", series.key, plan.ts, float(plan.result.metrics[series.metric]),
            *_creation_args(options.retention_ms, SMALL_CHUNK_BYTES.get(series.side.kind)),
            *_flatten(labels)]


@functools.lru_cache(maxsize=16)
def _creation_args(retention_ms: int, chunk: int | None) -> tuple[Any, ...]:
    """The options of a TS.ADD that may create its series, up to its labels."""
    return ("RETENTION", retention_ms, *(("CHUNK_SIZE", chunk) if chunk else ()),
            "DUPLICATE_POLICY", "LAST", "ON_DUPLICATE", "LAST", "LABELS")


def queue_hash_add(batch: Batch, point: tuple[keys.SeriesId, PlannedRun], options: PushOptions,
                   tails: dict[tuple[str, str, str], tuple[int, bytes]]) -> int:
    """Queue the TS.ADD creating a by.hash series (:func:`add_args`), its options and labels
    packed once per commit, metric and platform in ``tails``: every run creates five such
    series, and packing their ~20 arguments each was a fifth of a push's client work."""
    series, plan = point
    tail_key = (series.side.value, series.metric, series.platform)
    tail = tails.get(tail_key)
    if tail is None:
        rest = tuple(add_args(series, plan, options)[4:])  # the same for every run of the commit
        tail = tails[tail_key] = (len(rest), bulk_strings(rest))
    head = ("TS.ADD", series.key, plan.ts, float(plan.result.metrics[series.metric]))
    return batch.queue_resp([plan.result], command_resp(head, tail), *head[:2])


def madd_refusals(points: list[tuple[keys.SeriesId, PlannedRun]],
                  reply: Any) -> list[tuple[keys.SeriesId, PlannedRun]]:
    """The points a TS.MADD reply refused (all of them if the command failed)."""
    if isinstance(reply, Exception):
        return list(points)
    return [p for p, item in zip(points, reply) if isinstance(item, Exception)]


def readd(link: Wire, points: list[tuple[keys.SeriesId, PlannedRun]],
          options: PushOptions, errors: dict[str, list[str]]) -> None:
    """Send points TS.MADD refused again as TS.ADD (creating, ON_DUPLICATE LAST)."""
    batch = Batch()
    for s, plan in points:
        batch.queue([plan.result], *add_args(s, plan, options))
    link.send(batch)
    for index, (args, reply) in enumerate(zip(batch.commands, link.replies(batch))):
        if isinstance(reply, Exception):
            for owner in batch.owners[index]:
                errors.setdefault(owner.run_id, []).append(_refusal(args, reply))


def queue_indexes(batch: Batch, plans: list[PlannedRun]) -> None:
    """Queue the index-set updates that let readers list tests, branches, versions...:
    one command per set for the whole batch. Runs of one scope, platform, build variant,
    topology, metrics and sides (most of a batch) share their entries: each is added once
    for the group, not once per run."""
    members: dict[tuple[str, str], dict[str, list[RunResult]]] = {}
    times: dict[tuple[str, str], dict[str, int]] = {}  # (flag, zset) -> commit -> time

    def add(command: str, key: str, value: str, runs: list[RunResult]) -> None:
        members.setdefault((command, key), {}).setdefault(value, []).extend(runs)

    for (scope, platform, build_variant, topology, metrics, sides), group in \
            _index_groups(plans).items():
        runs = [plan.result for plan in group]
        idx = keys.index_keys(scope)
        add("SADD", keys.SCOPES_KEY, scope.path, runs)
        for plan in group:
            add("SADD", idx.tests, plan.names.test_name, [plan.result])
            add("HSET", idx.tested, plan.names.test_name, [plan.result])
        for metric in metrics:
            add("SADD", idx.metrics, metric, runs)
        add("SADD", idx.platforms, platform, runs)
        add("SADD", idx.build_variants, build_variant, runs)
        add("SADD", idx.topologies, topology, runs)
        side_sets = {"branch": idx.branches, "version": idx.versions, "hash": idx.hashes}
        for side in sides:
            add("SADD", side_sets[side.kind], side.value, runs)
            if side.kind == "hash":  # gc expires a commit's series by its newest point
                for flag, key in (("GT", idx.hash_times), ("GT", idx.hash_last),
                                  ("LT", idx.hash_first)):
                    for plan in group:
                        _keep(times.setdefault((flag, key), {}), side.value, plan.ts, flag)
                    add("ZADD" + flag, key, side.value, runs)
    for (command, key), values in members.items():
        owners = list({id(r): r for runs in values.values() for r in runs}.values())
        if command == "SADD":
            batch.queue(owners, "SADD", key, *values)
        elif command == "HSET":
            batch.queue(owners, "HSET", key, *[a for name, runs in values.items()
                                               for a in (name, keys.tested_items(runs[-1]))])
        else:
            flag = command[4:]
            batch.queue(owners, "ZADD", key, flag, *[
                arg for value in values for arg in (times[(flag, key)][value], value)])


def _index_groups(plans: list[PlannedRun]) -> dict[tuple[Any, ...], list[PlannedRun]]:
    """Plans by what their index entries besides the test name depend on."""
    groups: dict[tuple[Any, ...], list[PlannedRun]] = {}
    for plan in plans:
        ctx, names = plan.result.context, plan.names
        groups.setdefault((names.scope, ctx.platform, ctx.build_variant, ctx.topology,
                           names.metrics, names.sides), []).append(plan)
    return groups


def _keep(times: dict[str, int], commit: str, ts: int, flag: str) -> None:
    """The greatest (GT) or least (LT) time of ``commit`` in this batch."""
    old = times.get(commit)
    times[commit] = ts if old is None else (max(old, ts) if flag == "GT" else min(old, ts))


def queue_documents(batch: Batch, plans: list[PlannedRun]) -> None:
    """Queue the runs' documents (lean: :mod:`.documents`) and the tests' run indexes (run id
    by start time, the one index of documents).

    Stored as plain strings of JSON rather than RedisJSON documents: written once and always
    read whole, and it works on any RedisTimeSeries datasink, including shared ones that do
    not load the JSON module.
    """
    runs = [p.result for p in plans]
    batch.queue(runs, "MSET", *[arg for r in runs
                                for arg in (keys.run_key(r.run_id), documents.encode_lean(r))])
    by_test: dict[str, list[RunResult]] = {}
    for plan in plans:
        # under the series' test name: a sweep's runs are found beside each swept value's series
        key = keys.test_runs_key(plan.names.scope, plan.names.test_name)
        by_test.setdefault(key, []).append(plan.result)
    for key, owners in by_test.items():
        batch.queue(owners, "ZADD", key, *[a for r in owners for a in (r.start_ms, r.run_id)])


def _flatten(labels: dict[str, str]) -> list[str]:
    return [item for pair in labels.items() for item in pair]
