"""Calibration of the interleaved A/B statistics on this machine (issue 5).

(a) A/A: the same redis-server on both sides, ``--repetitions`` interleaved runs over the A/A
    suites. Any REGRESSION or IMPROVEMENT is a false positive (target: 0).
(b) A/B: the comparison server runs with ``appendonly yes`` + ``appendfsync always`` (every
    write is fsync'ed before it is acknowledged): write suites must be flagged as
    REGRESSION, read-only suites must not.

Usage: .venv/bin/python benchmarks/calibration.py [--repetitions 10] [--test-time 2]
       [--part aa|ab|both]
"""

from __future__ import annotations

import argparse
import shutil
import tempfile
import time
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import SESSION_CALIBRATION, RunContext
from redis_benchmarks_spec.runner.ab import ABConfig, Side, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog

METRIC = "ALL_STATS.Totals.Ops/sec"
AA_SUITES = [
    "redis-benchmark-1Kkeys-string-get-100B", "redis-benchmark-string-set-100B",
    "redis-benchmark-100Kkeys-hash-hget-100B", "redis-benchmark-list-lpush-100B",
    "redis-benchmark-1Kkeys-set-sismember", "redis-benchmark-100Kkeys-zset-zrangebyscore",
    "redis-benchmark-ping-inline", "redis-benchmark-string-incr",
]
WRITE_SUITES = ["redis-benchmark-string-set-100B", "redis-benchmark-list-lpush-100B",
                "redis-benchmark-string-incr"]
READ_SUITES = ["redis-benchmark-1Kkeys-string-get-100B", "redis-benchmark-100Kkeys-hash-hget-100B",
               "redis-benchmark-ping-inline"]
SLOW_WRITES = ["--appendonly", "yes", "--appendfsync", "always"]


def run(names: list[str], comparison_args: list[str], args: argparse.Namespace,
        root: Path) -> ComparisonReport:
    catalog = load_catalog(default_suites_dir())
    suites = [s for s in catalog.suites if s.name in names]
    server = shutil.which("redis-server") or "redis-server"
    config = ABConfig(
        session=SessionConfig(tools=ToolPaths(), results_dir=root, test_time=args.test_time,
                              # labelled so a push of these documents refuses them
                              context=RunContext(session_kind=SESSION_CALIBRATION)),
        baseline=Side("baseline", server), comparison=Side("comparison", server,
                                                           comparison_args),
        repetitions=args.repetitions)
    runs = run_ab(config, suites)
    failed = [f"{r.result.test_name}: {r.result.reason}" for r in runs if not r.result.ok]
    return judge(runs, Judging(CompareOptions(metric=METRIC), paired=True), failed)


def show(report: ComparisonReport, title: str) -> None:
    print(f"\n== {title}")
    print(f"verdicts: {report.summary}")
    for row in report.rows:
        ci = f"[{row.ci_low_pct:+.1f}, {row.ci_high_pct:+.1f}] %" \
            if row.ci_low_pct is not None and row.ci_high_pct is not None else "n/a"
        print(f"  {row.test:<48} {row.verdict:<12} change {row.change_pct or 0:+6.1f} %  "
              f"95% CI {ci}  p_adj {row.p_adjusted if row.p_adjusted is not None else 'n/a'}"
              f"  n {row.n_baseline}/{row.n_comparison}")
    for problem in report.problems:
        print(f"  problem: {problem}")


def main() -> None:
    parser = argparse.ArgumentParser(description="A/A and A/B calibration")
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--test-time", type=int, default=2)
    parser.add_argument("--part", choices=["aa", "ab", "both"], default="both")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        if args.part in ("aa", "both"):
            start = time.monotonic()
            aa = run(AA_SUITES, [], args, Path(tmp) / "aa")
            show(aa, f"A/A: same server both sides, {args.repetitions} repetitions "
                     f"({time.monotonic() - start:.0f} s)")
            false = aa.summary.get("REGRESSION", 0) + aa.summary.get("IMPROVEMENT", 0)
            print(f"false positives (REGRESSION + IMPROVEMENT): {false} (target 0)")
        if args.part in ("ab", "both"):
            start = time.monotonic()
            ab = run(WRITE_SUITES + READ_SUITES, SLOW_WRITES, args, Path(tmp) / "ab")
            show(ab, f"A/B: comparison with {' '.join(SLOW_WRITES)} "
                     f"({time.monotonic() - start:.0f} s)")
            flagged = {r.test for r in ab.rows if r.verdict == "REGRESSION"}
            print(f"write suites flagged: {sorted(flagged & set(WRITE_SUITES))}")
            print(f"read-only suites flagged (should be none): "
                  f"{sorted(flagged & set(READ_SUITES))}")


if __name__ == "__main__":
    main()
