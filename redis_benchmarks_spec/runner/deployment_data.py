"""The dataset on a multi-node deployment, and the deployment's own figures as metrics.

The standalone preparation (init commands, init_lua, preload, keyspace check) is the
runner's ``prepare`` callback; this module decides where it runs and what follows it:
replicas linked before or after it (``preload_before_replica``), then caught up and checked;
a cluster's dataset prepared on a scratch standalone node and copied by slot.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from redis_benchmarks_spec.loadgen.exporter import metric_name
from redis_benchmarks_spec.results.stages import DerivedMetrics
from redis_benchmarks_spec.runner import cluster
from redis_benchmarks_spec.runner.deployment import Deployment
from redis_benchmarks_spec.runner.node import Node
from redis_benchmarks_spec.runner.preload import PreloadError, keyspace_size
from redis_benchmarks_spec.suites.dbconfig import DbConfig

# prepares the dataset on one standalone node; returns the preload time (or None)
Prepare = Callable[[Node], "float | None"]


def prepare(deployment: Deployment, db: DbConfig, on_node: Prepare,
            scratch_cpus: list[int]) -> float | None:
    """The dataset on every node of ``deployment``; returns the preparation time."""
    before_replica = db.preload_before_replica
    if deployment.replicas and not before_replica:
        deployment.link_replicas()
    if deployment.topology.is_cluster:
        duration = _prepare_cluster(deployment, db, on_node, scratch_cpus)
    else:
        duration = on_node(deployment.entry)
    if deployment.replicas:
        if before_replica:
            deployment.link_replicas()  # that sync carried the dataset: its time is the one
            deployment.preloaded_sync_s = list(deployment.full_sync_s)
        deployment.wait_in_sync()
        _check_replica_keyspace(deployment, db.keyspacelen)
        if not before_replica:
            deployment.resync_replicas()
            deployment.wait_in_sync()
    return duration


def _prepare_cluster(deployment: Deployment, db: DbConfig, on_node: Prepare,
                     scratch_cpus: list[int]) -> float | None:
    """Prepare the dataset on a scratch standalone node exactly as for oss-standalone
    (EVAL loops, tools, init commands run unchanged), then copy every key to the primary
    owning its slot; the duration includes the copy."""
    scratch = deployment.start_scratch(scratch_cpus)
    try:
        duration = on_node(scratch)
        started = time.monotonic()
        cluster.load_from_scratch(scratch, deployment.primaries, db.init_commands)
        for primary in deployment.primaries:  # the init commands ran there too
            primary.handle.auth = db.auth
        copy_s = time.monotonic() - started
    finally:
        deployment.stop_scratch()
    if db.keyspacelen is not None:
        actual = cluster.keyspace_sum(deployment.primaries)
        if actual != db.keyspacelen:
            raise PreloadError(f"keyspace check failed: expected {db.keyspacelen} keys "
                               f"(dbconfig.check.keyspacelen), found {actual} summed "
                               f"over {len(deployment.primaries)} primaries")
    return None if duration is None else duration + copy_s


def _check_replica_keyspace(deployment: Deployment, expected: int | None) -> None:
    if expected is None:
        return
    for replica in deployment.replicas:
        with replica.client() as client:
            try:
                actual = keyspace_size(client)
            except redis.RedisError as exc:
                raise PreloadError(f"keyspace check on {replica.name} failed: {exc}") from exc
        if actual != expected:
            raise PreloadError(f"keyspace check failed on {replica.name}: expected {expected} "
                               f"keys (dbconfig.check.keyspacelen), found {actual}")


def totals_metrics(values: dict[str, float]) -> DerivedMetrics:
    """Deployment figures are metrics of every run on the topology, exported or not."""
    paths = {metric_name(path): path for path in
             (f'$."ALL STATS".Totals.{name}' for name in values)}
    named = dict(zip(paths, values.values()))
    return DerivedMetrics(named, paths)
