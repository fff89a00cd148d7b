"""The configuration of one session, built once (from CLI flags, a platform's config or an
agent's event, each by its own builder: ``cli/run.py``, ``agent/config.py``) and passed down
whole: the session, the run of each test (``RunEnv.config``) and the plan read it, nothing
copies its fields. It is frozen: a variant (a sweep point's folder, one topology of an A/B)
is a ``dataclasses.replace`` of it."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field, replace
from pathlib import Path

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import RunContext
from redis_benchmarks_spec.runner.client_host import ClientHostConfig
from redis_benchmarks_spec.runner.concurrency import PointSetup
from redis_benchmarks_spec.suites.topology import Topology, load_topologies
from redis_benchmarks_spec.telemetry.cpu import SaturationThresholds
from redis_benchmarks_spec.telemetry.window import WindowOptions


@dataclass(frozen=True)
class SessionConfig:
    """What a session runs with; see the module doc."""

    tools: ToolPaths
    results_dir: Path
    context: RunContext = field(default_factory=RunContext)
    test_time: int | None = None
    topologies: dict[str, Topology] | None = None
    topology_filter: str | None = None
    # without a filter: only each suite's first topology (rbs run's default), else all
    first_topology_only: bool = False
    cpus: list[int] | None = None
    thresholds: SaturationThresholds = field(default_factory=SaturationThresholds)
    server_args: list[str] = field(default_factory=list)
    server_env: dict[str, str] = field(default_factory=dict)  # --server-env KEY=VALUE
    preload_timeout_s: float = 600.0
    launcher: str = "process"  # or "docker"
    # capabilities this host offers; suites requiring others are skipped (None: not checked)
    capabilities: frozenset[str] | None = None
    dataset_cache: Path | None = None  # None: default_cache_dir() ($RBS_DATASET_CACHE)
    strict_cpus: bool = False  # refuse (skip) a test the host has too few CPUs for
    # said with each run's CPU placement (a count lane: runner/count_lanes.py)
    cpu_note: str = ""
    # told what the running test is doing now (progress displays); see runner/phases.py
    on_phase: Callable[[str], None] | None = None
    window: WindowOptions = field(default_factory=WindowOptions)  # telemetry and profilers
    # a point of a concurrency sweep: limits raised, warm-up and minimum length (sweep.py)
    point: PointSetup | None = None
    # {"param": "clients", "value": "64"}: every result of this session is that sweep value's
    sweep: dict[str, str] = field(default_factory=dict)
    # the tools run on this host over SSH (runner/client_host.py); None: here, loopback
    client_host: ClientHostConfig | None = None
    # preload and measure memory only: no warm-up, no client run (``rbs run --memory-only``)
    memory_only: bool = False

    def with_catalogue(self) -> SessionConfig:
        """This configuration with the topologies catalogue read (once: topologies.yml is
        read here, not at every plan)."""
        if self.topologies is not None:
            return self
        return replace(self, topologies=load_topologies())

    def catalogue(self) -> dict[str, Topology]:
        return self.topologies if self.topologies is not None else load_topologies()
