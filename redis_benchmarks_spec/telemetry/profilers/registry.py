"""Profiler names, and the set of profilers one test runs."""

from __future__ import annotations

import logging
from collections.abc import Callable
from pathlib import Path

from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.results.profile import PROFILED, ProfileSummary
from redis_benchmarks_spec.telemetry.profilers.base import (
    FinishInput,
    ProfileOutput,
    Profiler,
    ProfilerOptions,
    ProfileTarget,
    failed_output,
    unavailable_output,
)
from redis_benchmarks_spec.telemetry.profilers.instructions import (
    METHOD_CALLGRIND,
    Instructions,
    choose_method,
)
from redis_benchmarks_spec.telemetry.profilers.pcm import Pcm
from redis_benchmarks_spec.telemetry.profilers.perf_record import PerfRecord
from redis_benchmarks_spec.telemetry.profilers.perf_stat import PerfStat

log = logging.getLogger(__name__)

FACTORIES: dict[str, Callable[[ProfilerOptions], Profiler]] = {
    "perf-record": PerfRecord, "perf-stat": PerfStat, "pcm": Pcm, "instructions": Instructions,
}
NAMES = tuple(FACTORIES)
#: how much slower the server runs under a wrapper (callgrind): client timeouts scale by it
WRAPPED_SLOWDOWN = 100.0


def parse_profilers(text: str | None) -> tuple[str, ...]:
    """``a,b`` -> ('a', 'b'); an unknown name raises ValueError naming it and the choices."""
    names = tuple(dict.fromkeys(n.strip() for n in (text or "").split(",") if n.strip()))
    unknown = [n for n in names if n not in FACTORIES]
    if unknown:
        raise ValueError(f"--profilers: unknown profiler(s) {', '.join(unknown)} "
                         f"(choose from {', '.join(NAMES)})")
    return names


def conflict(options: ProfilerOptions) -> str:
    """'' when the profilers can share a run, else why not. perf-record attaches to the
    server's pids; when ``instructions`` runs the server under callgrind those pids are
    Valgrind's, and 70-80 % of the samples land in callgrind itself, not in Redis."""
    if not {"perf-record", "instructions"} <= set(options.names):
        return ""
    if choose_method(options) != METHOD_CALLGRIND:
        return ""
    return ("perf-record would profile Valgrind: instructions runs the server under "
            "callgrind on this host")


class Profiling:
    """The profilers of one test: asked to wrap the server, started and stopped around the
    measured window, summarised into the result. A profiler that cannot run on this host
    or launcher is reported ``unavailable`` and left out; it never fails the test."""

    def __init__(self, options: ProfilerOptions, launcher: str = "process") -> None:
        self.options = options
        self.active: list[Profiler] = []
        self.skipped: dict[str, str] = {}
        for name in options.names:
            profiler = FACTORIES[name](options)
            reason = profiler.unavailable()
            if not reason and launcher != "process" and _wraps(profiler):
                reason = f"{name} runs the server under callgrind: needs --launcher process"
            if reason:
                self.skipped[name] = reason
            else:
                self.active.append(profiler)
        self.started = False

    @property
    def wraps_server(self) -> bool:
        return any(_wraps(p) for p in self.active)

    def fixed_requests(self) -> int | None:
        """The request count every client must send (runs under callgrind), else None."""
        return self.options.requests if self.wraps_server else None

    def server_wrapper(self, workdir: Path) -> list[str]:
        wrapper: list[str] = []
        for profiler in self.active:
            wrapper += profiler.server_wrapper(workdir)
        return wrapper

    def start(self, pids: list[int], out_dir: Path, registry: ProcessRegistry,
              test_name: str) -> None:
        target = ProfileTarget(list(pids), out_dir, registry, test_name)
        self.started = True
        for profiler in self.active:
            profiler.start(target)

    def stop(self) -> None:
        for profiler in self.active:
            profiler.stop()

    def summaries(self, finish: FinishInput) -> tuple[dict[str, ProfileSummary],
                                                      dict[str, str], dict[str, float]]:
        """Per profiler summary, artifact paths and metrics for the result document."""
        summaries: dict[str, ProfileSummary] = {}
        paths: dict[str, str] = {}
        metrics: dict[str, float] = {}
        for name, reason in self.skipped.items():
            summaries[name] = unavailable_output(name, reason).summary
        for profiler in self.active:
            output = _summarize(profiler, finish) if self.started else \
                failed_output(profiler.name, "the test ended before its measured window")
            summaries[profiler.name] = output.summary
            paths.update(output.paths)
            metrics.update(output.metrics)
        if self.wraps_server:
            for name in ("perf-record", "perf-stat", "pcm"):
                if name in summaries and summaries[name].ok:
                    summaries[name].data["note"] = "the server ran under callgrind"
        return summaries, paths, metrics

    @property
    def flag(self) -> str:
        return PROFILED


def _summarize(profiler: Profiler, finish: FinishInput) -> ProfileOutput:
    """A profiler's output; a bug in reading its data fails that profiler, not the test."""
    try:
        return profiler.summarize(finish)
    except (OSError, ValueError, RuntimeError) as exc:
        log.warning("%s: %s", profiler.name, exc)
        return failed_output(profiler.name, f"{type(exc).__name__}: {exc}")


def _wraps(profiler: Profiler) -> bool:
    return bool(getattr(profiler, "wraps_server", False))
