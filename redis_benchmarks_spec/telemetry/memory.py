"""One server's memory: ``INFO memory`` and ``MEMORY STATS`` read once the figures have
settled (the figures and how nodes add up are :mod:`results.memory`).

Right after a preload two figures are not yet what the dataset takes: the allocator's
(``allocator_*``) are refreshed by ``serverCron`` only (every 100 ms at ``hz 10``), and the
main dictionary may still be rehashing into its larger table (``serverCron`` finishes it,
1 ms per run), which holds both tables in ``used_memory_overhead``. Read at once, an A/A of
10K hashes gave ``allocator_allocated`` 1.7 MB in one run of five (the figure from before the
preload) and overheads 3 % apart; so the figures are read again every cron period or two
until they stop moving.
"""

from __future__ import annotations

import time
from collections.abc import Callable

import redis

from redis_benchmarks_spec.results import memory

#: figures that must repeat between two reads (relative change) before they are kept
_STEADY = (memory.OVERHEAD, "allocator_allocated", memory.DATASET)
STEADY_TOLERANCE = 0.0005
SETTLE_TIMEOUT_S = 5.0


def read_memory(client: redis.Redis) -> dict[str, float]:
    """The node's memory figures now (:func:`results.memory.node_figures`). A server
    without ``MEMORY STATS`` (Redis < 4) gives INFO's figures only."""
    info = client.info("memory")
    try:
        stats = client.memory_stats()
    except redis.ResponseError:
        stats = {}
    return memory.node_figures(info, stats)


def _steady(before: dict[str, float], now: dict[str, float]) -> bool:
    for name in _STEADY:
        a, b = before.get(name), now.get(name)
        if a is None or b is None:
            continue
        if abs(b - a) > STEADY_TOLERANCE * max(abs(a), 1.0):
            return False
    return True


def node_memory(client: redis.Redis, timeout_s: float = SETTLE_TIMEOUT_S,
                sleep: Callable[[float], None] = time.sleep) -> dict[str, float]:
    """The node's figures once two reads a cron period or two apart agree (module doc);
    after ``timeout_s`` the last read, with ``settled: 0``."""
    hz = float(client.info("server").get("hz", 10) or 10)
    period = min(1.0, 2.5 / hz)
    deadline = time.monotonic() + timeout_s
    previous = read_memory(client)
    while True:
        sleep(period)
        now = read_memory(client)
        if _steady(previous, now):
            return now
        if time.monotonic() >= deadline:
            return {**now, "settled": 0.0}
        previous = now
