"""Overhead of per-test telemetry (per-thread CPU, RSS sampling, host context).

Two figures:

1. Throughput with telemetry on vs off, interleaved (on off off on ...), one fresh server
   per run, paired by round: the median paired change with its 95 % interval. On a noisy
   host the interval is wide; the point is that it is centred near zero.
2. The sampler's own CPU cost, measured directly: CPU seconds per sample of the RSS thread
   and of the start/stop thread reads, times the sampling rate, as a share of one core.
   This is the figure that bounds the overhead precisely (the throughput figure cannot
   resolve < 2 % at ~10 % run-to-run CV without hundreds of runs).

    .venv/bin/python benchmarks/telemetry_overhead.py [--rounds 6] [--test-time 3]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import tempfile
import time
from pathlib import Path

from redis_benchmarks_spec.analysis.paired import best_paired_shift
from redis_benchmarks_spec.analysis.stats import log_to_pct
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog
from redis_benchmarks_spec.telemetry.host import HostWindow
from redis_benchmarks_spec.telemetry.threads import read_rss, read_threads
from redis_benchmarks_spec.telemetry.window import WindowOptions

METRIC = "ALL_STATS.Totals.Ops/sec"


def one_run(suite_name: str, telemetry: bool, test_time: int, out: Path) -> float:
    suite = next(s for s in load_catalog(default_suites_dir()).suites if s.name == suite_name)
    config = SessionConfig(tools=ToolPaths(), results_dir=out, test_time=test_time,
                           topology_filter="oss-standalone",
                           window=WindowOptions(telemetry=telemetry))
    (result,) = run_suites(config, [suite])
    if not result.ok:
        raise SystemExit(f"{suite_name}: {result.reason}")
    return result.metrics[METRIC]


def sampler_cost(samples: int = 2000) -> tuple[float, float]:
    """CPU seconds per RSS sample and per start+stop pair of thread/host reads (this pid)."""
    pid = os.getpid()
    start = time.process_time()
    for _ in range(samples):
        read_rss(pid)
    per_rss = (time.process_time() - start) / samples
    start = time.process_time()
    for _ in range(samples // 10):
        host = HostWindow()
        host.start()
        read_threads(pid)
        read_threads(pid)
        host.stop()
    per_window = (time.process_time() - start) / (samples // 10)
    return per_rss, per_window


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--suite", default="redis-benchmark-string-set-100B")
    ap.add_argument("--rounds", type=int, default=6)
    ap.add_argument("--test-time", type=int, default=3)
    ap.add_argument("--rss-interval", type=float, default=WindowOptions.rss_interval_s)
    args = ap.parse_args()
    pairs: list[tuple[float, float]] = []  # (off, on)
    with tempfile.TemporaryDirectory(prefix="rbs-telemetry-bench-") as tmp:
        for rnd in range(args.rounds):
            order = (False, True) if rnd % 2 == 0 else (True, False)
            values = {}
            for telemetry in order:
                values[telemetry] = one_run(args.suite, telemetry, args.test_time,
                                            Path(tmp) / f"r{rnd}-{telemetry}")
            pairs.append((values[False], values[True]))
            print(f"round {rnd + 1}: off {values[False]:,.0f} ops/s  on {values[True]:,.0f} "
                  f"ops/s", flush=True)
    shift = best_paired_shift(pairs)
    print(f"throughput, telemetry on vs off ({args.rounds} interleaved pairs, {args.suite}): "
          f"median off {statistics.median(p[0] for p in pairs):,.0f}, on "
          f"{statistics.median(p[1] for p in pairs):,.0f}; change "
          f"{log_to_pct(shift.estimate):+.2f}% [{log_to_pct(shift.low):+.2f}%, "
          f"{log_to_pct(shift.high):+.2f}%] ({shift.method})")
    per_rss, per_window = sampler_cost()
    share = 100.0 * per_rss / args.rss_interval
    print(f"sampler CPU: {per_rss * 1e6:.1f} us per RSS sample every {args.rss_interval:g} s "
          f"= {share:.4f}% of one core; start+stop reads {per_window * 1e3:.2f} ms per test")
    return 0


if __name__ == "__main__":
    sys.exit(main())
