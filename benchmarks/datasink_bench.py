"""Datasink ingest and compare-query cost (issue 4).

Populates an embedded datasink (redis-stack-server in a temporary directory, free port,
stopped by its own pid at the end) with TESTS x METRICS x POINTS for a baseline branch and
as many for a comparison branch, each run also filed under its commit hash and stored as a
full result document, exactly as ``rbs run`` pushes. Prints:

- ingest: datapoints/s through ``push_results`` (one pipelined round trip per test run);
- round trips per test push, counted twice: by the writer and at the socket (must be 1);
- query latency of a compare-shaped query: one metric, all tests, one side (one TS.MRANGE),
  and the whole comparison (every metric, both sides).

Usage: .venv/bin/python benchmarks/datasink_bench.py [--tests 500] [--metrics 20] [--points 30]
"""

from __future__ import annotations

import argparse
import statistics
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

import redis
from redis.utils import HIREDIS_AVAILABLE

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink import keys, reader
from redis_benchmarks_spec.datasink.embedded import DatasinkError, EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import PushReport, push_results
from redis_benchmarks_spec.loadgen.result import CommandResult, LatencySummary, ToolResult
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult

PLATFORM = "icelake-2s"
T0 = 1_700_000_000_000


class CountingConnection(redis.Connection):
    """Counts socket writes: one per round trip."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


def metric_names(count: int) -> list[str]:
    return [f"ALL_STATS.Totals.Percentile_Latencies.p{i:02d}.00" for i in range(count - 1)] + [
        "ALL_STATS.Totals.Ops/sec"]


def make_run(test: int, run: int, branch: str, metrics: list[str]) -> RunResult:
    """One ok run of test ``test`` on ``branch``, commit ``run``."""
    name = f"memtier_benchmark-bench-{test:04d}"
    start = T0 + run * 3_600_000
    git = GitInfo(branch=branch, hash=f"{branch[:4]}{run:036d}")
    latency = LatencySummary(count=1000, mean_ms=0.5, percentiles_ms={"p50.00": 0.4})
    tool = ToolResult("memtier_benchmark", CommandResult(1e5, latency), histogram="HISTFAAA" * 40)
    return RunResult(
        test_name=name, run_id=f"{name}:{branch}:{run}", status="ok", start_ms=start,
        context=RunContext(triggering_env="ci", platform=PLATFORM, git=git), result=tool,
        tested_groups=["string"], tested_commands=["get"],
        metrics={m: 1000.0 + test + run + i for i, m in enumerate(metrics)})


def populate(client: redis.Redis, args: argparse.Namespace) -> PushReport:
    """Push every run of both branches; returns the combined report."""
    metrics = metric_names(args.metrics)
    total = PushReport()
    known: set[str] = set()
    for branch in ("unstable", "feature"):
        for run in range(args.points):  # run by run, as an agent pushes them
            runs = [make_run(test, run, branch, metrics) for test in range(args.tests)]
            total.merge(push_results(client, runs, known_series=known))
    return total


def timed(fn: Any, repeat: int) -> list[float]:
    samples = []
    for _ in range(repeat):
        started = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - started) * 1000)
    return samples


def query_latency(client: redis.Redis, args: argparse.Namespace) -> None:
    metrics = metric_names(args.metrics)

    def one_side(metric: str, branch: str) -> dict[str, list[reader.Point]]:
        selector = reader.SeriesSelector(metric=metric, side=keys.Side("branch", branch),
                                         platform=PLATFORM, last_n=args.points)
        return reader.series_for_tests(client, selector)

    got = one_side(metrics[-1], "unstable")
    assert len(got) == args.tests and all(len(p) == args.points for p in got.values()), \
        "query returned the wrong shape"
    single = timed(lambda: one_side(metrics[-1], "unstable"), args.repeat)
    full = timed(lambda: [one_side(m, b) for m in metrics for b in ("unstable", "feature")],
                 max(3, args.repeat // 5))
    parser = "hiredis" if HIREDIS_AVAILABLE else "pure-Python (pip install hiredis: ~4x faster)"
    print(f"reply parser: {parser}")
    print(f"query, 1 metric x {args.tests} tests x {args.points} points, one side "
          f"(1 TS.MREVRANGE): median {statistics.median(single):.1f} ms, "
          f"max {max(single):.1f} ms")
    print(f"query, full compare ({args.metrics} metrics x 2 sides = {2 * args.metrics} "
          f"MREVRANGE, {2 * args.metrics * args.tests * args.points} points): "
          f"median {statistics.median(full):.0f} ms")


def round_trips(sink: EmbeddedDatasink, args: argparse.Namespace) -> None:
    port = int(sink.url.rsplit(":", 1)[1])
    pool = redis.ConnectionPool(connection_class=CountingConnection, host="127.0.0.1",
                                port=port)
    client = redis.Redis(connection_pool=pool)
    client.ping()
    CountingConnection.sends = 0
    runs = [make_run(t, args.points + 1, "unstable", metric_names(args.metrics))
            for t in range(10)]
    report = push_results(client, runs)
    print(f"round trips per test push: {report.round_trips / len(runs):.0f} (writer), "
          f"{CountingConnection.sends / len(runs):.0f} (socket writes)")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--tests", type=int, default=500)
    parser.add_argument("--metrics", type=int, default=20)
    parser.add_argument("--points", type=int, default=30)
    parser.add_argument("--repeat", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-datasink-bench-") as tmp:
        sink = EmbeddedDatasink(Path(tmp), port=free_port())
        try:
            sink.up()
        except DatasinkError as exc:
            sys.exit(f"{exc}\n(run scripts/setup-libssl.sh first)")
        try:
            client = sink.client(timeout=60)
            report = populate(client, args)
            print(f"ingest: {report.datapoints} datapoints from {len(report.pushed)} test runs "
                  f"in {report.elapsed_s:.1f} s = {report.datapoints / report.elapsed_s:,.0f} "
                  f"datapoints/s ({len(report.pushed) / report.elapsed_s:,.0f} test pushes/s)")
            round_trips(sink, args)
            print(f"series: {reader.count_series(client)}")
            query_latency(client, args)
        finally:
            sink.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
