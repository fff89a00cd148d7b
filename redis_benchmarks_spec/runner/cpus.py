"""Hand out disjoint CPU sets to the server and the client of a test run."""

from __future__ import annotations

import logging
import os
from dataclasses import dataclass

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CpuPlan:
    server: list[int]
    client: list[int]
    disjoint: bool
    warning: str = ""


def host_cpus() -> list[int]:
    """The CPUs this process may run on (respects taskset/cgroup affinity)."""
    return sorted(os.sched_getaffinity(0))


class CpuAllocator:
    """Server cores come first, client cores after them, never shared when there are enough.

    With too few cores the sets overlap (the test still runs) and the plan carries a warning
    that the runner prints and stores, because shared cores make results noisier.
    """

    def __init__(self, cpus: list[int] | None = None) -> None:
        self.cpus = cpus if cpus is not None else host_cpus()
        if not self.cpus:
            raise ValueError("no CPUs available to allocate")

    def plan(self, server_cpus: int, client_cpus: int) -> CpuPlan:
        server_cpus, client_cpus = max(1, server_cpus), max(1, client_cpus)
        n = len(self.cpus)
        if server_cpus + client_cpus <= n:
            server = self.cpus[:server_cpus]
            client = self.cpus[server_cpus:server_cpus + client_cpus]
            return CpuPlan(server, client, True)
        # not enough: give each side what it can get, from opposite ends, and say so
        server = self.cpus[:min(server_cpus, n)]
        client = self.cpus[-min(client_cpus, n):]
        warning = (f"only {n} CPU(s) for {server_cpus} server + {client_cpus} client CPU(s): "
                   f"server {server} and client {client} share cores; results will be noisier")
        return CpuPlan(server, client, not set(server) & set(client), warning)
