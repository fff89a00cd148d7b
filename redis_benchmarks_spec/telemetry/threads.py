"""Per-thread CPU and RSS of the server processes over the measured window.

Thread CPU needs only two reads of /proc/<pid>/task/*/stat (window start and end), so it
costs nothing during the run. RSS is sampled every ``interval`` seconds by one thread that
reads /proc/<pid>/statm: one small file read per server per sample. The overhead of the
whole thing is measured by ``benchmarks/telemetry_overhead.py``.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.results.profile import ServerTelemetry, ThreadCpu

PROC = Path("/proc")
TICKS = os.sysconf("SC_CLK_TCK")
PAGE = os.sysconf("SC_PAGE_SIZE")


@dataclass(frozen=True)
class ThreadTimes:
    tid: int
    name: str
    user_ticks: int
    system_ticks: int


def thread_kind(tid: int, pid: int, name: str) -> str:
    """main, io (Redis io threads ``io_thd_N``), bio (``bio_*``) or other."""
    if tid == pid:
        return "main"
    if name.startswith("io_thd"):
        return "io"
    if name.startswith("bio_"):
        return "bio"
    return "other"


def parse_stat(text: str) -> tuple[str, int, int]:
    """(comm, utime, stime) from a /proc/.../stat line; comm may contain spaces and ')'."""
    left, right = text.find("("), text.rfind(")")
    name = text[left + 1:right]
    fields = text[right + 2:].split()
    # fields[0] is state (field 3); utime and stime are fields 14 and 15
    return name, int(fields[11]), int(fields[12])


def read_threads(pid: int) -> dict[int, ThreadTimes]:
    """CPU ticks of every thread of ``pid`` now ({} when the process is gone)."""
    out: dict[int, ThreadTimes] = {}
    try:
        tids = [int(t) for t in os.listdir(PROC / str(pid) / "task")]
    except OSError:
        return out
    for tid in tids:
        try:
            text = (PROC / str(pid) / "task" / str(tid) / "stat").read_text()
        except OSError:
            continue  # the thread ended between listing and reading
        name, utime, stime = parse_stat(text)
        out[tid] = ThreadTimes(tid, name, utime, stime)
    return out


def read_rss(pid: int) -> int | None:
    """Resident set size in bytes, or None when the process is gone."""
    try:
        return int((PROC / str(pid) / "statm").read_text().split()[1]) * PAGE
    except (OSError, IndexError, ValueError):
        return None


def thread_usage(pid: int, before: dict[int, ThreadTimes], after: dict[int, ThreadTimes],
                 seconds: float) -> list[ThreadCpu]:
    """CPU per thread between two reads; threads born in the window count from zero."""
    out = []
    for tid, end in sorted(after.items()):
        start = before.get(tid)
        user = end.user_ticks - (start.user_ticks if start else 0)
        system = end.system_ticks - (start.system_ticks if start else 0)
        used_s = (user + system) / TICKS
        pct = 100.0 * used_s / seconds if seconds > 0 else 0.0
        out.append(ThreadCpu(tid, end.name, thread_kind(tid, pid, end.name), round(pct, 2),
                             user / TICKS, system / TICKS))
    return out


class ServerThreadSampler:
    """Thread CPU of each server pid at start/stop, RSS every ``interval`` s in between."""

    def __init__(self, pids: list[int], interval: float = 0.5) -> None:
        self.pids = list(pids)
        self.interval = interval
        self._before: dict[int, dict[int, ThreadTimes]] = {}
        self._rss: dict[int, list[int]] = {p: [] for p in self.pids}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._t0 = 0.0

    def start(self) -> None:
        self._t0 = time.monotonic()
        self._before = {p: read_threads(p) for p in self.pids}
        self._sample_rss()
        self._thread = threading.Thread(target=self._loop, name="rss-sampler", daemon=True)
        self._thread.start()

    def _sample_rss(self) -> None:
        for pid in self.pids:
            rss = read_rss(pid)
            if rss is not None:
                self._rss[pid].append(rss)

    def _loop(self) -> None:
        while not self._stop.wait(self.interval):
            self._sample_rss()

    def stop(self) -> tuple[float, list[ServerTelemetry]]:
        """Window length and one :class:`ServerTelemetry` per server pid."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout=5)
        self._sample_rss()
        seconds = time.monotonic() - self._t0
        servers = []
        for pid in self.pids:
            threads = thread_usage(pid, self._before.get(pid, {}), read_threads(pid), seconds)
            rss = self._rss[pid]
            servers.append(ServerTelemetry(
                pid=pid, threads=threads, rss_samples=len(rss),
                rss_start_bytes=rss[0] if rss else 0, rss_end_bytes=rss[-1] if rss else 0,
                rss_max_bytes=max(rss) if rss else 0,
                rss_mean_bytes=sum(rss) / len(rss) if rss else 0.0))
        return seconds, servers
