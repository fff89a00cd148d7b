"""Hand out disjoint CPU sets to the server node(s) and the client of a test run."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

log = logging.getLogger(__name__)


class CpuShortage(RuntimeError):
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


class CpuAllocator:
    """Server cores come first, client cores after them, never shared when there are enough.

    With too few cores the sets overlap (the test still runs) and the plan carries a warning
    that the runner prints and stores, because shared cores make results noisier; a strict
    allocator refuses instead (:class:`CpuShortage`).
    """

    def __init__(self, cpus: list[int] | None = None, strict: bool = False) -> None:
        self.cpus = cpus if cpus is not None else host_cpus()
        self.strict = strict
        if not self.cpus:
            raise ValueError("no CPUs available to allocate")

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
            return CpuPlan(self.cpus[:pos], self.cpus[pos:pos + client_cpus], True, "", nodes)
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
