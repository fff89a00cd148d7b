"""``pcm``: Intel Performance Counter Monitor (Debian's ``pcm``) over the measured window.

PCM reads model-specific registers, so it needs an Intel CPU, the ``msr`` module and root;
virtual machines rarely give MSR access. Where PCM refuses, the result carries its one-line
reason (``unavailable``) and the test goes on. Where it runs, its CSV (one row per second,
system-wide) is kept beside result.json and the system IPC column, if present, summarised.
"""

from __future__ import annotations

import csv
import io
import time
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.results.profile import PROFILE_UNAVAILABLE, ProfileSummary
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

NAME = "pcm"
#: PCM checks the CPU and MSR access at start-up: give it this long to refuse
STARTUP_CHECK_S = 1.5


class Pcm:
    name = NAME

    def __init__(self, options: ProfilerOptions) -> None:
        self.options = options
        self.target: ProfileTarget | None = None
        self.proc: WindowProcess | None = None
        self.refused = ""

    def unavailable(self) -> str:
        return missing(["pcm"], "apt-get install pcm")

    def server_wrapper(self, workdir: Path) -> list[str]:
        return []

    def _csv(self) -> Path:
        assert self.target is not None
        return self.target.out_dir / "pcm.csv"

    def start(self, target: ProfileTarget) -> None:
        self.target = target
        argv = [find_tool("pcm") or "pcm", "1", f"-csv={self._csv()}"]
        self.proc = WindowProcess(argv, target.out_dir / "pcm.log", target.registry)
        deadline = time.monotonic() + STARTUP_CHECK_S
        while time.monotonic() < deadline and not self.proc.exited_early():
            time.sleep(0.05)
        if self.proc.exited_early():
            self.refused = one_line(self.proc.log_tail(40))

    def stop(self) -> None:
        if self.proc is not None:
            if not self.refused and self.proc.exited_early():
                self.refused = one_line(self.proc.log_tail(40))
            self.proc.stop()

    def summarize(self, finish: FinishInput) -> ProfileOutput:
        if self.proc is None:
            return failed_output(NAME, "pcm was never started")
        if self.refused:
            return ProfileOutput(ProfileSummary(NAME, PROFILE_UNAVAILABLE,
                                                f"pcm refused: {self.refused}"))
        path = self._csv()
        if not path.exists() or path.stat().st_size == 0:
            return failed_output(NAME, f"pcm wrote no CSV: {one_line(self.proc.log_tail())}")
        data = summarize_csv(path.read_text(errors="replace"))
        return ProfileOutput(ProfileSummary(NAME, method="pcm 1 -csv (system-wide)", data=data),
                             {"pcm_csv": str(path)})


def summarize_csv(text: str) -> dict[str, Any]:
    """Rows and the mean of the first ``IPC`` column of PCM's two-row-header CSV."""
    rows = list(csv.reader(io.StringIO(text)))
    if len(rows) < 3:
        return {"rows": 0}
    header = rows[1]
    body = rows[2:]
    data: dict[str, Any] = {"rows": len(body), "columns": len(header)}
    if "IPC" in header:
        col = header.index("IPC")
        values = [float(r[col]) for r in body if len(r) > col and _is_number(r[col])]
        if values:
            data["ipc_mean"] = round(sum(values) / len(values), 4)
    return data


def _is_number(text: str) -> bool:
    try:
        float(text)
    except ValueError:
        return False
    return True
