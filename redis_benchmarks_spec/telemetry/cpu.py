"""CPU sampling of the client process tree and the server while the client runs.

It feeds the saturation guard: a result limited by the load generator hides server changes,
so each test records both sides and is flagged ``client-bound`` when the client used nearly
all the CPU it was given while the server idled.

It also measures **foreign** load: the busy time (everything but idle, iowait and steal in
``/proc/stat``) of the CPUs the test was pinned to, minus the CPU time of the test's own
processes. Other
processes on those cores (another job on a shared machine, a test suite running beside a
benchmark) slow the run in a way that has nothing to do with the binary, and a burst of it
that hits one side of an A/B pair more than the other can flip a verdict: measured on the
2-core VM, three disturbed baseline runs in a row (client at 58-70 % of its core instead of
95 %) made a 3 % slower server look +12 % faster. A run whose foreign load reaches
``disturbed_pct`` is flagged ``disturbed`` and A/B pairs leave it out (``runner.ab``).
Interrupt time counts as busy: the kernel charges the loopback traffic it handles for our
processes to their own CPU times as well (measured here with redis-benchmark GET against a
pinned server: processes 181 % of a core, /proc/stat user+system 129 % plus irq+softirq
48 %), so leaving it out would hide a real busy loop behind our own network work.
"""

from __future__ import annotations

import os
import threading
from dataclasses import dataclass

import psutil

from redis_benchmarks_spec.results.document import CpuUsage


@dataclass(frozen=True)
class SaturationThresholds:
    client_pct_of_given: float = 90.0   # client busy >= this % of the cores it was given
    server_pct_of_core: float = 75.0    # while the server uses less than this % of one core
    disturbed_pct: float = 10.0         # other processes' mean use of the pinned CPUs, % of a core


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


FOREIGN = "foreign"


def _busy_seconds(cpus: list[int]) -> float:
    """Non-idle seconds of these CPUs since boot (user, nice, system, irq, softirq; 0.0 when
    unreadable)."""
    try:
        per_cpu = psutil.cpu_times(percpu=True)
    except (OSError, RuntimeError):
        return 0.0
    return sum(t.user + t.nice + t.system + getattr(t, "irq", 0.0) + getattr(t, "softirq", 0.0)
               for i, t in enumerate(per_cpu) if i in cpus)


def _own_seconds(pids: list[int]) -> float:
    """CPU seconds of everything this test started: this process and its descendants
    (servers, clients, profilers, the sampler itself) and the watched processes' trees
    (a server in a container is not a descendant), each process counted once."""
    procs: dict[int, psutil.Process] = {}
    for pid in {os.getpid(), *pids}:
        try:
            root = psutil.Process(pid)
            procs.update({p.pid: p for p in [root, *root.children(recursive=True)]})
        except psutil.NoSuchProcess:
            continue
    total = 0.0
    for proc in procs.values():
        try:
            t = proc.cpu_times()
            total += t.user + t.system
        except psutil.NoSuchProcess:
            continue
    return total


class CpuSampler:
    """Samples CPU % of one side's process trees every ``interval`` seconds in a thread,
    and, when told the pinned CPUs, the foreign load on them (see the module doc)."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self._pids: dict[str, list[int]] = {}
        self._samples: dict[str, list[float]] = {}
        self._cpus: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None

    def watch(self, side: str, pids: list[int]) -> None:
        self._pids[side] = list(pids)
        self._samples.setdefault(side, [])

    def watch_cpus(self, cpus: list[int]) -> None:
        """Measure the foreign load on these CPUs (the ones the watched processes run on)."""
        self._cpus = sorted(set(cpus))
        self._samples.setdefault(FOREIGN, [])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import time
        last = {side: (time.monotonic(), sum(_tree_times(p) for p in pids))
                for side, pids in self._pids.items()}
        watched = [p for pids in self._pids.values() for p in pids]
        busy, own, busy_t = (_busy_seconds(self._cpus), _own_seconds(watched),
                             time.monotonic())
        while not self._stop.wait(self.interval):
            for side, pids in list(self._pids.items()):
                now, used = time.monotonic(), sum(_tree_times(p) for p in pids)
                t0, u0 = last[side]
                if now > t0 and used >= u0:
                    self._samples[side].append(100.0 * (used - u0) / (now - t0))
                last[side] = (now, used)
            if self._cpus:
                busy_now, own_now, now = (_busy_seconds(self._cpus), _own_seconds(watched),
                                          time.monotonic())
                # own time may fall on other CPUs (unpinned threads): never below 0; a
                # process of ours that exited took its time along: no sample then
                foreign = max(0.0, (busy_now - busy) - (own_now - own))
                if now > busy_t and own_now >= own:
                    self._samples[FOREIGN].append(100.0 * foreign / (now - busy_t))
                busy, own, busy_t = busy_now, own_now, now

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


def is_disturbed(foreign: CpuUsage | None, thresholds: SaturationThresholds) -> bool:
    """Other processes used the test's CPUs for ``disturbed_pct`` % of a core or more."""
    return foreign is not None and foreign.samples > 0 and \
        foreign.mean_pct >= thresholds.disturbed_pct


def is_client_bound(client: CpuUsage, server: CpuUsage,
                    thresholds: SaturationThresholds) -> bool:
    """True when the client saturated its cores while the server had headroom."""
    if client.samples == 0 or server.samples == 0 or client.cores_given <= 0:
        return False
    client_share = client.mean_pct / client.cores_given
    return client_share >= thresholds.client_pct_of_given and \
        server.mean_pct < thresholds.server_pct_of_core
