"""Push result documents into RedisTimeSeries: one pipelined round trip per test run.

Every write of one run (each metric on each side, the index sets, the result document) is
queued on one non-transactional pipeline and sent with one ``execute()``. Series are
created with ``DUPLICATE_POLICY LAST`` and points added with ``ON_DUPLICATE LAST``, so
pushing the same run again rewrites the same points and adds none.
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass, field
from typing import Any, Literal

import redis

from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.results.document import RunResult

TimestampSource = Literal["start", "commit"]
HASH_SERIES_CHUNK_BYTES = 256


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
    """What a push did. ``round_trips`` counts pipeline executions (one per pushed run)."""

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
    """Push every ok result, one pipelined round trip each.

    Results that are not ok, or have nothing to write, are listed in ``skipped``; a run whose
    commands the server rejected is listed in ``failed``. Connection errors propagate: the
    caller decides what stays on disk. ``known_series`` (keys this process already created,
    updated here) lets a long batch send points of existing series as one compact TS.MADD;
    pass the same set to consecutive calls to keep that benefit.
    """
    options = options or PushOptions()
    known = set() if known_series is None else known_series
    report = PushReport()
    started = time.monotonic()
    for result in results:
        why_not = skip_reason(result, options)
        if why_not:
            report.skipped[result.run_id] = why_not
            continue
        try:
            report.datapoints += push_one(client, result, options, known, report)
        except DatasinkWriteError as exc:
            report.failed[result.run_id] = str(exc)
        else:
            report.pushed.append(result.run_id)
    report.elapsed_s = time.monotonic() - started
    return report


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


def push_one(client: redis.Redis, result: RunResult, options: PushOptions,
             known: set[str], report: PushReport) -> int:
    """Write one run in one round trip; returns the number of datapoints written.

    Series not in ``known`` get a TS.ADD carrying their labels (which create them); points
    of known series go in one TS.MADD (their DUPLICATE_POLICY LAST keeps re-pushes
    idempotent). Should a known series have vanished or refuse the point, those points are
    re-sent with TS.ADD in a second round trip.
    """
    ts = timestamp_of(result, options)
    series = keys.series_ids(result)
    fresh = [s for s in series if s.key not in known]
    existing = [s for s in series if s.key in known]
    pipe = client.pipeline(transaction=False)
    for s in fresh:
        queue_add(pipe, s, result, ts, options)
    if existing:
        pipe.execute_command("TS.MADD", *[arg for s in existing
                                          for arg in (s.key, ts, result.metrics[s.metric])])
    queue_indexes(pipe, result, options)
    if options.store_documents:
        queue_document(pipe, result)
    pipe.set(keys.LAST_PUSH_KEY, int(time.time() * 1000))
    commands = [args for args, _options in pipe.command_stack]  # execute() clears the stack
    replies = pipe.execute(raise_on_error=False)
    report.round_trips += 1
    refused: list[keys.SeriesId] = []
    if existing:
        madd_at = len(fresh)
        refused = madd_refusals(existing, replies[madd_at])
        del commands[madd_at], replies[madd_at]
    check_replies(result, commands, replies)
    known.update(s.key for s in fresh)
    if refused:
        readd(client, result, refused, ts, options)
        report.round_trips += 1
    return len(series)


def queue_add(pipe: Any, series: keys.SeriesId, result: RunResult, ts: int,
              options: PushOptions) -> None:
    """Queue a TS.ADD of one point that creates the series, with its labels, if needed."""
    labels = {**series.labels(), **keys.run_labels(result)}
    # a by.hash series holds the few runs of one commit: a small chunk saves ~4 KiB each
    chunk = ["CHUNK_SIZE", HASH_SERIES_CHUNK_BYTES] if series.side.kind == "hash" else []
    pipe.execute_command(
        "TS.ADD", series.key, ts, float(result.metrics[series.metric]),
        "RETENTION", options.retention_ms, *chunk, "DUPLICATE_POLICY", "LAST",
        "ON_DUPLICATE", "LAST", "LABELS", *_flatten(labels),
    )


def madd_refusals(series: list[keys.SeriesId], reply: Any) -> list[keys.SeriesId]:
    """The series whose point a TS.MADD reply refused (all of them if the command failed)."""
    if isinstance(reply, Exception):
        return list(series)
    return [s for s, item in zip(series, reply) if isinstance(item, Exception)]


def readd(client: redis.Redis, result: RunResult, series: list[keys.SeriesId], ts: int,
          options: PushOptions) -> None:
    """Send points TS.MADD refused again as TS.ADD (creating, ON_DUPLICATE LAST)."""
    pipe = client.pipeline(transaction=False)
    for s in series:
        queue_add(pipe, s, result, ts, options)
    commands = [args for args, _options in pipe.command_stack]
    check_replies(result, commands, pipe.execute(raise_on_error=False))


def queue_indexes(pipe: Any, result: RunResult, options: PushOptions) -> None:
    """Queue the index-set updates that let readers list tests, branches, versions..."""
    scope = keys.Scope.of(result)
    idx = keys.index_keys(scope)
    ctx = result.context
    pipe.sadd(keys.SCOPES_KEY, scope.path)
    pipe.sadd(idx.tests, keys.series_test_name(result))
    pipe.sadd(idx.metrics, *keys.history_metrics(result))
    pipe.sadd(idx.platforms, ctx.platform)
    pipe.sadd(idx.build_variants, ctx.build_variant)
    pipe.sadd(idx.topologies, ctx.topology)
    side_sets = {"branch": idx.branches, "version": idx.versions, "hash": idx.hashes}
    for side in keys.sides_of(result):
        pipe.sadd(side_sets[side.kind], side.value)
        if side.kind == "hash":  # gc expires a commit's series by its newest point
            pipe.zadd(idx.hash_times, {side.value: timestamp_of(result, options)}, gt=True)


def queue_document(pipe: Any, result: RunResult) -> None:
    """Queue the full result document under its run id, and the test's run index.

    Stored as a plain string of JSON rather than a RedisJSON document: it is written once
    and always read whole (analysis wants the encoded histogram, not a path inside it), it
    is the same JSON as the file on disk (``RunResult.to_dict``), and it works on any RedisTimeSeries datasink,
    including shared ones that do not load the JSON module.
    """
    pipe.set(keys.run_key(result.run_id), json.dumps(result.to_dict(), sort_keys=True))
    scope = keys.Scope.of(result)
    pipe.zadd(keys.test_runs_key(scope, result.test_name), {result.run_id: result.start_ms})
    pipe.sadd(keys.index_keys(scope).runs, result.run_id)


def check_replies(result: RunResult, commands: list[tuple[Any, ...]],
                  replies: list[Any]) -> None:
    """Raise :class:`DatasinkWriteError` naming the first rejected command and its key."""
    errors = []
    for args, reply in zip(commands, replies):
        if isinstance(reply, Exception):
            key = args[1] if len(args) > 1 else "?"
            errors.append(f"{args[0]} {key}: {reply}")
    if errors:
        more = f" (and {len(errors) - 1} more)" if len(errors) > 1 else ""
        raise DatasinkWriteError(f"test {result.test_name} run {result.run_id}: "
                                 f"{errors[0]}{more}")


def _flatten(labels: dict[str, str]) -> list[str]:
    return [item for pair in labels.items() for item in pair]
