"""The memory a deployment holds: one definition of the memory figures, their metric names,
and how the figures of several nodes add up.

Two moments are kept: **after the preload** (the dataset as the build stores it: the same
build and dataset give the same bytes, so an A/B judges it like instruction counts) and
**after the run** (the dataset plus what the load allocated: buffers, new keys, fragmentation
the workload left). The first moment's figures are the run's metrics under INFO's own names
(``used_memory``, ``used_memory_dataset``, ...); the second's carry :data:`AFTER_RUN_SUFFIX`.

Figures come from ``INFO memory`` (``used_memory``, ``used_memory_dataset``,
``used_memory_overhead``, ``allocator_frag_ratio``, ``allocator_resident``,
``allocator_allocated``, ``allocator_active``) and ``MEMORY STATS`` (``keys.count``,
``dataset.bytes``); ``bytes_per_key`` is dataset bytes over keys. A deployment's totals add
up its primaries (a replica holds a copy of its primary's dataset); the fragmentation ratio
of several primaries is their summed active bytes over their summed allocated bytes, as
jemalloc computes it for one.

``used_memory`` and ``used_memory_overhead`` are kept without ``mem_clients_normal`` (INFO's
memory of normal clients' buffers, kept as ``clients_normal``): the connections there are the
runner's own (the one that loaded the dataset, the one reading these figures) and their query
buffers are shrunk by the server's cron only after two idle seconds, so the same build and
dataset read 1,433.5 K or 1,456.3 K (22 KB apart) depending on when INFO came. A build's
memory is what it keeps for the data, not for our connections.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from redis_benchmarks_spec.common.metrics import (  # the names are declared once, there
    AFTER_RUN_SUFFIX,
    BYTES_PER_KEY,
    DATASET,
    FRAG_RATIO,
    MEMORY_METRICS,
    OVERHEAD,
    RESIDENT,
    USED_MEMORY,
    is_memory,
)
from redis_benchmarks_spec.common.metrics import metric as _metric

#: re-exported: this module's readers find the memory names here
__all__ = ["AFTER_RUN_SUFFIX", "BYTES_PER_KEY", "DATASET", "FRAG_RATIO", "MEMORY_METRICS",
           "OVERHEAD", "RESIDENT", "USED_MEMORY", "MemorySnapshot", "is_dataset_memory",
           "is_memory_metric", "node_figures", "total"]

KEYS = "keys"
CLIENTS_NORMAL = "mem_clients_normal"  # INFO memory's field
CLIENTS = "clients_normal"  # kept beside the figures that leave it out
#: INFO memory fields kept per node (besides the metrics): what the ratio is made of
_RAW_FIELDS = (USED_MEMORY, DATASET, OVERHEAD, RESIDENT, "allocator_allocated",
               "allocator_active", "used_memory_rss")
_SUMMED = (*_RAW_FIELDS, KEYS)
AFTER_PRELOAD = "after_preload"
AFTER_RUN = "after_run"


def is_memory_metric(metric: str) -> bool:
    """A memory metric of either moment (``used_memory``, ``bytes_per_key.after_run``)."""
    return is_memory(metric)


def is_dataset_memory(metric: str) -> bool:
    """A memory metric taken after the preload: fixed by the build and the dataset."""
    return metric in MEMORY_METRICS and _metric(metric).deterministic


def node_figures(info: Mapping[str, Any], stats: Mapping[str, Any]) -> dict[str, float]:
    """One node's figures from its ``INFO memory`` and ``MEMORY STATS`` (parsed by
    redis-py); fields a server does not report are left out."""
    out = {name: float(info[name]) for name in (*_RAW_FIELDS, FRAG_RATIO) if name in info}
    clients = info.get(CLIENTS_NORMAL)
    if isinstance(clients, (int, float)) and not isinstance(clients, bool) and clients >= 0:
        out[CLIENTS] = float(clients)
        for name in (USED_MEMORY, OVERHEAD):
            if name in out:
                out[name] = max(0.0, out[name] - float(clients))
    if "keys.count" in stats:
        out[KEYS] = float(stats["keys.count"])
    if "dataset.bytes" in stats:  # the same number as INFO's, read at the same moment
        out[DATASET] = float(stats["dataset.bytes"])
    return _with_per_key(out)


def _with_per_key(figures: dict[str, float]) -> dict[str, float]:
    if figures.get(KEYS) and DATASET in figures:
        figures[BYTES_PER_KEY] = figures[DATASET] / figures[KEYS]
    return figures


def total(nodes: list[dict[str, float]]) -> dict[str, float]:
    """The primaries' figures added up (module doc); one node gives its own figures."""
    if len(nodes) == 1:
        return dict(nodes[0])
    out = {name: sum(n[name] for n in nodes) for name in _SUMMED if all(name in n for n in nodes)}
    if out.get("allocator_allocated") and "allocator_active" in out:
        out[FRAG_RATIO] = out["allocator_active"] / out["allocator_allocated"]
    return _with_per_key(out)


@dataclass
class MemorySnapshot:
    """The memory at one moment: every node's figures (deployment order, with its role) and
    the primaries' totals."""

    totals: dict[str, float] = field(default_factory=dict)
    nodes: list[dict[str, Any]] = field(default_factory=list)

    def metrics(self, suffix: str = "") -> dict[str, float]:
        """The totals under their metric names (``suffix`` for the after-run moment)."""
        return {f"{name}{suffix}": self.totals[name] for name in MEMORY_METRICS
                if name in self.totals}

    def to_dict(self) -> dict[str, Any]:
        return {"totals": self.totals, "nodes": self.nodes}
