"""The profiler interface and what every profiler shares.

A profiler sees the measured window of one test: :meth:`Profiler.start` right before the
client starts (after preload and warm-up), :meth:`Profiler.stop` right after it ends, with
the pids of *every* server process of the topology. Only ``instructions`` (callgrind) needs
to start the server itself, through :meth:`Profiler.server_wrapper`. After the window,
:meth:`Profiler.summarize` turns the raw data into a :class:`ProfileSummary`, artifact paths
and metrics. A profiler never raises out of these calls for a tool problem: it reports
``unavailable`` (the host cannot) or ``failed`` (it should have worked), with one line why.
"""

from __future__ import annotations

import logging
import signal
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

from redis_benchmarks_spec.common.process import ProcessRegistry, tail
from redis_benchmarks_spec.results.profile import (
    PROFILE_FAILED,
    PROFILE_UNAVAILABLE,
    ProfileSummary,
)

log = logging.getLogger(__name__)

#: how long a profiler tool gets to write its data after SIGINT
STOP_TIMEOUT_S = 60.0


class ProfilerError(RuntimeError):
    """A profiler could not do its job; the message is the one-line reason."""


#: requests every client sends in a counted run (the server under callgrind): the lab's
#: count (``rbs lab up``'s agents, ``rbs run``, ``rbs bisect --local``). Instructions per op
#: spread ~0.3 % at 300, 3,000 and 10,000 requests alike (a per-run effect: each server start
#: lays out its memory differently, docs/lab.md), so more requests only cost time: a counted
#: run of 3,000 takes ~3 s here, of 50,000 ~45 s
COUNTED_REQUESTS = 3_000


@dataclass(frozen=True)
class ProfilerOptions:
    """What ``--profilers`` and its companion flags ask for (the same for every test)."""

    names: tuple[str, ...] = ()
    requests: int = COUNTED_REQUESTS  # fixed request count for runs under callgrind
    perf_frequency: int = 499  # samples per second per CPU for perf record
    perf_max_size_mb: int = 64  # perf.data cap
    perf_call_graph: str = "dwarf"  # dwarf (any binary) | fp (frame pointers: smaller data)
    top_n: int = 20  # symbols/functions kept in the result document
    instructions_method: str = "auto"  # auto | callgrind | perf
    # a counted run under valgrind writes its preload itself (no snapshot: runner/preload_snapshot.py)
    write_preloads: bool = False


@dataclass
class ProfileTarget:
    """The measured window's subjects: every server pid, where artifacts go, the registry
    through which helper processes are started (so an interrupt stops them too)."""

    pids: list[int]
    out_dir: Path
    registry: ProcessRegistry
    test_name: str = ""


@dataclass
class FinishInput:
    """What summaries may use besides their own data: the window's command counts."""

    commandstats_delta: dict[str, dict[str, float]]
    tested_commands: list[str]
    options: ProfilerOptions


@dataclass
class ProfileOutput:
    """A summary for the result document, artifact paths and metrics to add to it."""

    summary: ProfileSummary
    paths: dict[str, str] = field(default_factory=dict)
    metrics: dict[str, float] = field(default_factory=dict)


class Profiler(Protocol):
    name: str

    def unavailable(self) -> str:
        """'' when this host can run the profiler, else the one-line reason."""
        ...

    def server_wrapper(self, workdir: Path) -> list[str]:
        """argv prefix the server must start under ([] for profilers that attach)."""
        ...

    def start(self, target: ProfileTarget) -> None: ...

    def stop(self) -> None: ...

    def summarize(self, finish: FinishInput) -> ProfileOutput: ...


def unavailable_output(name: str, reason: str) -> ProfileOutput:
    return ProfileOutput(ProfileSummary(name, PROFILE_UNAVAILABLE, reason))


def failed_output(name: str, reason: str) -> ProfileOutput:
    return ProfileOutput(ProfileSummary(name, PROFILE_FAILED, reason))


class WindowProcess:
    """A tool process that runs for the measured window (perf record, perf stat, pcm) and is
    stopped with SIGINT so it writes its data, then reaped through the registry."""

    def __init__(self, argv: list[str], log_path: Path, registry: ProcessRegistry) -> None:
        self.log_path = log_path
        self.registry = registry
        self.proc = registry.spawn(argv, log_path)
        self.returncode: int | None = None

    def exited_early(self) -> bool:
        return self.proc.poll() is not None

    def stop(self, timeout: float = STOP_TIMEOUT_S) -> int | None:
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGINT)
            try:
                self.proc.wait(timeout=timeout)
            except subprocess.TimeoutExpired:
                log.warning("%s did not stop within %.0fs after SIGINT", self.proc.args, timeout)
        self.returncode = self.registry.stop(self.proc)
        return self.returncode

    def log_tail(self, lines: int = 5) -> str:
        return tail(self.log_path, lines)


def one_line(text: str, limit: int = 300) -> str:
    """The most telling line of a tool's output: the last one that says error/denied/fail."""
    lines = [ln.strip() for ln in text.splitlines() if ln.strip()]
    telling = [ln for ln in lines if any(w in ln.lower() for w in
                                         ("error", "denied", "fail", "unsupported",
                                          "not supported", "permission", "cannot"))]
    chosen = (telling or lines or ["no output"])[-1]
    return chosen[:limit]
