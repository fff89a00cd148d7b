"""Instruction-count tests side by side, each on cores of its own (issue 40, item 3).

A count does not move with the host's load once the command path leaves out the slow log's
entries (``telemetry/profilers/instructions.py``): measured with
``benchmarks/count_neighbours.py --disjoint``, a SET window run beside another one on its own
core counted -0.041 % against the same runs alone (4 and 4 runs, their own spread 0.3 %),
+0.077 % with 1,000 random keys (spread 0.27 %). So an A/B of a deterministic metric on a host
with more cores than one test needs runs its tests in *lanes*: disjoint CPU sets, each the
size the largest test asks for (its server nodes' CPUs and the client's), one test per lane at
a time, never a timed run (a time metric keeps every core of the host to itself).

The lanes come from the host's placement (``runner.cpus``): quiet CPUs first, CPU 0 and the
interrupt CPUs left out when enough remain, one thread of each physical core before a second.
Each run records its lane in ``cpu_placement`` beside the CPUs it was given.
"""

from __future__ import annotations

from collections.abc import Iterable

from redis_benchmarks_spec.runner.cpus import CpuAllocator, Placement
from redis_benchmarks_spec.runner.session import SessionConfig, client_cpus
from redis_benchmarks_spec.suites.suite import Suite

#: ``count_lanes: auto`` in the platform file: as many lanes as the host's cores give
AUTO = 0


def lane_size(session: SessionConfig, tests: Iterable[tuple[Suite, str]]) -> int:
    """CPUs the largest of these (suite, topology) tests takes on this host."""
    catalogue = session.catalogue()
    allocator = CpuAllocator(session.cpus)
    remote = session.client_host is not None
    need = 1
    for suite, topology in tests:
        topo = catalogue.get(topology)
        nodes = [topo.cpus_per_node] * topo.node_count if topo is not None else [1]
        need = max(need, allocator.needed(nodes, 0 if remote else client_cpus(suite)))
    return need


def lanes_of(where: Placement, size: int, wanted: int = AUTO) -> list[list[int]]:
    """Disjoint CPU sets of ``size`` from the placement's order; fewer than two: none (the
    tests run one after another on every CPU, as without lanes). ``wanted`` caps the count
    (``AUTO``: no cap)."""
    avoided = set(where.avoided)
    quiet = [c for c in where.order if c not in avoided]
    pool = quiet if len(quiet) // size >= 2 else list(where.order)
    out = [pool[i:i + size] for i in range(0, len(pool) - size + 1, size)]
    if wanted != AUTO:
        out = out[:wanted]
    return out if len(out) >= 2 else []


def host_lanes(session: SessionConfig, tests: Iterable[tuple[Suite, str]],
               wanted: int = AUTO) -> list[list[int]]:
    """The lanes of this host for these tests (none on a host too small for two)."""
    if wanted == 1:
        return []
    allocator = CpuAllocator(session.cpus)
    return lanes_of(allocator.placement, lane_size(session, tests), wanted)


def lane_note(index: int, lanes: list[list[int]]) -> str:
    """What a run's ``cpu_placement`` says of its lane."""
    return (f"count lane {index + 1} of {len(lanes)} (CPUs {lanes[index]}; instruction-count "
            "tests side by side on disjoint cores, runner/count_lanes.py)")
