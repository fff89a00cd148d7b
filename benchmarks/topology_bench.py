"""Topology setup time, and the series keys a non-default topology writes (issue 12).

(a) Setup time per topology: from the first node's start to every node ready (a cluster:
    slots assigned, nodes met, ``cluster_state:ok`` on every node), then for replicas the
    full sync of an empty primary (REPLICAOF to link up), then stopping every node. Median
    of N runs per topology. Redis holds a fresh cluster primary in ``cluster_state:fail`` for
    2 s after it starts (CLUSTER_WRITABLE_DELAY), which is the floor of a cluster's figure.
    Replicas are given ``repl-diskless-sync-delay 0``: Redis 7's default waits 5 s for more
    replicas before a diskless sync starts.
(b) The keys and labels one non-default topology's run writes to the datasink.

Usage: .venv/bin/python benchmarks/topology_bench.py [--runs 5] [--docker] [--all]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult
from redis_benchmarks_spec.runner.cpus import CpuAllocator
from redis_benchmarks_spec.runner.deployment import Deployment, DeploymentSpec
from redis_benchmarks_spec.runner.launcher import ProcessLauncher, ServerLauncher
from redis_benchmarks_spec.suites.topology import Topology, load_topologies

DEFAULT = ["oss-standalone", "oss-standalone-04-io-threads", "oss-standalone-01-replicas",
           "oss-standalone-02-replicas", "oss-standalone-01-replicas-aof-everysec",
           "oss-cluster-3-primaries", "oss-cluster-5-primaries", "oss-cluster-9-primaries"]
MORE = ["oss-cluster-15-primaries", "oss-cluster-30-primaries"]


def one_setup(topo: Topology, launcher: ServerLauncher, binary: str) -> tuple[float, float,
                                                                             float]:
    """(nodes ready s, replica sync s, stop s) for one deployment of ``topo``."""
    plan = CpuAllocator().plan_nodes([topo.cpus_per_node] * topo.node_count, 1)
    workdir = Path(tempfile.mkdtemp(prefix="rbs-topology-bench-"))
    args = ["--repl-diskless-sync-delay", "0", *topo.server_args()]
    deployment = Deployment(DeploymentSpec(topo, binary, args, plan, workdir), launcher)
    try:
        deployment.start()
        sync = sum(deployment.link_replicas()) if deployment.replicas else 0.0
    finally:
        started = time.monotonic()
        errors = deployment.stop()
        stop_s = time.monotonic() - started
        shutil.rmtree(workdir, ignore_errors=True)
    if errors:
        raise RuntimeError(f"{topo.name}: could not stop {errors}")
    assert deployment.setup_s is not None
    return deployment.setup_s, sync, stop_s


def setup_times(names: list[str], runs: int, launcher: ServerLauncher, binary: str) -> None:
    catalogue = load_topologies()
    print(f"{'topology':42} {'nodes':>5} {'ready s':>8} {'sync s':>7} {'stop s':>7}  "
          f"(median of {runs})")
    for name in names:
        topo = catalogue[name]
        samples = [one_setup(topo, launcher, binary) for _ in range(runs)]
        ready, sync, stop = (statistics.median(s[i] for s in samples) for i in range(3))
        print(f"{name:42} {topo.node_count:>5} {ready:>8.3f} {sync:>7.3f} {stop:>7.3f}")


def series_of(topology: Topology) -> None:
    """What a run of ``topology`` writes: one series per metric and side."""
    context = RunContext(triggering_env="ci", platform="icelake-2s", topology=topology.name,
                         topology_type=topology.type,
                         build_variant="gcc:12.2.0-amd64-debian-bookworm-default",
                         deployment_type="process",
                         git=GitInfo(branch="unstable", version="7.0.15", hash="a1b2c3d4"))
    path = '$."ALL STATS".Totals."Ops/sec"'
    result = RunResult(test_name="redis-benchmark-string-set-100B", run_id="bench", status="ok",
                       context=context, metrics={"ALL_STATS.Totals.Ops/sec": 1.0},
                       metric_paths={"ALL_STATS.Totals.Ops/sec": path})
    print(f"\nseries a {topology.name} run writes (one metric, three sides):")
    for series in keys.series_ids(result):
        print(f"  {series.key}")
    first = keys.series_ids(result)[0]
    labels = {**first.labels(), **keys.run_labels(result)}
    print("  labels of the first: " + ", ".join(f"{k}={v}" for k, v in sorted(labels.items())))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--docker", action="store_true", help="the Docker launcher as well")
    parser.add_argument("--all", action="store_true", help="also 15 and 30 primaries")
    parser.add_argument("--redis-server", default=shutil.which("redis-server"))
    args = parser.parse_args()
    names = DEFAULT + (MORE if args.all else [])
    registry = ProcessRegistry()
    try:
        print("== process launcher")
        setup_times(names, args.runs, ProcessLauncher(registry), args.redis_server)
        if args.docker:
            from redis_benchmarks_spec.runner.docker_launcher import DockerLauncher
            docker = DockerLauncher()
            try:
                print("\n== docker launcher")
                setup_times(names, max(1, args.runs // 2), docker, args.redis_server)
            finally:
                docker.stop_all()
    finally:
        registry.stop_all()
    catalogue = load_topologies()
    for name in ("oss-cluster-3-primaries", "oss-standalone-04-io-threads", "oss-standalone"):
        series_of(catalogue[name])


if __name__ == "__main__":
    main()
