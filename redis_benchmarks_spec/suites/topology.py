"""The topologies catalogue (topologies.yml) and platform descriptions."""

from __future__ import annotations

import shlex
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.suites.catalog import data_root
from redis_benchmarks_spec.suites.problems import Problem, SpecError
from redis_benchmarks_spec.suites.suite import load_yaml


@dataclass
class Topology:
    name: str
    type: str = "oss-standalone"
    primaries: int = 1
    replicas: int = 0
    redis_arguments: str = ""
    resources: dict[str, Any] = field(default_factory=dict)

    def server_args(self) -> list[str]:
        return shlex.split(self.redis_arguments)

    @property
    def server_cpus(self) -> int:
        """CPUs requested per server process (at least one)."""
        raw = (self.resources.get("requests") or {}).get("cpus", 1)
        try:
            return max(1, int(float(raw)))
        except (TypeError, ValueError):
            return 1


def default_topologies_file() -> Path:
    return data_root() / "setups" / "topologies.yml"


def load_topologies(path: Path | None = None) -> dict[str, Topology]:
    path = path or default_topologies_file()
    raw = load_yaml(path)
    entries = raw.get("spec", {}).get("setups") if isinstance(raw, dict) else raw
    if not isinstance(entries, list):
        raise SpecError([Problem(path, "spec.setups", "expected a list of topologies")])
    out: dict[str, Topology] = {}
    for i, entry in enumerate(entries):
        if not isinstance(entry, dict) or "name" not in entry:
            raise SpecError([Problem(path, f"spec.setups[{i}]", "entry without a name")])
        rt = entry.get("redis_topology") or {}
        out[entry["name"]] = Topology(
            name=entry["name"],
            type=entry.get("type", "oss-standalone"),
            primaries=int(rt.get("primaries", 1)),
            replicas=int(rt.get("replicas", 0)),
            redis_arguments=str(entry.get("redis_arguments") or ""),
            resources=entry.get("resources") or {},
        )
    return out


@dataclass
class Platform:
    """A kind of machine results are tagged with (``icelake-2s``, ``local-2core``...)."""

    name: str
    description: str = ""
    arch: str = "amd64"
    cpus: int | None = None
    os: str = ""


def load_platform(path: Path) -> Platform:
    raw = load_yaml(path)
    if not isinstance(raw, dict) or "name" not in raw:
        raise SpecError([Problem(path, "name", "platform file needs a name")])
    return Platform(name=str(raw["name"]), description=str(raw.get("description", "")),
                    arch=str(raw.get("arch", "amd64")), cpus=raw.get("cpus"),
                    os=str(raw.get("os", "")))
