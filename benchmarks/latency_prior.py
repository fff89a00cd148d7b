"""The pair spread of latency figures on this host, measured (issue 39: "latency gets a prior
of its own kind, measured here and recorded").

Runs A/A sessions (the same redis-server on both sides, interleaved repetitions) over a few
of the project's suites, and prints per suite and metric the spread of the pairs' log ratios
(the standard deviation of ln(comparison / baseline) over the pairs, in %), for every latency
metric the runs recorded and for throughput beside them: the figure a latency prior stands for
(``common/metrics.py``: ``prior_sd``). Disturbed pairs are kept, as a calibration keeps them:
an uncalibrated host is measured as it is. Run it alone, under the heavy lock:

    flock /tmp/rbs-heavy.lock .venv/bin/python benchmarks/latency_prior.py --repetitions 10
"""

from __future__ import annotations

import argparse
import math
import shutil
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from redis_benchmarks_spec.analysis.session_runs import metrics_present, pair_runs
from redis_benchmarks_spec.common.metrics import LATENCY, THROUGHPUT, metric
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import SESSION_CALIBRATION, RunContext
from redis_benchmarks_spec.runner.ab import ABConfig, Side, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog

SUITES = [
    "redis-benchmark-1Kkeys-string-get-100B", "redis-benchmark-string-set-100B",
    "redis-benchmark-100Kkeys-hash-hget-100B", "redis-benchmark-list-lpush-100B",
    "memtier_benchmark-1Kkeys-string-setget-1-10-100B",
]


def pair_spread_pct(pairs: list[tuple[float, float]]) -> float | None:
    """The standard deviation of the pairs' log ratios, in % (None under 3 pairs)."""
    ratios = [math.log(b / a) for a, b in pairs if a > 0 and b > 0]
    return 100 * statistics.stdev(ratios) if len(ratios) >= 3 else None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--repetitions", type=int, default=10)
    parser.add_argument("--test-time", type=int, default=3)
    args = parser.parse_args()
    suites = [s for s in load_catalog(default_suites_dir()).suites if s.name in SUITES]
    server = shutil.which("redis-server") or "redis-server"
    start = time.monotonic()
    with tempfile.TemporaryDirectory(prefix="rbs-latency-prior-") as tmp:
        config = ABConfig(
            session=SessionConfig(tools=ToolPaths(), results_dir=Path(tmp),
                                  test_time=args.test_time, topology_filter="oss-standalone",
                                  context=RunContext(session_kind=SESSION_CALIBRATION)),
            baseline=Side("baseline", server), comparison=Side("comparison", server),
            repetitions=args.repetitions)
        runs = run_ab(config, suites)
    kinds = {m: metric(m).kind for m in metrics_present(runs)}
    shown = sorted(m for m, kind in kinds.items() if kind in (LATENCY, THROUGHPUT))
    print(f"A/A, {args.repetitions} interleaved pairs a suite, {args.test_time} s runs, "
          f"{time.monotonic() - start:.0f} s; pair spread (sd of ln B/A) in %:")
    by_kind: dict[str, list[float]] = {}
    for name in shown:
        for test, found in sorted(pair_runs(runs, name, keep_disturbed=True).items()):
            spread = pair_spread_pct(found.pairs)
            if spread is None:
                continue
            by_kind.setdefault(kinds[name], []).append(spread)
            print(f"  {kinds[name]:<11} {name:<46} {spread:6.1f}  {test} "
                  f"({len(found.pairs)} pairs)")
    for kind, spreads in sorted(by_kind.items()):
        print(f"{kind}: median {statistics.median(spreads):.1f} %, least {min(spreads):.1f} %, "
              f"largest {max(spreads):.1f} % over {len(spreads)} suite-metrics")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
