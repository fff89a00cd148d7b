"""What each stage of a test run hands back, and the one place those records become fields
of the result document.

A test run (:mod:`runner.execute`) owns its :class:`RunResult`. The stages it calls do not
write into it: the server statistics (:mod:`runner.node_stats`), the telemetry and profile
window (:mod:`telemetry.window`), the error-reply hints (:mod:`runner.error_hints`) and the
derived metrics (server CPU per op, deployment totals) each return a record, and the run adds
it here. The stored document keeps its flat keys (``info_delta``, ``profiles``, ...).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.results import memory as memory_mod
from redis_benchmarks_spec.results.document import DeploymentRecord, RunResult
from redis_benchmarks_spec.results.profile import ProfileSummary, RunTelemetry


@dataclass
class ServerStats:
    """What the servers did during the run: per node in the deployment record, and the
    primaries' sums (replicas repeat their primary's writes)."""

    deployment: DeploymentRecord
    info_delta: dict[str, float] = field(default_factory=dict)
    commandstats_delta: dict[str, dict[str, float]] = field(default_factory=dict)


@dataclass
class WindowRecord:
    """The measured window's telemetry, and the profilers' summaries, artifacts, metrics and
    flag."""

    telemetry: RunTelemetry | None = None
    profiles: dict[str, ProfileSummary] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)
    flags: list[str] = field(default_factory=list)


@dataclass
class Findings:
    """Flags a check raised and the notes that say why, one line each."""

    flags: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


@dataclass
class DerivedMetrics:
    """Metrics the run derives beside the exporter's (name -> value, and the JSONPath a
    metric answers to when it has one); never over a metric the exporter found."""

    values: dict[str, float] = field(default_factory=dict)
    paths: dict[str, str] = field(default_factory=dict)


@dataclass
class MemoryRecord:
    """The deployment's memory after the preload and, when the load ran, after the run."""

    after_preload: memory_mod.MemorySnapshot | None = None
    after_run: memory_mod.MemorySnapshot | None = None


def add_memory(result: RunResult, record: MemoryRecord) -> None:
    """Both moments into ``result.memory``, their totals into the metrics (never over a
    metric the exporter found); calling it again after the exporter's metrics are set adds
    them back."""
    moments = ((memory_mod.AFTER_PRELOAD, record.after_preload, ""),
               (memory_mod.AFTER_RUN, record.after_run, memory_mod.AFTER_RUN_SUFFIX))
    for moment, snapshot, suffix in moments:
        if snapshot is None:
            continue
        result.memory[moment] = snapshot.to_dict()
        for name, value in snapshot.metrics(suffix).items():
            result.metrics.setdefault(name, value)


def add_rate(result: RunResult, record: dict[str, Any], note: str) -> None:
    """A paced run's record (``loadgen/pacing.py``); its offered and achieved rates become
    metrics too, and a saturated point is flagged with ``note`` saying why."""
    if not record:
        return
    result.rate = record
    for name in ("offered_rps", "achieved_rps"):
        result.metrics.setdefault(name, float(record[name]))
    if record.get("saturated"):
        add_findings(result, Findings(["saturated"], [note]))


def add_server_stats(result: RunResult, stats: ServerStats) -> None:
    result.deployment = stats.deployment
    result.info_delta = stats.info_delta
    result.commandstats_delta = stats.commandstats_delta


def add_window(result: RunResult, window: WindowRecord) -> None:
    result.telemetry = window.telemetry
    result.profiles.update(window.profiles)
    result.paths.update(window.paths)
    result.metrics.update(window.metrics)
    add_findings(result, Findings(window.flags))


def add_findings(result: RunResult, findings: Findings) -> None:
    result.flags += [f for f in dict.fromkeys(findings.flags) if f not in result.flags]
    result.notes += findings.notes


def add_derived(result: RunResult, derived: DerivedMetrics) -> None:
    for name, value in derived.values.items():
        if name not in result.metrics:
            result.metrics[name] = value
            if name in derived.paths:
                result.metric_paths[name] = derived.paths[name]


def add_concurrency(result: RunResult, record: dict[str, Any], findings: Findings) -> None:
    """A concurrency sweep point's record (``runner/concurrency.py``) and its flag."""
    result.concurrency = record
    add_findings(result, findings)
