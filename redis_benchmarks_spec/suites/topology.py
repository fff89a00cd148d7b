"""The topologies catalogue (topologies.yml)."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.suites.catalog import data_root
from redis_benchmarks_spec.suites.problems import Problem, SpecError
from redis_benchmarks_spec.suites.suite import load_yaml

STANDALONE = "oss-standalone"
CLUSTER = "oss-cluster"
TOPOLOGY_TYPES = (STANDALONE, CLUSTER)
SERVERS = ("redis", "dragonfly")


@dataclass
class Topology:
    """One catalogue entry: how many nodes of which kind, their arguments and CPU budget.

    ``resources.requests.cpus`` is the budget of the whole deployment (the team's catalogue
    gives oss-cluster-3-primaries 3 CPUs and 01-replicas-04-io-threads 10); see
    :attr:`cpus_per_node` for how it is split.
    """

    name: str
    type: str = STANDALONE
    primaries: int = 1
    replicas: int = 0
    redis_arguments: str = ""
    resources: dict[str, Any] = field(default_factory=dict)
    placement: str = ""
    server: str = "redis"
    # cores per node set by a what-if sweep (``--sweep server-cpus=...``), not the catalogue
    cpus_override: int | None = None

    def server_args(self) -> list[str]:
        return shlex.split(self.redis_arguments)

    @property
    def is_cluster(self) -> bool:
        return self.type == CLUSTER

    @property
    def is_default(self) -> bool:
        """The plain deployment whose series carry no name part (name == type)."""
        return self.name == self.type

    @property
    def node_count(self) -> int:
        """Primaries plus their replicas (``replicas`` counts replicas per primary)."""
        return self.primaries * (1 + self.replicas)

    @property
    def io_threads(self) -> int | None:
        """``--io-threads N`` from the arguments (None when the entry does not set it)."""
        args = self.server_args()
        for i, arg in enumerate(args[:-1]):
            if arg == "--io-threads" and args[i + 1].isdigit():
                return int(args[i + 1])
        return None

    @property
    def total_cpus(self) -> int:
        """The deployment's server CPU budget (at least one per node)."""
        raw = (self.resources.get("requests") or {}).get("cpus", 1)
        try:
            total = int(float(raw))
        except (TypeError, ValueError):
            total = 1
        return max(total, self.node_count)

    @property
    def cpus_per_node(self) -> int:
        """io-threads + 1 for threaded nodes (main thread beside N I/O threads), else an equal
        share of the budget (9 primaries in 10 CPUs get one each); a sweep's override wins."""
        if self.cpus_override is not None:
            return max(1, self.cpus_override)
        threads = self.io_threads
        if threads and threads > 1:
            return threads + 1
        return max(1, self.total_cpus // self.node_count)

    @property
    def server_cpus(self) -> int:
        """CPUs of all server nodes together."""
        return self.cpus_per_node * self.node_count

    def unsupported_reason(self) -> str:
        """Why this runner cannot start the entry ('' when it can)."""
        if self.server != "redis":
            return f"topology {self.name!r} needs server {self.server!r}; this runner " \
                   f"starts redis-server only"
        if "--loadmodule" in self.server_args():
            module = self.server_args()[self.server_args().index("--loadmodule") + 1:][:1]
            return f"topology {self.name!r} loads module {' '.join(module) or '?'}, which " \
                   f"this runner does not ship"
        if self.type not in TOPOLOGY_TYPES:
            return f"topology {self.name!r} has unknown type {self.type!r}"
        if self.primaries < 1 or self.replicas < 0:
            return f"topology {self.name!r} needs at least one primary"
        if self.type == STANDALONE and self.primaries != 1:
            return f"topology {self.name!r}: {STANDALONE} has exactly one primary"
        if self.is_cluster and self.replicas:
            return f"topology {self.name!r}: cluster replicas are not supported yet"
        return ""


def default_topologies_file() -> Path:
    return data_root() / "setups" / "topologies.yml"


def _int(path: Path, key: str, value: Any, default: int) -> int:
    if value is None:
        return default
    if isinstance(value, bool) or not isinstance(value, int):
        raise SpecError([Problem(path, key, f"expected an integer, got {value!r}")])
    return value


def _entry(path: Path, i: int, entry: Any) -> Topology:
    where = f"spec.setups[{i}]"
    if not isinstance(entry, dict) or not isinstance(entry.get("name"), str):
        raise SpecError([Problem(path, where, "entry without a name")])
    rt = entry.get("redis_topology") or {}
    if not isinstance(rt, dict):
        raise SpecError([Problem(path, f"{where}.redis_topology", "expected a mapping")])
    server = str(entry.get("server") or "redis")
    if server not in SERVERS:
        raise SpecError([Problem(path, f"{where}.server", f"unknown server {server!r}")])
    return Topology(
        name=entry["name"],
        type=str(entry.get("type", STANDALONE)),
        primaries=_int(path, f"{where}.redis_topology.primaries", rt.get("primaries"), 1),
        replicas=_int(path, f"{where}.redis_topology.replicas", rt.get("replicas"), 0),
        redis_arguments=str(entry.get("redis_arguments") or ""),
        resources=entry.get("resources") or {},
        placement=str(rt.get("placement") or ""),
        server=server,
    )


def load_topologies(path: Path | None = None) -> dict[str, Topology]:
    path = path or default_topologies_file()
    raw = load_yaml(path)
    entries = raw.get("spec", {}).get("setups") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise SpecError([Problem(path, "spec.setups", "expected a list of topologies")])
    out: dict[str, Topology] = {}
    for i, entry in enumerate(entries):
        topo = _entry(path, i, entry)
        out[topo.name] = topo
    return out
