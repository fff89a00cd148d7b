"""INFO / commandstats over every node of a deployment: kept per node, summed over primaries.

Clients talk to primaries only; a replica's commandstats repeat the primary's writes, so the
run's totals add up the primaries (one node for oss-standalone: the same numbers as before)
and every node's own deltas stay in the deployment record. Error replies are counted on every
node (a MOVED storm on one cluster node is still an error).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from redis_benchmarks_spec.results import memory
from redis_benchmarks_spec.results.document import DeploymentRecord
from redis_benchmarks_spec.results.stages import ServerStats
from redis_benchmarks_spec.runner.deployment import Deployment
from redis_benchmarks_spec.runner.node import PRIMARY
from redis_benchmarks_spec.telemetry import info as info_mod
from redis_benchmarks_spec.telemetry.memory import node_memory, read_memory

# gauges that add up over nodes; other gauges (ratios) are averaged
_SUMMED_GAUGES = ("used_memory", "used_memory_rss", "connected_clients")
FULL_SYNC_METRIC = "ReplicationFullSyncSecondsV2"
FULL_SYNC_COUNT_METRIC = "ReplicationFullSyncCountDuringBench"
#: the slowest replica's full sync of the preloaded dataset (before the run)
PRELOADED_SYNC_METRIC = "ReplicationFullSyncPreloadedSeconds"


@dataclass
class NodeSnapshots:
    """One snapshot per node, in deployment order."""

    by_node: list[info_mod.InfoSnapshot] = field(default_factory=list)

    @property
    def entry(self) -> info_mod.InfoSnapshot:
        return self.by_node[0]


def snapshot(deployment: Deployment) -> NodeSnapshots:
    out = NodeSnapshots()
    for node in deployment.nodes:
        out.by_node.append(info_mod.snapshot(node.stats_client()))
    return out


def error_replies(before: NodeSnapshots, after: NodeSnapshots) -> tuple[int, str]:
    """Error replies over all nodes, and their kinds prefixed by node when there are several."""
    total, kinds = 0, []
    for i, (b, a) in enumerate(zip(before.by_node, after.by_node)):
        count, kind = info_mod.error_replies(b, a)
        total += count
        if kind:
            kinds.append(kind if len(before.by_node) == 1 else f"node {i}: {kind}")
    return total, "; ".join(kinds)


def _sum_info(deltas: list[dict[str, float]]) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in {k for d in deltas for k in d}:
        values = [d[name] for d in deltas if name in d]
        averaged = name in info_mod.GAUGE_FIELDS and name not in _SUMMED_GAUGES
        out[name] = sum(values) / len(values) if averaged else sum(values)
    return out


def _sum_commandstats(deltas: list[dict[str, dict[str, float]]]) -> dict[str, dict[str, float]]:
    out: dict[str, dict[str, float]] = {}
    for delta in deltas:
        for cmd, stats in delta.items():
            acc = out.setdefault(cmd, {})
            for k, v in stats.items():
                if k != "usec_per_call":
                    acc[k] = acc.get(k, 0.0) + v
    for acc in out.values():
        acc["usec_per_call"] = acc["usec"] / acc["calls"] if acc.get("calls") else 0.0
    return out


def server_stats(deployment: Deployment, before: NodeSnapshots, after: NodeSnapshots,
                 record: DeploymentRecord | None = None) -> ServerStats:
    """Per-node deltas in the deployment record (``record``, else a new one), and the
    primaries' sums."""
    record = record or deployment.record()
    info_deltas, cmd_deltas = [], []
    for node, node_rec, b, a in zip(deployment.nodes, record.nodes, before.by_node,
                                    after.by_node):
        node_rec.info_delta = info_mod.info_delta(b, a)
        node_rec.commandstats_delta = info_mod.commandstats_delta(b, a)
        if node.role == PRIMARY:
            info_deltas.append(node_rec.info_delta)
            cmd_deltas.append(node_rec.commandstats_delta)
    return ServerStats(record, _sum_info(info_deltas), _sum_commandstats(cmd_deltas))


def replication_metrics(deployment: Deployment, before: NodeSnapshots,
                        after: NodeSnapshots) -> dict[str, float]:
    """Full-sync figures the team's suites export under ``ALL STATS.Totals``: the slowest
    replica's initial full sync, and full syncs primaries served during the measured run."""
    if not deployment.replicas:
        return {}
    during = sum(int(a.info.get("sync_full", 0)) - int(b.info.get("sync_full", 0))
                 for node, b, a in zip(deployment.nodes, before.by_node, after.by_node)
                 if node.role == PRIMARY)
    out = {FULL_SYNC_COUNT_METRIC: float(during)}
    if deployment.full_sync_s:
        out[FULL_SYNC_METRIC] = max(deployment.full_sync_s)
    if deployment.preloaded_sync_s:
        out[PRELOADED_SYNC_METRIC] = max(deployment.preloaded_sync_s)
    return out


def persistence_metrics(after: NodeSnapshots) -> dict[str, float]:
    """The entry node's latest fork and save or rewrite times (INFO persistence and stats)
    when it forked during the test (a persistent topology, a BGSAVE suite); else {}."""
    info = after.entry.info
    if int(info.get("latest_fork_usec", 0) or 0) <= 0:
        return {}
    out = {"latest_fork_usec": float(info["latest_fork_usec"])}
    for name in ("rdb_last_bgsave_time_sec", "aof_last_rewrite_time_sec"):
        if int(info.get(name, -1)) >= 0:
            out[name] = float(info[name])
    return out


def memory_snapshot(deployment: Deployment, settle: bool = True) -> memory.MemorySnapshot:
    """Every node's memory (with its index, role and port) and the primaries' totals; read
    once settled (:func:`telemetry.memory.node_memory`), or, with ``settle`` False, read once
    and marked ``settled: 0``."""
    out = memory.MemorySnapshot()
    primaries = []
    for node in deployment.nodes:
        figures = node_memory(node.stats_client()) if settle else \
            {**read_memory(node.stats_client()), "settled": 0.0}
        out.nodes.append({"index": node.index, "role": node.role, "port": node.port,
                          **figures})
        if node.role == PRIMARY:
            primaries.append(figures)
    out.totals = memory.total(primaries)
    return out
