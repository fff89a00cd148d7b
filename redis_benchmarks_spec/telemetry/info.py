"""INFO and INFO commandstats snapshots, and what changed between two of them."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

# cumulative counters worth a delta (gauges like used_memory are kept as "after" values)
COUNTER_FIELDS = (
    "total_commands_processed", "total_connections_received", "total_net_input_bytes",
    "total_net_output_bytes", "total_error_replies", "expired_keys", "evicted_keys",
    "keyspace_hits", "keyspace_misses", "used_cpu_sys", "used_cpu_user", "rejected_connections",
    "total_reads_processed", "total_writes_processed", "io_threaded_reads_processed",
    "io_threaded_writes_processed",
)
GAUGE_FIELDS = ("used_memory", "used_memory_rss", "mem_fragmentation_ratio", "connected_clients")


@dataclass
class InfoSnapshot:
    info: dict[str, Any] = field(default_factory=dict)
    commandstats: dict[str, dict[str, float]] = field(default_factory=dict)


def snapshot(client: redis.Redis) -> InfoSnapshot:
    """INFO (all sections) and INFO commandstats, parsed by redis-py."""
    info = client.info("all")
    stats = client.info("commandstats")
    commandstats = {}
    for key, value in stats.items():
        if key.startswith("cmdstat_") and isinstance(value, dict):
            commandstats[key[len("cmdstat_"):]] = {k: float(v) for k, v in value.items()}
    return InfoSnapshot(info=info, commandstats=commandstats)


def info_delta(before: InfoSnapshot, after: InfoSnapshot) -> dict[str, float]:
    out: dict[str, float] = {}
    for name in COUNTER_FIELDS:
        if name in after.info:
            out[name] = float(after.info[name]) - float(before.info.get(name, 0))
    for name in GAUGE_FIELDS:
        if name in after.info:
            out[name] = float(after.info[name])
    return out


def commandstats_delta(before: InfoSnapshot, after: InfoSnapshot) -> dict[str, dict[str, float]]:
    """Per command: calls, usec, failed/rejected calls during the run, and usec per call."""
    out: dict[str, dict[str, float]] = {}
    for cmd, stats in after.commandstats.items():
        prev = before.commandstats.get(cmd, {})
        delta = {k: stats.get(k, 0.0) - prev.get(k, 0.0)
                 for k in ("calls", "usec", "rejected_calls", "failed_calls")}
        if delta["calls"] <= 0 and delta["failed_calls"] <= 0 and delta["rejected_calls"] <= 0:
            continue
        delta["usec_per_call"] = delta["usec"] / delta["calls"] if delta["calls"] else 0.0
        out[cmd] = delta
    return out


def error_replies(before: InfoSnapshot, after: InfoSnapshot) -> tuple[int, str]:
    """Error replies the server sent between the snapshots, and which kinds (errorstats)."""
    count = int(after.info.get("total_error_replies", 0)) - \
        int(before.info.get("total_error_replies", 0))
    kinds = []
    for key, value in after.info.items():
        if key.startswith("errorstat_") and isinstance(value, dict):
            prev = before.info.get(key, {}).get("count", 0) if isinstance(
                before.info.get(key), dict) else 0
            n = int(value.get("count", 0)) - int(prev)
            if n > 0:
                kinds.append(f"{key[len('errorstat_'):]}={n}")
    return count, ", ".join(kinds)


def server_identity(snapshot_: InfoSnapshot) -> tuple[str, str, str, str]:
    """redis_version, redis_git_sha1, redis_build_id (INFO server) and mem_allocator
    (INFO memory): what identifies the binary that answered."""
    info = snapshot_.info
    return tuple(str(info.get(name, "")) for name in (  # type: ignore[return-value]
        "redis_version", "redis_git_sha1", "redis_build_id", "mem_allocator"))
