"""CPU sampling of the client process tree and the server while the client runs.

It feeds the saturation guard: a result limited by the load generator hides server changes,
so each test records both sides and is flagged ``client-bound`` when the client used nearly
all the CPU it was given while the server idled.

It also measures **foreign** load: the CPU time other user-space processes spent on the CPUs
the test was pinned to, each process's time weighted by the share of its allowed CPUs that
are the test's (1 for a process pinned there, 2/64 for an unpinned one on 64 cores). The
test's own processes (this process, the ones that started it and its descendants: servers,
clients, profilers) and kernel threads do not count: the kernel flushes an ``appendfsync always`` server's writes in
its own threads, on the test's behalf. Other processes on those cores (another job on a
shared machine, a test suite running beside a benchmark) slow the run in a way that has
nothing to do with the binary, and a burst of it that hits one side of an A/B pair more than
the other can flip a verdict: measured on the 2-core VM, three disturbed baseline runs in a
row (client at 58-70 % of its core instead of 95 %) made a 3 % slower server look +12 %
faster. A run whose foreign load reaches ``disturbed_pct`` is flagged ``disturbed`` and A/B
pairs leave it out (``runner.ab``).

And it measures how busy the **client's cores** were, whoever kept them busy: a client at 89 %
of its core while this process, the hypervisor (steal) or the kernel took the rest could not
have gone faster either, so the number measured the client side. The CI run of stop 35 had
exactly that (client 89 %, its core full). What it cannot see: processes of other PID namespaces
(other containers) and other virtual machines (their time shows as steal).
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
    client_majority_pct: float = 50.0   # or: the client's cores were that full and the client
    # itself used at least this % of them (the rest went to whoever else ran there)
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
#: how busy the client's CPUs were, by anyone (% of one core, summed over them)
CLIENT_CORES = "client_cores"


def _own_pids(pids: list[int]) -> set[int]:
    """This process, its ancestors (the shell, ``make``, pytest or the agent daemon that
    started the run and waits for it), its descendants and the watched processes' trees (a
    server in a container is not a descendant)."""
    own: set[int] = set()
    try:
        own.update(p.pid for p in psutil.Process().parents())
    except psutil.NoSuchProcess:
        pass
    for pid in {os.getpid(), *pids}:
        try:
            root = psutil.Process(pid)
            own.update(p.pid for p in [root, *root.children(recursive=True)])
        except psutil.NoSuchProcess:
            continue
    return own


class ForeignLoad:
    """CPU seconds of other user-space processes on ``cpus``, weighted (see the module doc),
    counted from the first call of :meth:`seconds` on."""

    def __init__(self, cpus: list[int]) -> None:
        self.cpus = set(cpus)
        self._last: dict[int, float] = {}

    def seconds(self, own: set[int]) -> float:
        """Weighted CPU seconds other processes used since the previous call."""
        total, seen = 0.0, {}
        for proc in psutil.process_iter(["ppid", "cpu_times", "cpu_affinity"]):
            info = proc.info
            times, affinity = info.get("cpu_times"), info.get("cpu_affinity")
            # kernel threads (children of kthreadd, pid 2) work on everyone's behalf
            if proc.pid in own or proc.pid == 2 or info.get("ppid") == 2 or times is None:
                continue
            used = times.user + times.system
            seen[proc.pid] = used
            if proc.pid in self._last and affinity:
                weight = len(self.cpus.intersection(affinity)) / len(affinity)
                total += weight * max(0.0, used - self._last[proc.pid])
        self._last = seen
        return total


class CpuSampler:
    """Samples CPU % of one side's process trees every ``interval`` seconds in a thread,
    and, when told the pinned CPUs, the foreign load on them (see the module doc)."""

    def __init__(self, interval: float = 0.25) -> None:
        self.interval = interval
        self._pids: dict[str, list[int]] = {}
        self._samples: dict[str, list[float]] = {}
        self._cpus: list[int] = []
        self._client_cores: list[int] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._foreign_s = 0.0  # weighted CPU seconds of other processes on the pinned CPUs
        self._foreign_wall = 0.0  # over this much wall time

    def watch(self, side: str, pids: list[int]) -> None:
        self._pids[side] = list(pids)
        self._samples.setdefault(side, [])

    def watch_cpus(self, cpus: list[int]) -> None:
        """Measure the foreign load on these CPUs (the ones the watched processes run on)."""
        self._cpus = sorted(set(cpus))
        self._samples.setdefault(FOREIGN, [])

    def watch_client_cores(self, cpus: list[int]) -> None:
        """Measure how busy the client's CPUs were, by anyone (see the module doc)."""
        self._client_cores = sorted(set(cpus))
        self._samples.setdefault(CLIENT_CORES, [])

    def start(self) -> None:
        self._thread = threading.Thread(target=self._loop, name="cpu-sampler", daemon=True)
        self._thread.start()

    def _loop(self) -> None:
        import time
        last = {side: (time.monotonic(), sum(_tree_times(p) for p in pids))
                for side, pids in self._pids.items()}
        watched = [p for pids in self._pids.values() for p in pids]
        foreign = ForeignLoad(self._cpus)
        if self._cpus:
            foreign.seconds(_own_pids(watched))
        busy_t = time.monotonic()
        cores_last = _busy_seconds(self._client_cores) if self._client_cores else None
        while True:
            stopping = self._stop.wait(self.interval)
            # at the stop too: a window shorter than one interval still gets its one sample
            # (unless its last interval is a sliver next to full ones)
            for side, pids in list(self._pids.items()):
                now, used = time.monotonic(), sum(_tree_times(p) for p in pids)
                t0, u0 = last[side]
                sliver = stopping and self._samples[side] and now - t0 < self.interval / 2
                if now > t0 and used >= u0 and not sliver:
                    self._samples[side].append(100.0 * (used - u0) / (now - t0))
                last[side] = (now, used)
            if self._cpus:
                # the last, partial interval counts too: the foreign load covers the whole
                # window whatever its length, the same rule for both sides of a pair
                used, now = foreign.seconds(_own_pids(watched)), time.monotonic()
                if now > busy_t:
                    self._samples[FOREIGN].append(100.0 * used / (now - busy_t))
                    self._foreign_s += used
                    self._foreign_wall += now - busy_t
                busy_t = now
            if cores_last is not None:
                cores_now = _busy_seconds(self._client_cores)
                busy, wall = cores_now[0] - cores_last[0], cores_now[1] - cores_last[1]
                if wall > 0 and not (stopping and self._samples[CLIENT_CORES]
                                     and wall < self.interval / 2 * len(self._client_cores)):
                    self._samples[CLIENT_CORES].append(
                        100.0 * len(self._client_cores) * busy / wall)
                cores_last = cores_now
            if stopping:
                return

    def stop(self) -> None:
        self._stop.set()
        if self._thread:
            self._thread.join(timeout=5)

    def usage(self, side: str, cores_given: int) -> CpuUsage:
        if side == FOREIGN:
            return self._foreign_usage(cores_given)
        # the first sample often includes process start-up; drop it when there are more
        samples = self._samples.get(side, [])
        body = samples[1:] if len(samples) > 2 else samples
        if not body:
            return CpuUsage(0, 0.0, 0.0, cores_given)
        return CpuUsage(len(body), sum(body) / len(body), max(body), cores_given)


    def _foreign_usage(self, cores_given: int) -> CpuUsage:
        """Foreign load over the whole window: total CPU seconds / wall seconds (every
        interval weighted by its length, the last partial one included)."""
        samples = self._samples.get(FOREIGN, [])
        if not samples or self._foreign_wall <= 0:
            return CpuUsage(0, 0.0, 0.0, cores_given)
        return CpuUsage(len(samples), 100.0 * self._foreign_s / self._foreign_wall,
                        max(samples), cores_given)


def _busy_seconds(cpus: list[int]) -> tuple[float, float]:
    """(busy, total) seconds of these CPUs since boot; steal counts as busy (the client
    could not have it either), idle and iowait do not."""
    per_cpu = psutil.cpu_times(percpu=True)
    busy = total = 0.0
    for cpu in cpus:
        if cpu >= len(per_cpu):
            continue
        t = per_cpu[cpu]
        whole = sum(t)
        # guest time is already counted in user on Linux
        whole -= getattr(t, "guest", 0.0) + getattr(t, "guest_nice", 0.0)
        total += whole
        busy += whole - t.idle - getattr(t, "iowait", 0.0)
    return busy, total


def is_disturbed(foreign: CpuUsage | None, thresholds: SaturationThresholds) -> bool:
    """Other processes used the test's CPUs for ``disturbed_pct`` % of a core or more over
    the run's whole window. The same rule for every run length (a short run is measured over
    its one partial interval), so both sides of a pair are judged alike; only instruction
    counts ignore it (``analysis.session_runs``)."""
    return foreign is not None and foreign.samples >= 1 and \
        foreign.mean_pct >= thresholds.disturbed_pct


def is_client_bound(client: CpuUsage, server: CpuUsage,
                    thresholds: SaturationThresholds,
                    client_cores: CpuUsage | None = None) -> bool:
    """True when the client's cores were full while the server had headroom: the client
    itself used ``client_pct_of_given`` % of them, or they were that busy in all (measured
    in ``client_cores``) and the client used at least ``client_majority_pct`` % of them."""
    if client.samples == 0 or server.samples == 0 or client.cores_given <= 0:
        return False
    if server.mean_pct >= thresholds.server_pct_of_core:
        return False
    client_share = client.mean_pct / client.cores_given
    if client_share >= thresholds.client_pct_of_given:
        return True
    if client_cores is None or client_cores.samples == 0 or client_cores.cores_given <= 0:
        return False
    cores_share = client_cores.mean_pct / client_cores.cores_given
    return cores_share >= thresholds.client_pct_of_given and \
        client_share >= thresholds.client_majority_pct
