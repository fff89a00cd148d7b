"""The client-driver interface: what a driver gets (target) and gives back (invocation)."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.suites.suite import ToolConfig


@dataclass(frozen=True)
class ClientTarget:
    host: str
    port: int
    password: str | None = None
    user: str | None = None
    tls: bool = False
    cluster: bool = False


#: what a warm-up's files add to the client's prefix: ``client-0.warmup.out`` (and
#: ``client-0.warmup.json``) in runs and sweeps alike
WARMUP = ".warmup"


def out_file(prefix: Path, ext: str) -> Path:
    """A client's output file: ``prefix`` plus ``ext`` (never ``with_suffix``, which would
    eat a dotted prefix such as ``client-0.warmup``)."""
    return prefix.with_name(prefix.name + ext)


@dataclass(frozen=True)
class Invocation:
    """One client process to start, with where its output goes."""

    argv: list[str]
    stdout_path: Path
    result_path: Path | None  # a JSON file the tool writes itself (memtier), else None
    expected_duration_s: float
    nofile: int | None = None  # open-file limit the process starts with (None: inherited)
    # variables added to the tool's built environment (runner/seeds.py: a counted run's)
    env: dict[str, str] = field(default_factory=dict)


class ClientDriver(Protocol):
    tool: str
    binary: str

    def invocation(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
                   test_time: int | None, rate: float | None = None) -> Invocation: ...

    def warmup(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
               test_time: int | None) -> Invocation | None:
        """A short run that measures the rate a ``test_time`` run is sized from (or None)."""
        ...

    def parse(self, inv: Invocation, returncode: int) -> ToolResult:
        """The tool's numbers as printed, rates unchecked: the caller decides whether the
        rate is a measurement (:func:`~redis_benchmarks_spec.loadgen.result.check_measurable`)."""
        ...

    def version(self) -> str: ...
