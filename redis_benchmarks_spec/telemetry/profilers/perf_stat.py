"""``perf-stat``: event counts of each server process over the measured window.

One ``perf stat -x, -e <events> -p <pid>`` per server process, stopped with SIGINT when the
client ends. Events the host does not support (hardware counters in most VMs) are listed
under ``unsupported``, never reported as zero. IPC is derived when cycles and
instructions were both counted.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.results.profile import ProfileSummary
from redis_benchmarks_spec.telemetry.profilers.base import (
    FinishInput,
    ProfileOutput,
    ProfilerOptions,
    ProfileTarget,
    WindowProcess,
    failed_output,
    one_line,
)
from redis_benchmarks_spec.telemetry.profilers.tools import find_tool, missing

NAME = "perf-stat"
EVENTS = ("task-clock", "context-switches", "cpu-migrations", "page-faults", "cycles",
          "instructions", "branches", "branch-misses", "cache-references", "cache-misses")
NOT_SUPPORTED = "<not supported>"
NOT_COUNTED = "<not counted>"


@dataclass
class StatCounts:
    """One perf stat CSV file: counted events, and those it could not count."""

    events: dict[str, dict[str, Any]] = field(default_factory=dict)
    unsupported: list[str] = field(default_factory=list)
    not_counted: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        data: dict[str, Any] = {"events": self.events, "unsupported": self.unsupported,
                                "not_counted": self.not_counted}
        cycles = self.events.get("cycles", {}).get("value")
        instructions = self.events.get("instructions", {}).get("value")
        if cycles and instructions:
            data["ipc"] = round(instructions / cycles, 4)
        return data


def parse_stat_csv(text: str) -> StatCounts:
    """``perf stat -x,`` output: ``value,unit,event,run_time,pct,metric,metric_unit``."""
    counts = StatCounts()
    for line in text.splitlines():
        if not line.strip() or line.startswith("#"):
            continue
        cells = line.split(",")
        if len(cells) < 3:
            continue
        value, unit, event = cells[0], cells[1], cells[2]
        if value == NOT_SUPPORTED:
            counts.unsupported.append(event)
        elif value == NOT_COUNTED:
            counts.not_counted.append(event)
        else:
            try:
                counts.events[event] = {"value": float(value), "unit": unit}
            except ValueError:
                counts.not_counted.append(event)
    return counts


class PerfStat:
    name = NAME

    def __init__(self, options: ProfilerOptions, events: tuple[str, ...] = EVENTS) -> None:
        self.options = options
        self.events = events
        self.target: ProfileTarget | None = None
        self.procs: dict[int, WindowProcess] = {}

    def unavailable(self) -> str:
        return missing(["perf"], "apt-get install linux-perf")

    def server_wrapper(self, workdir: Path) -> list[str]:
        return []

    def _csv(self, pid: int) -> Path:
        assert self.target is not None
        return self.target.out_dir / f"perf-stat-{pid}.csv"

    def start(self, target: ProfileTarget) -> None:
        self.target = target
        perf = find_tool("perf") or "perf"
        for pid in target.pids:
            argv = [perf, "stat", "-x,", "-e", ",".join(self.events), "-p", str(pid),
                    "-o", str(self._csv(pid))]
            self.procs[pid] = WindowProcess(argv, target.out_dir / f"perf-stat-{pid}.log",
                                            target.registry)

    def stop(self) -> None:
        for proc in self.procs.values():
            proc.stop()

    def summarize(self, finish: FinishInput) -> ProfileOutput:
        if self.target is None or not self.procs:
            return failed_output(NAME, "perf stat was never started")
        per_process: dict[str, Any] = {}
        paths: dict[str, str] = {}
        for pid, proc in self.procs.items():
            path = self._csv(pid)
            text = path.read_text(errors="replace") if path.exists() else ""
            counts = parse_stat_csv(text)
            if not counts.events and not counts.unsupported:
                return failed_output(NAME, f"perf stat on pid {pid} counted nothing: "
                                           f"{one_line(proc.log_tail())}")
            per_process[str(pid)] = counts.to_dict()
            paths[f"perf_stat_{pid}"] = str(path)
        unsupported = sorted({e for p in per_process.values() for e in p["unsupported"]})
        summary = ProfileSummary(NAME, method="perf stat -x, per server process",
                                 data={"per_process": per_process, "unsupported": unsupported})
        return ProfileOutput(summary, paths)
