"""OSS cluster wiring: slots split evenly, nodes met, ``cluster_state:ok`` everywhere, and a
cluster-aware copy of a dataset prepared on a scratch standalone node.

Forming a cluster by hand (rather than ``redis-cli --cluster create``) keeps it to a few round
trips per node: each primary gets a distinct config epoch and its contiguous slot range
(CLUSTER ADDSLOTSRANGE, Redis 7; ADDSLOTS before), then every pair of nodes MEETs directly so
no node waits for gossip to learn the others.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING

import redis
from redis.crc import key_slot

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import wait_for

if TYPE_CHECKING:
    from redis_benchmarks_spec.runner.node import Node

log = logging.getLogger(__name__)

SLOTS = 16384
FORMING_NODE_TIMEOUT_MS = 300
COPY_BATCH = 1000


class ClusterError(TestRunError):
    """The cluster could not be formed, or the dataset could not be copied into it."""


def slot_ranges(primaries: int) -> list[tuple[int, int]]:
    """Contiguous, even slot ranges covering all 16384 slots."""
    return [(i * SLOTS // primaries, (i + 1) * SLOTS // primaries - 1) for i in range(primaries)]


def _add_slots(client: redis.Redis, first: int, last: int) -> None:
    try:
        client.execute_command("CLUSTER", "ADDSLOTSRANGE", first, last)
    except redis.ResponseError as exc:
        if "unknown subcommand" not in str(exc).lower():
            raise
        client.execute_command("CLUSTER", "ADDSLOTS", *range(first, last + 1))


def form(primaries: Sequence[Node], timeout_s: float = 60.0) -> None:
    """Assign slots, meet every pair and wait for ``cluster_state:ok`` on every node.

    A node learns another's slots from its pings, not from the handshake, and pings a
    node it has heard from only after half the node timeout (7.5 s by default): a short
    timeout while forming lets 9 primaries agree in ~2 s instead of ~13 s. The configured
    timeout (default or the suite's) is put back before the test uses the cluster.
    """
    clients = [n.client(timeout=10) for n in primaries]
    try:
        configured = [str(c.config_get("cluster-node-timeout")["cluster-node-timeout"])
                      for c in clients]
        for i, (node, client, (first, last)) in enumerate(
                zip(primaries, clients, slot_ranges(len(primaries)))):
            client.config_set("cluster-node-timeout", FORMING_NODE_TIMEOUT_MS)
            # distinct epochs up front: no epoch-collision round before the cluster settles
            client.execute_command("CLUSTER", "SET-CONFIG-EPOCH", i + 1)
            _add_slots(client, first, last)
            node.slots = (first, last)
        for i, client in enumerate(clients):
            for other in primaries[i + 1:]:
                client.execute_command("CLUSTER", "MEET", other.host, other.port,
                                       other.cluster_port or other.port + 10000)
        if not wait_for(lambda: all(_ready(c, len(primaries)) for c in clients), timeout_s):
            states = {n.name: _cluster_info(c).get("cluster_state", "?")
                      for n, c in zip(primaries, clients)}
            raise ClusterError(f"cluster not ok after {timeout_s:.0f}s: {states}")
        for client, value in zip(clients, configured):
            client.config_set("cluster-node-timeout", value)
    except redis.RedisError as exc:
        raise ClusterError(f"forming the cluster failed: {exc}") from exc
    finally:
        for client in clients:
            client.close()


def _cluster_info(client: redis.Redis) -> dict[str, str]:
    text = client.execute_command("CLUSTER", "INFO")
    if isinstance(text, bytes):
        text = text.decode()
    if isinstance(text, dict):  # some redis-py versions parse it already
        return {str(k): str(v) for k, v in text.items()}
    return dict(line.split(":", 1) for line in str(text).splitlines() if ":" in line)


def _ready(client: redis.Redis, nodes: int) -> bool:
    info = _cluster_info(client)
    return info.get("cluster_state") == "ok" and int(info.get("cluster_known_nodes", 0)) >= nodes


def owner(slot: int, primaries: Sequence[Node]) -> Node:
    for node in primaries:
        if node.slots and node.slots[0] <= slot <= node.slots[1]:
            return node
    raise ClusterError(f"no primary owns slot {slot}")


def _batches(source: redis.Redis) -> Iterator[list[bytes]]:
    batch: list[bytes] = []
    for key in source.scan_iter(count=COPY_BATCH):
        batch.append(key)
        if len(batch) >= COPY_BATCH:
            yield batch
            batch = []
    if batch:
        yield batch


def copy_keyspace(source: redis.Redis, primaries: Sequence[Node]) -> int:
    """DUMP every key of ``source`` (db 0) and RESTORE it on the primary owning its slot.

    ``source`` must not decode responses (DUMP payloads are binary). Keys are read in SCAN
    batches, one pipelined round trip per batch to read and one per owning node to write, so
    the copy of 100K keys takes a fraction of a second. Returns the number of keys copied.
    """
    targets = {n.index: n.client(timeout=60, decode=False) for n in primaries}
    copied = 0
    try:
        for keys in _batches(source):
            pipe = source.pipeline(transaction=False)
            for key in keys:
                pipe.pttl(key)
                pipe.dump(key)
            replies = pipe.execute()
            writes: dict[int, redis.client.Pipeline] = {}
            for key, ttl, payload in zip(keys, replies[0::2], replies[1::2]):
                if payload is None:
                    continue  # expired or deleted since the scan
                node = owner(key_slot(key), primaries)
                pipe_ = writes.setdefault(node.index, targets[node.index].pipeline(
                    transaction=False))
                pipe_.restore(key, max(int(ttl), 0), payload, replace=True)
                copied += 1
            for pipe_ in writes.values():
                pipe_.execute()
    except redis.RedisError as exc:
        raise ClusterError(f"copying the dataset into the cluster failed: {exc}") from exc
    finally:
        for client in targets.values():
            client.close()
    return copied


def _keyless(scratch: redis.Redis, argv: list[str]) -> bool:
    """True when ``argv`` names no key (COMMAND GETKEYS says so), e.g. CONFIG SET."""
    try:
        return not scratch.command_getkeys(*argv)
    except redis.ResponseError:
        return True  # "The command has no key arguments" (or unknown to GETKEYS)


def load_from_scratch(scratch: Node, primaries: Sequence[Node],
                      init_commands: list[list[str]]) -> int:
    """Copy the dataset prepared on ``scratch`` into the cluster; keyless init commands
    (CONFIG SET ...) run on every primary too, keyed ones arrived with the copied keys."""
    with scratch.client(timeout=60, decode=False) as source:
        other_dbs = [k for k in source.info("keyspace") if k not in ("db0", b"db0")]
        if other_dbs:
            raise ClusterError(f"the preload wrote to {', '.join(map(str, other_dbs))}; "
                               f"a cluster has database 0 only")
        expected = int(source.dbsize())
        copied = copy_keyspace(source, primaries)
        keyless = [argv for argv in init_commands if _keyless(source, argv)]
    if copied != expected:
        raise ClusterError(f"copied {copied} of the {expected} preloaded keys into the cluster")
    for node in primaries:
        with node.client() as client:
            for argv in keyless:
                client.execute_command(*argv)
    return copied


def keyspace_sum(primaries: Sequence[Node]) -> int:
    """Keys over all primaries (each holds only its own slots)."""
    total = 0
    for node in primaries:
        with node.client() as client:
            total += int(client.dbsize())
    return total
