"""The default of every ``--noise-floor`` flag, in words read from the metric catalogue
(``common.metrics``), so a help text cannot say a floor the code does not use."""

from __future__ import annotations

from redis_benchmarks_spec.common import metrics

FLOOR_HELP = (f"the metric's floor in the catalogue: {metrics.TIMED_FLOOR_PCT:g} for "
              f"throughput and latency, {metrics.SERVER_CPU_FLOOR_PCT:g} for server CPU per "
              f"op, {metrics.COUNT_FLOOR_PCT:g} for instruction counts, "
              f"{metrics.MEMORY_FLOOR_PCT:g} for memory after the preload")
