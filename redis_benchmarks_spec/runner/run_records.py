"""The records one test run makes of what its steps found (results/stages.py): who and
where it is, its CPUs, the server's identity, the client side's CPU, the exporter's metrics.
:class:`runner.execute.SuiteRun` files them; :func:`results.assembly.assemble` makes the
document."""

from __future__ import annotations

import logging
import time
import uuid
from dataclasses import replace
from functools import partial
from pathlib import Path

from redis_benchmarks_spec.loadgen.exporter import evaluate_metrics, metric_name
from redis_benchmarks_spec.loadgen.result import exporter_data
from redis_benchmarks_spec.results import stages
from redis_benchmarks_spec.results.document import DISTURBED, PRELOAD_SNAPSHOT, CpuUsage
from redis_benchmarks_spec.results.stages import RunStart
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.runner import dataset as dataset_mod
from redis_benchmarks_spec.runner import node_stats
from redis_benchmarks_spec.runner.cpus import CpuPlan
from redis_benchmarks_spec.runner.deployment import DeploymentSpec
from redis_benchmarks_spec.runner.run_env import RunEnv
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import Topology
from redis_benchmarks_spec.telemetry import info as info_mod
from redis_benchmarks_spec.telemetry.cpu import (
    CLIENT_CORES,
    FOREIGN,
    CpuSampler,
    SaturationThresholds,
    is_client_bound,
    is_disturbed,
)

log = logging.getLogger(__name__)

CLIENT_BOUND = "client-bound"
SHARED_CORES = "shared-cores"


def run_start(suite: Suite, topology: Topology, env: RunEnv) -> RunStart:
    """Which test, where, from when: what the run knows before it starts anything."""
    start_ms = int(time.time() * 1000)
    context = replace(env.context, topology=topology.name, topology_type=topology.type)
    return RunStart(
        test_name=suite.name, run_id=f"{suite.name}:{start_ms}:{uuid.uuid4().hex[:8]}",
        context=context, suite_file=str(suite.path),
        tested_groups=list(suite.tested_groups), tested_commands=list(suite.tested_commands),
        tool=",".join(suite.tools), redis_server=env.redis_server, start_ms=start_ms,
        sweep=dict(env.config.sweep))


def dataset_record(suite: Suite) -> dict[str, object]:
    """The suite's dataset as the document records it (the RDB's record is added once fetched)."""
    db = suite.dbconfig
    record: dict[str, object] = {k: v for k, v in (
        ("name", db.dataset_name), ("description", db.dataset_description)) if v}
    if db.init_lua:
        record["init_lua_scripts"] = len(db.init_lua)
    if db.rdb_checks:
        record["rdb_checks"] = db.rdb_checks.operation
    if db.preload_before_replica:
        record["preload_before_replica"] = True
    return record


def with_dataset(setup: stages.ServerSetup, suite: Suite, topology: Topology,
                 spec: DeploymentSpec, cache: Path) -> stages.ServerSetup:
    """``dbconfig.dataset``: fetched (or found in the cache) and put in the primary's dir
    (through ``spec``); ``setup`` with the RDB's record and the server's ``--dbfilename``."""
    db = suite.dbconfig
    if not db.dataset:
        return setup
    if topology.is_cluster:
        raise dataset_mod.DatasetError(f"dataset {db.dataset}: an RDB cannot seed a "
                                       f"cluster topology ({topology.name})")
    rdb = dataset_mod.fetch(db.dataset, cache)
    spec.prepare_primary_dir = partial(dataset_mod.place, rdb)
    spec.start_timeout = dataset_mod.load_timeout_s(rdb, spec.start_timeout)
    return stages.ServerSetup([*setup.server_args, "--dbfilename", dataset_mod.DBFILENAME],
                              {**setup.dataset, "rdb": rdb.record()})


def with_snapshot(setup: stages.ServerSetup, snapshot: dataset_mod.CachedDataset
                  ) -> stages.ServerSetup:
    """``setup`` of a counted run that loads its preload's snapshot (runner/preload_snapshot.py)."""
    return stages.ServerSetup([*setup.server_args, "--dbfilename", dataset_mod.DBFILENAME],
                              {**setup.dataset, PRELOAD_SNAPSHOT: snapshot.record()})


def placement(test: str, plan: CpuPlan, client: list[int], why: str,
               findings: list[stages.Findings]) -> stages.CpuPlacement:
    """The CPUs handed out; cores shared with the servers are flagged (into ``findings``)."""
    if plan.warning:
        log.warning("%s: %s", test, plan.warning)
        findings.append(stages.Findings([SHARED_CORES]))
    return stages.CpuPlacement({"server": plan.server, "client": client}, why)


def identity(snapshots: node_stats.NodeSnapshots) -> stages.ServerIdentity:
    """The entry node's version and git sha, from its INFO."""
    return stages.ServerIdentity(*info_mod.server_identity(snapshots.entry))


def saturation(sampler: CpuSampler, plan: CpuPlan, thresholds: SaturationThresholds,
                client_usage: CpuUsage | None) -> tuple[dict[str, CpuUsage], stages.Findings]:
    """Both sides' CPU, the foreign load on their CPUs, and the flags they raise."""
    client = client_usage or sampler.usage("client", len(plan.client))
    server = sampler.usage("server", len(plan.server))
    cpu = {"client": client, "server": server}
    foreign = sampler.usage(FOREIGN, len(set(plan.client) | set(plan.server)))
    if foreign.samples:
        cpu[FOREIGN] = foreign
    cores = sampler.usage(CLIENT_CORES, len(plan.client))
    if cores.samples:
        cpu[CLIENT_CORES] = cores
    flags = []
    if is_client_bound(client, server, thresholds, cores if cores.samples else None):
        flags.append(CLIENT_BOUND)
    if is_disturbed(foreign, thresholds):
        flags.append(DISTURBED)
    return cpu, stages.Findings(flags)


def tool_outcome(suite: Suite, tool_result: ToolResult,
                  extra_totals: dict[str, float]) -> stages.ToolOutcome:
    """The exporter's metrics, evaluated on the tool's data with the run's own figures
    beside its totals (a new value: ``tool_result.data`` stays as the tool wrote it)."""
    metrics, missing = evaluate_metrics(exporter_data(tool_result, extra_totals),
                                        suite.exporter.metrics)
    paths = {metric_name(p): p for p in suite.exporter.metrics if metric_name(p) in metrics}
    return stages.ToolOutcome(tool_result, metrics, missing, paths)
