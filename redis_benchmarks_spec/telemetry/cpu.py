"""CPU sampling of the client process tree and the server while the client runs.

It feeds the saturation guard: a result limited by the load generator hides server changes,
so each test records both sides and is flagged ``client-bound`` when the client used nearly
all the CPU it was given while the server idled.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass

import psutil

from redis_benchmarks_spec.results.document import CpuUsage


@dataclass(frozen=True)
class SaturationThresholds:
    client_pct_of_given: float = 90.0   # client busy >= this % of the cores it was given
    server_pct_of_core: float = 75.0    # while the server uses less than this % of one core


def _tree_times(pid: int) -> float:
    """User+system CPU seconds of a process and its live children."""
    total = 0.0
    try:
        root = psutil.Process(pid)
        procs = [root] + root.children(recursive=True)
    except psutil.NoSuchProcess:
        return 0.0
    for proc in procs:
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            continue  # exited between listing and reading; its time is lost either way
    return total


class CpuSampler:
    """Samples CPU % of one side's process trees every ``interval`` seconds in a thread."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self._pids: dict[str, list[int]] = {}
        self._samples: dict[str, list[float]] = {}
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, side: str, pids: list[int]) -> None:
        self._pids[side] = list(pids)
        self._samples.setdefault(side, [])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import time
        last = {side: (time.monotonic(), sum(_tree_times(p) for p in pids))
                for side, pids in self._pids.items()}
        while not self._stop.wait(self.interval):
            for side, pids in list(self._pids.items()):
                now, used = time.monotonic(), sum(_tree_times(p) for p in pids)
                t0, u0 = last[side]
                if now > t0 and used >= u0:
                    self._samples[side].append(100.0 * (used - u0) / (now - t0))
                last[side] = (now, used)

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def usage(self, side: str, cores_given: int) -> CpuUsage:
        # the first sample often includes process start-up; drop it when there are more
        samples = self._samples.get(side, [])
        body = samples[1:] if len(samples) > 2 else samples
        if not body:
            return CpuUsage(0, 0.0, 0.0, cores_given)
        return CpuUsage(len(body), sum(body) / len(body), max(body), cores_given)


def is_client_bound(client: CpuUsage, server: CpuUsage,
                    thresholds: SaturationThresholds) -> bool:
    """True when the client saturated its cores while the server had headroom."""
    if client.samples == 0 or server.samples == 0 or client.cores_given <= 0:
        return False
    client_share = client.mean_pct / client.cores_given
    return client_share >= thresholds.client_pct_of_given and \
        server.mean_pct < thresholds.server_pct_of_core
