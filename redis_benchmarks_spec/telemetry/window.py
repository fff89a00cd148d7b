"""Everything that watches the measured window of a test: per-thread CPU, RSS and host
context (always, unless turned off), and the profilers chosen with ``--profilers``.

The runner makes four calls: :meth:`MeasuredWindow.server_wrapper` when it starts the
servers, :meth:`start` with every server pid right before the client starts, :meth:`stop`
right after the client ends, and :meth:`finish` when the result is being written.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.results.profile import RunTelemetry
from redis_benchmarks_spec.results.stages import WindowRecord
from redis_benchmarks_spec.telemetry.host import HostWindow
from redis_benchmarks_spec.telemetry.profilers.base import FinishInput, ProfilerOptions
from redis_benchmarks_spec.telemetry.profilers.registry import WRAPPED_SLOWDOWN, Profiling
from redis_benchmarks_spec.telemetry.threads import ServerThreadSampler

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class WindowOptions:
    """Session-wide: profilers to run, and whether per-test telemetry is sampled."""

    profilers: ProfilerOptions = field(default_factory=ProfilerOptions)
    telemetry: bool = True
    rss_interval_s: float = 0.5


class MeasuredWindow:
    """Telemetry and profilers of one test (see module doc)."""

    def __init__(self, options: WindowOptions, out_dir: Path, registry: ProcessRegistry,
                 launcher: str = "process") -> None:
        self.options = options
        self.out_dir = out_dir
        self.registry = registry
        self.profiling = Profiling(options.profilers, launcher) \
            if options.profilers.names else None
        self.host: HostWindow | None = None
        self.threads: ServerThreadSampler | None = None
        self.telemetry: RunTelemetry | None = None
        self._open = False

    @property
    def profiled(self) -> bool:
        return self.profiling is not None

    @property
    def slowdown(self) -> float:
        """How much longer the client may take (the server may run under callgrind)."""
        return WRAPPED_SLOWDOWN if self.profiling and self.profiling.wraps_server else 1.0

    def fixed_requests(self) -> int | None:
        return self.profiling.fixed_requests() if self.profiling else None

    def server_wrapper(self, workdir: Path) -> list[str]:
        return self.profiling.server_wrapper(workdir) if self.profiling else []

    def start(self, pids: list[int], test_name: str) -> None:
        self._open = True
        if self.options.telemetry:
            self.host = HostWindow()
            self.host.start()
            self.threads = ServerThreadSampler(pids, self.options.rss_interval_s)
            self.threads.start()
        if self.profiling:
            self.profiling.start(pids, self.out_dir, self.registry, test_name)

    def stop(self) -> None:
        """Close the window; safe to call twice (the second call does nothing)."""
        if not self._open:
            return
        self._open = False
        if self.profiling:
            self.profiling.stop()
        if self.threads is not None and self.host is not None:
            seconds, servers = self.threads.stop()
            self.telemetry = RunTelemetry(window_s=round(seconds, 3), host=self.host.stop(),
                                          servers=servers,
                                          sample_interval_s=self.options.rss_interval_s)

    def finish(self, commandstats_delta: dict[str, dict[str, float]],
               tested_commands: list[str]) -> WindowRecord:
        """The window closed: its telemetry, and the profile summaries, their artifacts,
        metrics and flag (per-op figures divide by the run's ``commandstats_delta``)."""
        self.stop()
        if self.profiling is None:
            return WindowRecord(self.telemetry)
        finish = FinishInput(commandstats_delta, tested_commands, self.options.profilers)
        summaries, paths, metrics = self.profiling.summaries(finish)
        return WindowRecord(self.telemetry, summaries, paths, metrics, [self.profiling.flag])
