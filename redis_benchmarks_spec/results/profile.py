"""The parts of the result document that profilers and per-test telemetry write.

Kept apart from :mod:`.document` (which embeds them) so the profiler and telemetry formats
have one definition each, read and written by the same classes.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.common.records import known

PROFILE_OK = "ok"
PROFILE_UNAVAILABLE = "unavailable"  # the host or launcher cannot do it; says why
PROFILE_FAILED = "failed"  # it should have worked and did not; says why

#: the flag a run gets when a profiler ran: its throughput is not regression history
PROFILED = "profiled"


#: how every surface marks the timed figures of an instrumented run it leaves out
INSTRUMENTED_NOTE = ("measured under a profiler (callgrind ran the server ~6-50x slower, "
                     "perf sampled it): their throughput and latency are not the server's "
                     "speed")


def instrumented(flags: Iterable[str]) -> bool:
    """This run's timed figures are not the server's speed: a profiler watched it (the
    ``profiled`` flag; under callgrind with a fixed request count, a counted run). Its timed
    metrics (``Metric.timed``), the tool's own rate, percentiles and histogram are kept in its
    document, as what they are; no verdict, plot, table, JSON row or series reads them as
    speed. The one rule every surface asks (:func:`under_profiler` for one metric)."""
    return PROFILED in flags


def under_profiler(flags: Iterable[str], metric: str) -> bool:
    """A timed metric (``common.metrics``) of an :func:`instrumented` run: kept, never read
    as the server's speed. Its deterministic metrics (instruction counts, memory after the
    preload) are the same under any profiler."""
    return instrumented(flags) and catalogued(metric).timed


@dataclass
class ProfileSummary:
    """What one profiler found in the measured window of one test.

    ``data`` is profiler-specific plain JSON (documented in docs/profiling.md): top symbols
    for perf-record, per-event counts for perf-stat, instruction counts for instructions.
    Artifacts (flame graphs, folded stacks, raw data) are in the result's ``paths``.
    """

    profiler: str
    status: str = PROFILE_OK
    reason: str = ""  # one line, for unavailable/failed
    method: str = ""  # how the numbers were produced (e.g. "callgrind", "perf stat")
    data: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.status == PROFILE_OK


@dataclass
class ThreadCpu:
    """CPU one server thread used during the measured window."""

    tid: int
    name: str
    kind: str  # main | io | bio | other
    cpu_pct: float  # % of one core over the window
    user_s: float = 0.0
    system_s: float = 0.0


@dataclass
class ServerTelemetry:
    """Per server process: its threads' CPU and its RSS over the measured window."""

    pid: int
    threads: list[ThreadCpu] = field(default_factory=list)
    rss_samples: int = 0
    rss_start_bytes: int = 0
    rss_end_bytes: int = 0
    rss_max_bytes: int = 0
    rss_mean_bytes: float = 0.0

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> ServerTelemetry:
        data = known(cls, raw)
        data["threads"] = [ThreadCpu(**known(ThreadCpu, t)) for t in data.get("threads", [])]
        return cls(**data)


@dataclass
class HostContext:
    """What explains noise on the host: hardware, kernel, frequency policy, contention.

    Fields the host does not expose are None (never guessed). ``steal_pct`` and the load
    averages cover the measured window.
    """

    cpu_model: str | None = None
    cpus_online: int | None = None
    kernel: str | None = None
    governor: str | None = None
    turbo: str | None = None  # "on" | "off" | None when unreadable
    load_1m_start: float | None = None
    load_1m_end: float | None = None
    steal_pct: float | None = None
    busy_pct: float | None = None  # whole host CPU busy % during the window


@dataclass
class RunTelemetry:
    """Per-test telemetry beyond the client/server CPU summary of the saturation guard."""

    window_s: float = 0.0
    host: HostContext = field(default_factory=HostContext)
    servers: list[ServerTelemetry] = field(default_factory=list)
    sample_interval_s: float = 0.0

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> RunTelemetry:
        data = known(cls, raw)
        data["host"] = HostContext(**known(HostContext, data.get("host") or {}))
        data["servers"] = [ServerTelemetry.from_dict(s) for s in data.get("servers", [])]
        return cls(**data)


def profiles_from_dict(raw: dict[str, Any]) -> dict[str, ProfileSummary]:
    """The ``profiles`` field of a result document."""
    return {name: ProfileSummary(**known(ProfileSummary, value)) for name, value in raw.items()}
