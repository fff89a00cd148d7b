"""What each stage of a test run hands back: small frozen records.

A test run (:mod:`runner.execute`) collects them (:class:`results.assembly.RunRecords`) and
assembles its :class:`RunResult` once from them at the end (:func:`results.assembly.assemble`).
No stage writes into a result document: the server statistics (:mod:`runner.node_stats`), the
telemetry and profile window (:mod:`telemetry.window`), the error-reply hints
(:mod:`runner.error_hints`), the derived metrics (server CPU per op, deployment totals) and the
run's own steps each return a record. The stored document keeps its flat keys
(``info_delta``, ``profiles``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.results import memory as memory_mod
from redis_benchmarks_spec.results.document import CpuUsage, DeploymentRecord, RunContext
from redis_benchmarks_spec.results.profile import ProfileSummary, RunTelemetry
from redis_benchmarks_spec.results.tool_result import ToolResult


@dataclass(frozen=True)
class RunStart:
    """What a run knows before it starts anything: which test, where, when."""

    test_name: str
    run_id: str
    context: RunContext
    suite_file: str
    tested_groups: list[str]
    tested_commands: list[str]
    tool: str
    redis_server: str
    start_ms: int
    sweep: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class CpuPlacement:
    """The CPUs handed to the servers and the client, and how they were chosen."""

    cpus: dict[str, list[int]]
    why: str = ""


@dataclass(frozen=True)
class ServerSetup:
    """The servers' arguments (suite + topology + run extras) and the suite's dataset."""

    server_args: list[str]
    dataset: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class ServerIdentity:
    """Which Redis answered (INFO server and memory)."""

    version: str = ""
    git_sha: str = ""
    build_id: str = ""
    mem_allocator: str = ""


@dataclass(frozen=True)
class ClientRun:
    """The client tools as started and timed: argv (passwords redacted), their output
    files, versions, how long they ran and the CPU both sides used meanwhile."""

    argv: list[list[str]]
    paths: dict[str, str]
    tool_version: str
    duration_s: float | None = None
    cpu: dict[str, CpuUsage] = field(default_factory=dict)


@dataclass(frozen=True)
class ToolOutcome:
    """The tool's result (its data as the tool wrote it) and the exporter's metrics."""

    result: ToolResult
    metrics: dict[str, float] = field(default_factory=dict)
    missing: list[str] = field(default_factory=list)
    metric_paths: dict[str, str] = field(default_factory=dict)  # metric name -> its JSONPath


@dataclass(frozen=True)
class ServerStats:
    """What the servers did during the run: per node in the deployment record, and the
    primaries' sums (replicas repeat their primary's writes)."""

    deployment: DeploymentRecord
    info_delta: dict[str, float] = field(default_factory=dict)
    commandstats_delta: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass(frozen=True)
class WindowRecord:
    """The measured window's telemetry, and the profilers' summaries, artifacts, metrics and
    flag."""

    telemetry: RunTelemetry | None = None
    profiles: dict[str, ProfileSummary] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class Findings:
    """Flags a check raised and the notes that say why, one line each."""

    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class DerivedMetrics:
    """Metrics the run derives beside the exporter's (name -> value, and the JSONPath a
    metric answers to when it has one); never over a metric the exporter found."""

    values: dict[str, float] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)


@dataclass(frozen=True)
class MemoryRecord:
    """The deployment's memory after the preload and, when the load ran, after the run."""

    after_preload: memory_mod.MemorySnapshot | None = None
    after_run: memory_mod.MemorySnapshot | None = None

    def moments(self) -> dict[str, Any]:
        """``result.memory``: each moment's figures."""
        return {moment: snapshot.to_dict() for moment, snapshot, _ in self._taken()}

    def metrics(self) -> dict[str, float]:
        """Both moments' totals as metrics (the after-run ones with their suffix)."""
        return {name: value for _, snapshot, suffix in self._taken()
                for name, value in snapshot.metrics(suffix).items()}

    def _taken(self) -> list[tuple[str, memory_mod.MemorySnapshot, str]]:
        moments = ((memory_mod.AFTER_PRELOAD, self.after_preload, ""),
                   (memory_mod.AFTER_RUN, self.after_run, memory_mod.AFTER_RUN_SUFFIX))
        return [(m, s, suffix) for m, s, suffix in moments if s is not None]


@dataclass(frozen=True)
class RateRecord:
    """A paced run's record (``loadgen/pacing.py``): offered and achieved rates, saturation."""

    record: dict[str, Any]


@dataclass(frozen=True)
class KeptLogs:
    """The server logs copied beside the result, and the entry log's tail."""

    paths: dict[str, str]
    tail: str = ""


@dataclass(frozen=True)
class Outcome:
    """How the run ended: its status and, for a failure, why and the evidence."""

    status: str
    reason: str = ""
    log_tail: str = ""
