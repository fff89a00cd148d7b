"""What a running test is doing now, for progress displays, without the test run knowing.

The session wraps the launcher and the client drivers it hands to a test run; each call the
run makes through them (start a server, preload, warm up, run the client, read its output,
stop) reports a phase first. The wrappers change nothing else: every call is passed on.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.loadgen.base import ClientDriver, ClientTarget, Invocation
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.runner.launcher import ServerHandle, ServerLauncher, ServerSpec
from redis_benchmarks_spec.suites.suite import ToolConfig

OnPhase = Callable[[str], None]


class PhaseLauncher:
    """A :class:`ServerLauncher` that reports starting and stopping servers."""

    def __init__(self, inner: ServerLauncher, on_phase: OnPhase) -> None:
        self._inner, self._on_phase = inner, on_phase

    def start(self, spec: ServerSpec) -> ServerHandle:
        self._on_phase("starting redis-server")
        handle = self._inner.start(spec)
        self._on_phase("preparing the dataset")  # what a run does once its server is up
        return handle

    def stop(self, handle: ServerHandle) -> None:
        self._on_phase("stopping redis-server")
        self._inner.stop(handle)

    def __getattr__(self, name: str) -> Any:  # stop_all and the rest, unchanged
        return getattr(self._inner, name)


class PhaseDriver:
    """A :class:`ClientDriver` that reports preload, warm-up, run and parse."""

    def __init__(self, inner: ClientDriver, on_phase: OnPhase) -> None:
        self._inner, self._on_phase = inner, on_phase
        self.tool, self.binary = inner.tool, inner.binary

    def invocation(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
                   test_time: int | None, rate: float | None = None) -> Invocation:
        what = "preloading" if out_prefix.name == "preload" else "running"
        self._on_phase(f"{what} {self.tool}")
        return self._inner.invocation(cfg, target, out_prefix, test_time, rate)

    def warmup(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
               test_time: int | None) -> Invocation | None:
        self._on_phase(f"warming up {self.tool}")
        return self._inner.warmup(cfg, target, out_prefix, test_time)

    def parse(self, inv: Invocation, returncode: int) -> ToolResult:
        self._on_phase(f"reading {self.tool} output")
        return self._inner.parse(inv, returncode)

    def version(self) -> str:
        return self._inner.version()
