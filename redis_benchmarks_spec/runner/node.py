"""One running redis-server of a deployment, and the connection options every client of
ours opens it with. Deployments start nodes; replication and cluster set-up link them."""

from __future__ import annotations

import inspect
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.results.document import NodeRecord
from redis_benchmarks_spec.runner.launcher import ServerHandle, auth_options

PRIMARY = "primary"
REPLICA = "replica"
SCRATCH = "scratch"  # a standalone node a cluster's dataset is prepared on, then copied


def _quiet_connection() -> dict[str, Any]:
    """Connection options under which redis-py sends nothing but our commands.

    By default it follows a connect with CLIENT SETINFO (and, over RESP3, CLIENT
    MAINT_NOTIFICATIONS); Redis 7.0 answers those with error replies, and a connection opened
    during the run (waiting for a replica, say) would add them to the test's error count.
    """
    options: dict[str, Any] = {"protocol": 2}
    if "driver_info" in inspect.signature(redis.Redis.__init__).parameters:
        options["driver_info"] = None  # redis-py 8: lib_name / lib_version are deprecated
    else:
        options.update(lib_name=None, lib_version=None)
    return options


_QUIET = _quiet_connection()


@dataclass
class Node:
    """One running redis-server of a deployment."""

    index: int
    role: str
    cpus: list[int]
    handle: ServerHandle
    primary: int | None = None  # index of the primary a replica follows
    cluster_port: int | None = None
    slots: tuple[int, int] | None = None  # first and last hash slot a cluster primary owns
    notes: list[str] = field(default_factory=list)
    _stats: redis.Redis | None = field(default=None, repr=False)

    @property
    def host(self) -> str:
        return self.handle.host

    @property
    def port(self) -> int:
        return self.handle.port

    @property
    def name(self) -> str:
        return f"{self.role}-{self.index}:{self.port}"

    def client(self, timeout: float = 30.0, decode: bool = True) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=timeout,
                           decode_responses=decode, **_QUIET,
                           **auth_options(self.handle.auth))

    def stats_client(self) -> redis.Redis:
        """One connection kept for INFO snapshots: a new connection between two snapshots
        would show up in them (redis-py's CLIENT SETINFO is an error reply on Redis 7.0)."""
        if self._stats is None:
            self._stats = self.client()
        return self._stats

    def close(self) -> None:
        if self._stats is not None:
            self._stats.close()
            self._stats = None

    def record(self) -> NodeRecord:
        return NodeRecord(index=self.index, role=self.role, host=self.host, port=self.port,
                          cpus=list(self.cpus), pids=list(self.handle.pids),
                          container_id=self.handle.container_id, primary=self.primary,
                          cluster_port=self.cluster_port,
                          slots=list(self.slots) if self.slots else None,
                          log_path=str(self.handle.log_path), notes=list(self.notes))
