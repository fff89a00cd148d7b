"""Client drivers behind one small interface, and tool discovery.

A driver turns a suite's :class:`ToolConfig` into an argv for one target, and the tool's
output files back into a :class:`ToolResult`. The runner does the process handling.
"""

from __future__ import annotations

import shutil
from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.loadgen import redis_benchmark, registry
from redis_benchmarks_spec.loadgen.base import (
    WARMUP,
    ClientDriver,
    ClientTarget,
    Invocation,
    out_file,
)
from redis_benchmarks_spec.loadgen.registry import DriverEntry
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.suites.suite import ToolConfig


class RedisBenchmarkDriver:
    tool = "redis-benchmark"

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._version: str | None = None

    @staticmethod
    def _target(target: ClientTarget) -> redis_benchmark.Target:
        return redis_benchmark.Target(target.host, target.port, target.password, target.user,
                                      target.cluster)

    def warmup(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
               test_time: int | None) -> Invocation | None:
        if test_time is None:
            return None  # a full-length run needs no sizing
        argv = redis_benchmark.warmup_argv(self.binary, cfg, self._target(target))
        return Invocation(argv, out_file(out_prefix, WARMUP + ".out"), None, 1.0)

    def invocation(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
                   test_time: int | None, rate: float | None = None) -> Invocation:
        argv = redis_benchmark.build_argv(self.binary, cfg, self._target(target), test_time,
                                          rate)
        n = redis_benchmark.requests_in(argv)
        expected = n / (rate or redis_benchmark.ASSUMED_RPS_PER_STREAM *
                        redis_benchmark._pipeline(argv))
        return Invocation(argv, out_file(out_prefix, ".out"), None, expected)

    def parse(self, inv: Invocation, returncode: int) -> ToolResult:
        text = redis_benchmark.read_output(inv.stdout_path)
        redis_benchmark.check_server_errors(text, returncode)
        if returncode != 0:
            raise RuntimeError(f"redis-benchmark exited with code {returncode}")
        return redis_benchmark.parse_csv(text, str(inv.stdout_path),
                                         redis_benchmark.requests_in(inv.argv))

    def version(self) -> str:
        if self._version is None:
            self._version = redis_benchmark.version(self.binary)
        return self._version


DRIVER = DriverEntry("redis-benchmark", "redis-benchmark", "--redis-benchmark-bin",
                     RedisBenchmarkDriver)


@dataclass
class ToolPaths:
    """Binaries to use; None means "look on PATH" (and skip suites whose tool is missing)."""

    redis_server: str | None = None
    redis_benchmark: str | None = None
    memtier: str | None = None
    redis_cli: str | None = None
    # paths of other registered tools by tool name (those without a flag of their own here)
    others: dict[str, str] = field(default_factory=dict)
    # filled by resolve(): each registered tool's binary, or why it is missing
    binaries: dict[str, str] = field(default_factory=dict)
    missing: dict[str, str] = field(default_factory=dict)

    def override(self, tool: str) -> str | None:
        given = {"redis-benchmark": self.redis_benchmark, "memtier_benchmark": self.memtier}
        return given.get(tool) or self.others.get(tool)

    def resolve(self) -> ToolPaths:
        found = ToolPaths(
            redis_server=self.redis_server or shutil.which("redis-server"),
            redis_cli=self.redis_cli or shutil.which("redis-cli"),
            others=dict(self.others),
        )
        for tool, entry in registry.entries().items():
            path, reason = entry.locate(self.override(tool))
            if path:
                found.binaries[tool] = path
            else:
                found.missing[tool] = reason
        found.redis_benchmark = found.binaries.get("redis-benchmark")
        found.memtier = found.binaries.get("memtier_benchmark")
        return found

    def unavailable(self, tool: str) -> str:
        """Why ``tool`` cannot run here ('' when it can); call on a resolved ToolPaths."""
        if tool in self.binaries:
            return ""
        return self.missing.get(tool) or registry.unavailable_reason(tool)


def make_driver(tool: str, paths: ToolPaths) -> ClientDriver | None:
    """The driver for ``tool``, or None when the tool is unknown or not installed."""
    entry = registry.entries().get(tool)
    binary = paths.binaries.get(tool)
    return entry.factory(binary) if entry and binary else None
