"""One server's memory: ``INFO memory`` and ``MEMORY STATS`` read once the figures have
settled (the figures and how nodes add up are :mod:`results.memory`).

Right after a preload two figures are not yet what the dataset takes: the allocator's
(``allocator_*``) are refreshed by ``serverCron`` only (every 100 ms at ``hz 10``), and the
main dictionary may still be rehashing into its larger table (``serverCron`` finishes it,
1 ms per run), which holds both tables in ``used_memory_overhead``. Read at once, an A/A of
10K hashes gave ``allocator_allocated`` 1.7 MB in one run of five (the figure from before the
preload) and overheads 3 % apart; so the figures are read until none has moved for one and a
half refresh periods (the allocator's are sampled every 100 ms, or every cron tick below
``hz 10``), polled every few tens of milliseconds: a change ends the wait for it as soon as it
is seen, where reads a fixed 250 ms apart needed two or three gaps (0.5-0.75 s) a snapshot,
two snapshots a run.
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


def quiet_period(hz: float) -> float:
    """How long no figure may move before the figures are kept: one and a half periods of
    ``cronUpdateMemoryStats``'s allocator sampling (``run_with_period(100)``, at least one
    cron tick), so at least one refresh falls inside the window."""
    return 1.5 * max(0.1, 1.0 / max(hz, 0.1))


def node_memory(client: redis.Redis, timeout_s: float = SETTLE_TIMEOUT_S,
                sleep: Callable[[float], None] = time.sleep,
                clock: Callable[[], float] = time.monotonic) -> dict[str, float]:
    """The node's figures once none has moved for :func:`quiet_period` (module doc); after
    ``timeout_s`` the last read, with ``settled: 0``."""
    hz = float(client.info("server").get("hz", 10) or 10)
    quiet = quiet_period(hz)
    poll = quiet / 6
    deadline = clock() + timeout_s
    reference, since = read_memory(client), clock()
    while True:
        sleep(poll)
        now, at = read_memory(client), clock()
        if not _steady(reference, now):
            reference, since = now, at  # it moved: the quiet window starts again here
        elif at - since >= quiet:
            return now
        if at >= deadline:
            return {**now, "settled": 0.0}
