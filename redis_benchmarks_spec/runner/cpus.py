"""Hand out disjoint CPU sets to the server node(s) and the client of a test run.

Placement must not add noise (issue 28): CPU 0 and the CPUs that take the host's device
interrupts (``/proc/interrupts``) are handed out last, server and client get distinct
physical cores when the host has enough (``/sys/devices/system/cpu/cpuN/topology``), and the
order is fixed once per allocator, so every run of a session uses the same cores. On a
cloud guest CPU 0 usually takes the timer and most device interrupts; a server pinned there
was measured by whatever the guest's devices did during its run.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.errors import TestRunError

log = logging.getLogger(__name__)


class CpuShortage(TestRunError):
    """The host has fewer CPUs than the plan needs and sharing was refused (--strict-cpus)."""


@dataclass(frozen=True)
class CpuPlan:
    server: list[int]  # every server node's CPUs together
    client: list[int]
    disjoint: bool
    warning: str = ""
    nodes: list[list[int]] = field(default_factory=list)  # per node, in deployment order

    def node(self, index: int) -> list[int]:
        """CPUs of node ``index`` (the whole server set for a plan made without nodes)."""
        return self.nodes[index] if index < len(self.nodes) else self.server


def host_cpus() -> list[int]:
    """The CPUs this process may run on (respects taskset/cgroup affinity)."""
    return sorted(os.sched_getaffinity(0))


#: a CPU taking more than this share of the device interrupts is an interrupt CPU
IRQ_SHARE = 0.25


def device_interrupts(text: str) -> dict[int, int]:
    """Per CPU, the device interrupts counted in ``/proc/interrupts`` text (numbered lines
    only: the local timer, rescheduling and TLB lines are every CPU's)."""
    lines = text.splitlines()
    if not lines:
        return {}
    cpus = [int(h[3:]) for h in lines[0].split() if h.startswith("CPU") and h[3:].isdigit()]
    counts = dict.fromkeys(cpus, 0)
    for line in lines[1:]:
        name, _, rest = line.partition(":")
        if not name.strip().isdigit():
            continue
        for cpu, value in zip(cpus, rest.split(), strict=False):
            if value.isdigit():
                counts[cpu] += int(value)
    return counts


def _read(path: Path) -> str:
    try:
        return path.read_text()
    except OSError:
        return ""


def core_of(cpu: int, sysfs: Path = Path("/sys/devices/system/cpu")) -> tuple[str, str]:
    """(package, core) of a CPU; its own number when the topology is not readable."""
    topo = sysfs / f"cpu{cpu}" / "topology"
    package = _read(topo / "physical_package_id").strip() or "?"
    core = _read(topo / "core_id").strip() or f"cpu{cpu}"
    return package, core


@dataclass(frozen=True)
class Placement:
    """CPUs in the order they are handed out, the physical core of each, and why."""

    order: list[int]
    cores: dict[int, tuple[str, str]]
    why: str
    avoided: tuple[int, ...] = ()  # CPU 0 and the interrupt CPUs, handed out last


def placement(cpus: list[int], interrupts: Mapping[int, int],
              cores: Mapping[int, tuple[str, str]]) -> Placement:
    """Quiet CPUs first: not CPU 0 and not an interrupt CPU, fewest device interrupts,
    one thread of each physical core before any second thread (module doc)."""
    total = sum(interrupts.get(c, 0) for c in cpus) or 1
    busy = {c for c in cpus if interrupts.get(c, 0) / total > IRQ_SHARE and len(cpus) > 1}
    ranked = sorted(cpus, key=lambda c: (c == 0, c in busy, interrupts.get(c, 0), c))
    seen: set[tuple[str, str]] = set()
    first: list[int] = []
    second: list[int] = []
    for cpu in ranked:
        core = cores.get(cpu, ("?", f"cpu{cpu}"))
        (second if core in seen else first).append(cpu)
        seen.add(core)
    order = first + second
    avoided = [c for c in cpus if c == 0 or c in busy]
    why = "" if not avoided else (
        f"CPUs {avoided} (CPU 0, or >{IRQ_SHARE:.0%} of device interrupts) handed out last")
    return Placement(order, dict(cores), why, tuple(avoided))


#: ``as-given`` hands CPUs out in the order given (only to measure placement itself:
#: benchmarks/pair_design.py --placement)
PLACEMENT_ENV = "RBS_CPU_PLACEMENT"


def host_placement(cpus: list[int]) -> Placement:
    """:func:`placement` of these CPUs on this host."""
    cores = {c: core_of(c) for c in cpus}
    if os.environ.get(PLACEMENT_ENV) == "as-given":
        return Placement(list(cpus), cores, f"CPUs in the order given ({PLACEMENT_ENV})")
    return placement(cpus, device_interrupts(_read(Path("/proc/interrupts"))), cores)


class CpuAllocator:
    """Server cores come first, client cores after them, never shared when there are enough.

    With too few cores the sets overlap (the test still runs) and the plan carries a warning
    that the runner prints and stores, because shared cores make results noisier; a strict
    allocator refuses instead (:class:`CpuShortage`).
    """

    def __init__(self, cpus: list[int] | None = None, strict: bool = False,
                 where: Placement | None = None) -> None:
        given = cpus if cpus is not None else host_cpus()
        if not given:
            raise ValueError("no CPUs available to allocate")
        self.placement = where or host_placement(given)
        self.cpus = self.placement.order
        self.cores = self.placement.cores
        self.strict = strict

    def needed(self, node_cpus: list[int], client_cpus: int) -> int:
        """CPUs of this host a plan takes; ``client_cpus`` 0 when the client runs on
        another host (runner/client_host.py)."""
        return sum(max(1, n) for n in node_cpus) + max(0, client_cpus)

    def plan(self, server_cpus: int, client_cpus: int) -> CpuPlan:
        """One server node with ``server_cpus`` cores and a client."""
        return self.plan_nodes([server_cpus], client_cpus)

    def plan_nodes(self, node_cpus: list[int], client_cpus: int) -> CpuPlan:
        """Each node its own cores (in order), the client the next ones.

        Short of cores, nodes take them round-robin from the start and the client from the
        end, so a 3-node cluster on 2 cores still spreads its nodes over both.
        """
        node_cpus = [max(1, n) for n in node_cpus] or [1]
        client_cpus = max(0, client_cpus)  # 0: no client on this host
        n, need = len(self.cpus), self.needed(node_cpus, client_cpus)
        if need <= n:
            nodes, pos = [], 0
            for count in node_cpus:
                nodes.append(self.cpus[pos:pos + count])
                pos += count
            client = self._client_cores(self.cpus[:pos], self.cpus[pos:], client_cpus)
            return CpuPlan(self.cpus[:pos], client, True, "", nodes)
        what = (f"only {n} CPU(s) for {sum(node_cpus)} server CPU(s) on {len(node_cpus)} "
                f"node(s) + {client_cpus} client CPU(s)")
        if self.strict:
            raise CpuShortage(f"{what}; --strict-cpus refuses to share cores")
        nodes, pos = [], 0
        for count in node_cpus:
            take = min(count, n)
            nodes.append(sorted({self.cpus[(pos + k) % n] for k in range(take)}))
            pos += take
        server = sorted({c for node in nodes for c in node})
        client = self.cpus[-min(client_cpus, n):] if client_cpus else []
        who = f"server {server} and client {client}" if client else \
            f"the server nodes on {server}"
        warning = f"{what}: {who} share cores; results will be noisier"
        return CpuPlan(server, client, not set(server) & set(client), warning, nodes)

    def _client_cores(self, server: list[int], rest: list[int], count: int) -> list[int]:
        """``count`` of ``rest`` for the client, CPUs on a physical core no server CPU uses
        first (a hyper-thread sibling of the server's core last)."""
        taken = {self.cores.get(c, ("?", f"cpu{c}")) for c in server}
        apart = [c for c in rest if self.cores.get(c, ("?", f"cpu{c}")) not in taken]
        return (apart + [c for c in rest if c not in apart])[:count]
