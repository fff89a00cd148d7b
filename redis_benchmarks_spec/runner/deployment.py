"""A deployment: the N Redis nodes one test runs against, started through one launcher.

A topology becomes nodes (primaries first, then each primary's replicas), each started by the
runner's :class:`ServerLauncher` (process or Docker) with its own directory, port and CPUs.
Clusters are formed here (``cluster.py``); replicas are started empty and linked later by
``replication.py``, because the test decides whether the dataset is loaded before or after
the link (``preload_before_replica``). Every node is appended as soon as it runs, so
:meth:`Deployment.stop` stops exactly what was started, by its own pid or container id, even
when the start failed half way.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.results.document import DeploymentRecord
from redis_benchmarks_spec.runner.cpus import CpuPlan
from redis_benchmarks_spec.runner.launcher import (
    ServerHandle,
    ServerLauncher,
    ServerSpec,
    ServerStartError,
)
from redis_benchmarks_spec.runner.node import PRIMARY, REPLICA, SCRATCH, Node
from redis_benchmarks_spec.suites.auth import Credentials
from redis_benchmarks_spec.suites.topology import Topology

log = logging.getLogger(__name__)

_IO_THREADS_DO_READS = "--io-threads-do-reads"


@dataclass
class DeploymentSpec:
    """What to start: binary, the arguments every node gets, the CPU plan and a directory."""

    topology: Topology
    binary: str
    args: list[str]  # suite configuration + topology arguments + run extras
    plan: CpuPlan
    workdir: Path
    launcher_name: str = "process"
    start_timeout: float = 15.0
    # called with each primary's directory before it starts, returns extra server arguments
    # (the suite's dataset RDB is put in place this way, see runner/dataset.py)
    prepare_primary_dir: Callable[[Path], list[str]] | None = None
    wrapper: list[str] = field(default_factory=list)  # argv prefix of every node (callgrind)
    auth: Credentials | None = None  # what the nodes require as started (suites/auth.py)
    bind: str = "127.0.0.1"  # the address every node listens on (launcher.ServerSpec.bind)
    # the seeds every node draws (runner/seeds.py): an argv prefix per node index, or None
    seeded: Callable[[int], list[str]] | None = None


class Deployment:
    """The nodes of one topology, their wiring, and stopping them by their own ids."""

    def __init__(self, spec: DeploymentSpec, launcher: ServerLauncher) -> None:
        self.spec, self.launcher = spec, launcher
        self.nodes: list[Node] = []
        self.setup_s: float | None = None
        self.full_sync_s: list[float] = []
        self.preloaded_sync_s: list[float] = []  # full syncs of the preloaded dataset
        self.linked = False
        self.scratch: Node | None = None

    @property
    def topology(self) -> Topology:
        return self.spec.topology

    @property
    def primaries(self) -> list[Node]:
        return [n for n in self.nodes if n.role == PRIMARY]

    @property
    def replicas(self) -> list[Node]:
        return [n for n in self.nodes if n.role == REPLICA]

    @property
    def entry(self) -> Node:
        """Where clients connect: the (first) primary."""
        return self.primaries[0]

    @property
    def pids(self) -> list[int]:
        return [pid for n in self.nodes for pid in n.handle.pids]

    def start(self) -> None:
        """Start every node (replicas still unlinked) and form the cluster if there is one.

        Nodes start one after the other from this thread: a child started from a worker
        thread was killed (SIGKILL) when that thread ended, on the machines this was built on.
        """
        from redis_benchmarks_spec.runner import cluster

        started = time.monotonic()
        topo = self.topology
        roles: list[tuple[str, int | None]] = [(PRIMARY, None)] * topo.primaries
        roles += [(REPLICA, p) for p in range(topo.primaries) for _ in range(topo.replicas)]
        for index, (role, primary) in enumerate(roles):
            # appended as soon as it runs, so stop() finds it should a later node fail
            self.nodes.append(self._start_node(index, role, primary))
        if topo.is_cluster:
            cluster.form(self.primaries)
        self.setup_s = time.monotonic() - started

    def _start_node(self, index: int, role: str, primary: int | None) -> Node:
        cpus = self.spec.plan.node(index)
        workdir = self.spec.workdir / f"node-{index}-{role}"
        args = list(self.spec.args)
        if role == PRIMARY and self.spec.prepare_primary_dir is not None:
            workdir.mkdir(parents=True, exist_ok=True)
            args += self.spec.prepare_primary_dir(workdir)
        cluster_port = None
        if self.topology.is_cluster:
            cluster_port = free_port(self.spec.bind)
            args += ["--cluster-enabled", "yes", "--cluster-config-file", "nodes.conf",
                     "--cluster-port", str(cluster_port)]
        if role == REPLICA:
            args += _masterauth(self.spec.auth, args)
        # a node under a profiler's wrapper (valgrind) starts several times slower
        timeout = self.spec.start_timeout * (8 if self.spec.wrapper else 1)
        seeded = self.spec.seeded(index) if self.spec.seeded is not None else []
        handle, notes = self._launch(ServerSpec(self.spec.binary, args, cpus, workdir,
                                                timeout, [*seeded, *self.spec.wrapper],
                                                self.spec.auth, self.spec.bind))
        return Node(index, role, cpus, handle, primary, cluster_port, notes=notes)

    def _launch(self, spec: ServerSpec) -> tuple[ServerHandle, list[str]]:
        """Start one node; a server that predates ``io-threads-do-reads`` (or dropped it)
        refuses the directive, and is started once more without it."""
        try:
            return self.launcher.start(spec), []
        except ServerStartError as exc:
            if _IO_THREADS_DO_READS not in spec.args or \
                    _IO_THREADS_DO_READS.lstrip("-") not in str(exc):
                raise
        spec.args = _without_option(spec.args, _IO_THREADS_DO_READS)
        note = "io-threads-do-reads dropped: this server does not know it"
        log.warning("%s: %s", spec.workdir.name, note)
        return self.launcher.start(spec), [note]

    def start_scratch(self, cpus: list[int]) -> Node:
        """A plain standalone node (suite arguments, no cluster) for preparing a dataset."""
        workdir = self.spec.workdir / "scratch"
        handle, notes = self._launch(ServerSpec(self.spec.binary, list(self.spec.args), cpus,
                                                workdir, self.spec.start_timeout,
                                                auth=self.spec.auth))
        self.scratch = Node(-1, SCRATCH, cpus, handle, notes=notes)
        return self.scratch

    def stop_scratch(self) -> None:
        if self.scratch is not None:
            scratch, self.scratch = self.scratch, None
            self.launcher.stop(scratch.handle)

    def link_replicas(self, timeout_s: float = 600.0) -> list[float]:
        """REPLICAOF each replica to its primary; the full-sync time of each is recorded."""
        from redis_benchmarks_spec.runner import replication

        for replica in self.replicas:
            assert replica.primary is not None
            primary = self.nodes[replica.primary]
            self.full_sync_s.append(replication.link(replica, primary, timeout_s))
        self.linked = True
        return self.full_sync_s

    def resync_replicas(self, timeout_s: float = 600.0) -> list[float]:
        """A timed full sync of the preloaded dataset to each replica
        (:func:`replication.resync`)."""
        from redis_benchmarks_spec.runner import replication

        for replica in self.replicas:
            assert replica.primary is not None
            self.preloaded_sync_s.append(
                replication.resync(replica, self.nodes[replica.primary], timeout_s))
        return self.preloaded_sync_s

    def wait_in_sync(self, timeout_s: float = 120.0) -> None:
        """Every replica has applied everything its primary wrote so far."""
        from redis_benchmarks_spec.runner import replication

        for replica in self.replicas:
            assert replica.primary is not None
            replication.wait_offsets_equal(replica, self.nodes[replica.primary], timeout_s)

    def stop(self) -> list[tuple[str, str]]:
        """Stop every node by its own id, newest first (the scratch node too, if one still
        runs); returns ``(what, error)`` for each node that could not be stopped."""
        errors: list[tuple[str, str]] = []
        nodes = ([self.scratch] if self.scratch else []) + list(reversed(self.nodes))
        self.scratch = None
        for node in nodes:
            try:
                node.close()
                _quiesce(node)
                self.launcher.stop(node.handle)
            except (OSError, RuntimeError, redis.RedisError) as exc:
                errors.append((f"stop {node.name}", f"{type(exc).__name__}: {exc}"))
        return errors

    def record(self) -> DeploymentRecord:
        topo = self.topology
        return DeploymentRecord(
            name=topo.name, type=topo.type, launcher=self.spec.launcher_name,
            primaries=topo.primaries, replicas=topo.replicas,
            io_threads=topo.io_threads, setup_s=self.setup_s,
            full_sync_s=list(self.full_sync_s), preloaded_sync_s=list(self.preloaded_sync_s),
            nodes=[n.record() for n in self.nodes])


def _quiesce(node: Node, timeout_s: float = 30.0) -> None:
    """Let an AOF rewrite finish: Redis ignores SIGTERM while it writes its initial AOF (a
    replica right after its sync), which would cost a stop timeout and a SIGKILL."""
    def idle() -> bool:
        with node.client(timeout=2) as client:
            info = client.info("persistence")
        return not int(info.get("aof_rewrite_in_progress", 0)) and \
            not int(info.get("aof_rewrite_scheduled", 0))

    try:
        wait_for(idle, timeout_s, interval=0.05)
    except redis.RedisError:
        return  # not answering: the launcher stops it by its id all the same


def _masterauth(auth: Credentials | None, args: list[str]) -> list[str]:
    """A replica authenticates to a primary that requires a password (unless the suite set
    ``masterauth`` itself)."""
    if auth is None or "--masterauth" in args:
        return []
    return ["--masterauth", auth.password] + (["--masteruser", auth.user] if auth.user else [])


def _without_option(args: list[str], option: str) -> list[str]:
    out: list[str] = []
    skip = False
    for arg in args:
        if skip:
            skip = False
            continue
        if arg == option:
            skip = True
            continue
        out.append(arg)
    return out
