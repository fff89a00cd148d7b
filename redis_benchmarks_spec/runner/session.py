"""A session: many suites, one after another, each on each selected topology.

Used by ``rbs run``, the interleaved A/B mode and the lab agent. It never stops at a failing
test; it stops early only when asked to (``stop`` event, SIGINT/SIGTERM).
"""

from __future__ import annotations

import logging
import math
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, replace

from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.loadgen.base import ClientDriver
from redis_benchmarks_spec.loadgen.drivers import ToolPaths, make_driver
from redis_benchmarks_spec.results.document import (
    STATUS_SKIPPED,
    RunResult,
)
from redis_benchmarks_spec.runner.config import SessionConfig
from redis_benchmarks_spec.runner.cpus import CpuAllocator
from redis_benchmarks_spec.runner.dataset import default_cache_dir
from redis_benchmarks_spec.runner.execute import run_test
from redis_benchmarks_spec.runner.launcher import ProcessLauncher, ServerLauncher
from redis_benchmarks_spec.runner.phases import PhaseDriver, PhaseLauncher
from redis_benchmarks_spec.runner.run_env import RunEnv
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import Topology

log = logging.getLogger(__name__)

@dataclass
class PlannedTest:
    suite: Suite
    topology: Topology | None
    skip_reason: str = ""
    topology_name: str = ""  # as the suite names it (also when the catalogue lacks it)


def plan_tests(config: SessionConfig, suites: list[Suite]) -> list[PlannedTest]:
    """Each suite on each of its topologies that the filter allows (only the first without
    a filter when ``first_topology_only``), with skip reasons."""
    tools = config.tools.resolve()
    catalogue = config.catalogue()
    allocator = CpuAllocator(config.cpus, strict=config.strict_cpus)
    planned: list[PlannedTest] = []
    remote = config.client_host is not None
    for suite in suites:
        names = [t for t in suite.topologies
                 if not config.topology_filter or t == config.topology_filter]
        if config.first_topology_only and not config.topology_filter:
            names = names[:1]
        for name in names:
            topo = catalogue.get(name)
            reason = _capability_skip_reason(suite, config.capabilities) or \
                _skip_reason(suite, topo, name, tools, config.memory_only) or \
                _cpu_skip_reason(suite, topo, allocator, remote)
            planned.append(PlannedTest(suite, topo, reason, name))
    return planned


def client_cpus(suite: Suite) -> int:
    """CPUs the suite's clients get: parallel clients asking 0.5 CPU each share one core."""
    return max(1, math.ceil(sum(c.cpus or 1.0 for c in suite.clientconfigs) - 1e-9))


def _cpu_skip_reason(suite: Suite, topo: Topology | None, allocator: CpuAllocator,
                     remote_client: bool = False) -> str:
    if topo is None or not allocator.strict:
        return ""
    need = allocator.needed([topo.cpus_per_node] * topo.node_count,
                            0 if remote_client else client_cpus(suite))
    if need <= len(allocator.cpus):
        return ""
    return f"--strict-cpus: topology {topo.name!r} needs {need} CPUs ({topo.node_count} " \
           f"node(s) x {topo.cpus_per_node} + client), this host gives {len(allocator.cpus)}"


def _capability_skip_reason(suite: Suite, offered: frozenset[str] | None) -> str:
    lacking = suite.missing_capabilities(set(offered)) if offered is not None else []
    if not lacking:
        return ""
    return f"requires runner capabilities this host does not offer: {', '.join(lacking)} " \
           f"(offered: {', '.join(sorted(offered or ())) or 'none'}; --capability)"


def _skip_reason(suite: Suite, topo: Topology | None, name: str, tools: ToolPaths,
                 memory_only: bool = False) -> str:
    if topo is None:
        return f"topology {name!r} is not in the topologies catalogue"
    unsupported = topo.unsupported_reason()
    if unsupported:
        return unsupported
    # clientconfigs run together: every one of their tools must be present
    for tool in () if memory_only else suite.tools:
        reason = tools.unavailable(tool)
        if reason:
            return reason
    preload = suite.dbconfig.preload_tool
    if preload and preload.tool != "redis-cli":  # redis-cli preloads go through redis-py
        reason = tools.unavailable(preload.tool)
        if reason:
            return f"preload: {reason}"
    return ""


def _skipped(test: PlannedTest, config: SessionConfig) -> RunResult:
    now = int(time.time() * 1000)
    return RunResult(
        test_name=test.suite.name, run_id=f"{test.suite.name}:{now}:skipped",
        status=STATUS_SKIPPED, reason=test.skip_reason,
        context=replace(config.context, topology=test.topology_name or config.context.topology,
                        topology_type=test.topology.type if test.topology else ""),
        suite_file=str(test.suite.path), tool=",".join(test.suite.tools),
        start_ms=now, end_ms=now)


def _drivers(tools: ToolPaths) -> dict[str, ClientDriver]:
    out: dict[str, ClientDriver] = {}
    for tool in tools.binaries:
        driver = make_driver(tool, tools)
        if driver is not None:
            out[tool] = driver
    return out


def make_launcher(config: SessionConfig, registry: ProcessRegistry) -> ServerLauncher:
    if config.launcher == "docker":
        from redis_benchmarks_spec.runner.docker_launcher import DockerLauncher
        return DockerLauncher()
    if config.launcher != "process":
        raise ValueError(f"unknown launcher {config.launcher!r} (process or docker)")
    return ProcessLauncher(registry, config.server_env)


def make_env(config: SessionConfig, registry: ProcessRegistry) -> RunEnv:
    tools = config.tools.resolve()
    if not tools.redis_server:
        raise FileNotFoundError("redis-server not found: give --redis-server or put it on PATH")
    context = replace(config.context, deployment_type=config.launcher)
    drivers, launcher = _drivers(tools), make_launcher(config, registry)
    if config.point is not None:
        launcher, drivers = config.point.wrap(launcher, drivers)
    if config.on_phase is not None:
        launcher = PhaseLauncher(launcher, config.on_phase)
        drivers = {t: PhaseDriver(d, config.on_phase) for t, d in drivers.items()}
    return RunEnv(
        config=config, redis_server=tools.redis_server, drivers=drivers,
        launcher=launcher, registry=registry,
        allocator=_allocator(config), context=context,
        dataset_cache=config.dataset_cache or default_cache_dir())


def _allocator(config: SessionConfig) -> CpuAllocator:
    """The session's CPU allocator; its placement's reason carries ``config.cpu_note``."""
    allocator = CpuAllocator(config.cpus, strict=config.strict_cpus)
    if config.cpu_note:
        why = "; ".join(w for w in (allocator.placement.why, config.cpu_note) if w)
        allocator.placement = replace(allocator.placement, why=why)
    return allocator


def run_suites(config: SessionConfig, suites: list[Suite],
               on_result: Callable[[RunResult], None] | None = None,
               stop: threading.Event | None = None,
               registry: ProcessRegistry | None = None,
               on_start: Callable[[PlannedTest], None] | None = None,
               planned: list[PlannedTest] | None = None) -> list[RunResult]:
    """Run every planned test; everything started is stopped even on KeyboardInterrupt.

    ``on_start`` is called before each test (progress displays), ``on_result`` after it.
    ``planned``: the session's plan when the caller made it already (one plan per session).
    """
    registry = registry or ProcessRegistry()
    env = make_env(config, registry)
    config.results_dir.mkdir(parents=True, exist_ok=True)
    results: list[RunResult] = []
    try:
        for test in planned if planned is not None else plan_tests(config, suites):
            if stop is not None and stop.is_set():
                break
            if on_start:
                on_start(test)
            if test.skip_reason or test.topology is None:
                result = _skipped(test, config)
            else:
                result = run_test(test.suite, test.topology, env)
            results.append(result)
            if on_result:
                on_result(result)
    finally:
        registry.stop_all()
        stop_all = getattr(env.launcher, "stop_all", None)
        if stop_all is not None:
            stop_all()
    return results
