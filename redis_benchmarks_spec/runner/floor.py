"""The throughput floor: a run under 1 op/s is taken for a broken benchmark.

A client that stalls (server stuck, a command that never returns in time) reports a handful
of ops; storing that as a measurement would poison the history. Suites that are slow by
design (one SAVE, one DEBUG RELOAD of a large dataset) opt out with
``dbconfig.low-throughput-benchmark`` or ``dbconfig.skip_throughput_floor``; a
``dbconfig.wait_for_bgsave`` suite is exempt (its metric is the save).
"""

from __future__ import annotations

from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.suites.dbconfig import DbConfig

THROUGHPUT_FLOOR_OPS = 1.0


def below_floor(db: DbConfig, tool_result: ToolResult, counted: bool = False) -> str:
    """The reason the run is below the floor, or '' (also '' when the suite opts out, and for
    a ``counted`` run: a profiler's fixed request count under callgrind measures its counts,
    not its rate, and INFO commandstats says whether its commands ran; a memtier SET side of
    a few hundred requests at 1:10 prints 0 ops/sec there, 3 runs of 4 of one test in the
    #11779 lab replay)."""
    ops = tool_result.totals.ops_per_sec
    if counted or db.throughput_floor_waived or ops >= THROUGHPUT_FLOOR_OPS:
        return ""
    return (f"throughput {plain(ops)} ops/sec is below the {THROUGHPUT_FLOOR_OPS:g} ops/sec floor "
            f"(a suite slow by design sets dbconfig.low-throughput-benchmark: 'yes')")
