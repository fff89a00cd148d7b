"""Replicas: link one to its primary, time the full sync, wait until it caught up.

The full-sync time runs from an explicit REPLICAOF on a started, empty replica to the first
INFO that shows the link up with no sync in progress (polled every 10 ms, so the figure is
at most that late). Startup is outside the interval. It is stored as the
``ReplicationFullSyncSecondsV2`` metric, the name the performance team's suites export.
"""

from __future__ import annotations

import time
from typing import TYPE_CHECKING, Any

import redis

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import wait_for

if TYPE_CHECKING:
    from redis_benchmarks_spec.runner.node import Node

POLL_S = 0.01


class ReplicationError(TestRunError):
    """A replica did not link or did not catch up in time."""


def _replication(client: redis.Redis) -> dict[str, Any]:
    try:
        return dict(client.info("replication"))
    except (redis.TimeoutError, redis.BusyLoadingError):
        return {}  # loading a large RDB can delay INFO: keep polling within the deadline


def link(replica: Node, primary: Node, timeout_s: float) -> float:
    """REPLICAOF ``primary``; returns seconds until the link is up and the sync finished."""
    client = replica.client(timeout=10)
    try:
        start = time.monotonic()
        client.execute_command("REPLICAOF", primary.host, primary.port)
        while time.monotonic() - start < timeout_s:
            info = _replication(client)
            if info.get("role") == "slave" and info.get("master_link_status") == "up" \
                    and int(info.get("master_sync_in_progress", 1)) == 0:
                return time.monotonic() - start
            time.sleep(POLL_S)
        raise ReplicationError(f"{replica.name} did not finish its full sync from "
                               f"{primary.name} within {timeout_s:.0f}s")
    except redis.RedisError as exc:
        raise ReplicationError(f"{replica.name}: REPLICAOF {primary.name} failed: {exc}") from exc
    finally:
        client.close()


def offsets(replica: Node, primary: Node) -> tuple[int, int]:
    """(primary's master_repl_offset, replica's applied offset)."""
    with primary.client(timeout=10) as p, replica.client(timeout=10) as r:
        want = int(_replication(p).get("master_repl_offset", -1))
        info = _replication(r)
        have = int(info.get("slave_repl_offset", info.get("master_repl_offset", -2)))
    return want, have


def wait_offsets_equal(replica: Node, primary: Node, timeout_s: float) -> None:
    """Wait until the replica applied everything the primary wrote (equal offsets)."""
    seen: list[tuple[int, int]] = []

    def equal() -> bool:
        seen.append(offsets(replica, primary))
        return seen[-1][0] == seen[-1][1] and seen[-1][0] >= 0

    try:
        ok = wait_for(equal, timeout_s, interval=POLL_S * 5)
    except redis.RedisError as exc:
        raise ReplicationError(f"{replica.name}: reading replication offsets failed: "
                               f"{exc}") from exc
    if not ok:
        want, have = seen[-1] if seen else (-1, -1)
        raise ReplicationError(f"{replica.name} did not catch up with {primary.name} within "
                               f"{timeout_s:.0f}s (primary offset {want}, replica {have})")


def full_syncs(primary: Node) -> int:
    """``sync_full`` of a primary: full syncs it served so far."""
    with primary.client(timeout=10) as client:
        return int(client.info("stats").get("sync_full", 0))


def resync(replica: Node, primary: Node, timeout_s: float) -> float:
    """A full sync of the primary's current dataset to ``replica``, timed as :func:`link`:
    ``REPLICAOF NO ONE`` gives the replica a replication id of its own, so the primary
    cannot serve it a partial resync (checked on the primary's ``sync_full``)."""
    served = full_syncs(primary)
    try:
        with replica.client(timeout=10) as client:
            client.execute_command("REPLICAOF", "NO", "ONE")
    except redis.RedisError as exc:
        raise ReplicationError(f"{replica.name}: REPLICAOF NO ONE failed: {exc}") from exc
    seconds = link(replica, primary, timeout_s)
    if full_syncs(primary) <= served:
        raise ReplicationError(f"{replica.name} resynced from {primary.name} without a full "
                               "sync (sync_full did not grow): its time is not a full sync's")
    return seconds
