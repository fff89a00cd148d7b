"""The one place a test run's result document is made: from the records its stages handed
back (:mod:`results.stages`), once, at the end of the run, failed or not.

:class:`RunRecords` is the run's notebook: :class:`runner.execute.SuiteRun` files each stage's
frozen record in it as the stage returns. :func:`assemble` turns the notebook into the frozen
:class:`RunResult`; nothing changes that document afterwards (a reader that needs a changed
copy makes one with ``dataclasses.replace``).

Metrics are merged in one order: the exporter's (evaluated on the tool's data), then the
memory totals, a paced run's rates and the derived metrics, each never over one already
there, then the profilers' (which a profiled window measures and so replace).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.credentials import mask_text
from redis_benchmarks_spec.results import binary as binary_mod
from redis_benchmarks_spec.results.binary import ServerBinary
from redis_benchmarks_spec.results.document import STATUS_OK, DeploymentRecord, RunResult
from redis_benchmarks_spec.results.stages import (
    ClientRun,
    CpuPlacement,
    DerivedMetrics,
    Findings,
    KeptLogs,
    MemoryRecord,
    Outcome,
    RateRecord,
    RunStart,
    ServerIdentity,
    ServerSetup,
    ServerStats,
    ToolOutcome,
    WindowRecord,
)

SATURATED = "saturated"


@dataclass
class RunRecords:
    """The records one run's stages returned so far, filed by the run that owns them."""

    start: RunStart
    placement: CpuPlacement | None = None
    setup: ServerSetup | None = None
    deployment: DeploymentRecord | None = None
    server_log: str = ""
    network: dict[str, Any] = field(default_factory=dict)
    preload_duration_s: float | None = None
    memory: MemoryRecord | None = None
    identity: ServerIdentity | None = None
    client_credential: str = ""
    clients: ClientRun | None = None
    server_stats: ServerStats | None = None
    tool: ToolOutcome | None = None
    rate: RateRecord | None = None
    concurrency: dict[str, Any] = field(default_factory=dict)
    derived: list[DerivedMetrics] = field(default_factory=list)
    findings: list[Findings] = field(default_factory=list)  # in the order they were raised
    window: WindowRecord | None = None
    cleanup_errors: list[str] = field(default_factory=list)
    logs: KeptLogs | None = None

    def add_rate(self, record: dict[str, Any], note: str) -> None:
        """A paced run's record; a saturated point is flagged with ``note`` saying why, a
        stalled one keeps ``note`` without the flag."""
        if not record:
            return
        self.rate = RateRecord(record)
        if record.get("saturated"):
            self.findings.append(Findings([SATURATED], [note]))
        elif note:
            self.findings.append(Findings([], [note]))


def assemble(records: RunRecords, outcome: Outcome, end_ms: int) -> RunResult:
    """The run's result document, made once from its records (passwords masked in the
    reason and the log tail)."""
    start, setup, tool = records.start, records.setup, records.tool
    clients = records.clients or ClientRun([], {}, "")
    stats, window = records.server_stats, records.window or WindowRecord()
    identity = records.identity or ServerIdentity()
    metrics, metric_paths = merged_metrics(records)
    flags, notes = merged_findings([*records.findings, Findings(list(window.flags))])
    log_tail = outcome.log_tail
    if outcome.status != STATUS_OK and not log_tail and records.logs:
        log_tail = records.logs.tail
    return RunResult(
        test_name=start.test_name, run_id=start.run_id, status=outcome.status,
        context=start.context, suite_file=start.suite_file,
        tested_groups=list(start.tested_groups), tested_commands=list(start.tested_commands),
        reason=mask_text(outcome.reason), log_tail=mask_text(log_tail), tool=start.tool,
        tool_version=clients.tool_version, argv=list(clients.argv),
        redis_version=identity.version, redis_git_sha=identity.git_sha,
        redis_server=start.redis_server, binary=_binary(identity, start.context.build),
        server_args=list(setup.server_args) if setup else [],
        cpus=dict(records.placement.cpus) if records.placement else {},
        cpu_placement=records.placement.why if records.placement else "",
        start_ms=start.start_ms, end_ms=end_ms, preload_duration_s=records.preload_duration_s,
        tool_duration_s=clients.duration_s, result=tool.result if tool else None,
        metrics=metrics, metric_paths=metric_paths,
        missing_metrics=list(tool.missing) if tool else [],
        info_delta=dict(stats.info_delta) if stats else {},
        commandstats_delta=dict(stats.commandstats_delta) if stats else {},
        cpu=dict(clients.cpu), flags=flags, paths=_paths(records),
        cleanup_errors=list(records.cleanup_errors), deployment=records.deployment,
        dataset=dict(setup.dataset) if setup else {}, notes=notes, sweep=dict(start.sweep),
        concurrency=dict(records.concurrency), profiles=dict(window.profiles),
        telemetry=window.telemetry, network=dict(records.network),
        client_credential=records.client_credential,
        memory=records.memory.moments() if records.memory else {},
        rate=dict(records.rate.record) if records.rate else {})


def _binary(identity: ServerIdentity, build: dict[str, Any]) -> ServerBinary | None:
    """The binary that served the run: what it said, and its artifact's dependencies."""
    if not identity.version:
        return None  # the server never answered INFO
    info = {"redis_version": identity.version, "redis_git_sha1": identity.git_sha,
            "redis_build_id": identity.build_id, "mem_allocator": identity.mem_allocator}
    deps = build.get("deps")
    return binary_mod.from_info(info, deps if isinstance(deps, dict) else {})


def merged_metrics(records: RunRecords) -> tuple[dict[str, float], dict[str, str]]:
    """The run's metrics and the JSONPaths they answer to, merged in the module's order."""
    tool = records.tool
    metrics = dict(tool.metrics) if tool else {}
    paths = dict(tool.metric_paths) if tool else {}
    if records.memory:
        for name, value in records.memory.metrics().items():
            metrics.setdefault(name, value)
    if records.rate:
        for name in ("offered_rps", "achieved_rps"):
            metrics.setdefault(name, float(records.rate.record[name]))
    for derived in records.derived:
        for name, value in derived.values.items():
            if name not in metrics:
                metrics[name] = value
                if name in derived.paths:
                    paths[name] = derived.paths[name]
    if records.window:
        metrics.update(records.window.metrics)
    return metrics, paths


def merged_findings(findings: list[Findings]) -> tuple[list[str], list[str]]:
    """Every flag once, in the order first raised, and every note."""
    flags = list(dict.fromkeys(f for one in findings for f in one.flags))
    return flags, [n for one in findings for n in one.notes]


def _paths(records: RunRecords) -> dict[str, str]:
    """The run's files: the server log, the clients' outputs, the window's artifacts, the
    logs kept at clean-up (the kept entry log replaces the live one)."""
    paths = {"server_log": records.server_log} if records.server_log else {}
    if records.clients:
        paths.update(records.clients.paths)
    if records.window:
        paths.update(records.window.paths)
    if records.logs:
        paths.update(records.logs.paths)
    return paths
