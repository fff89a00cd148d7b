"""Host noise on an unchanged host: how much the intrinsic-latency figures move between
repeats, and how often the changed-noise rule (analysis/host_noise.py) would flag two
repeats of the same host (a false flag), plus what the measurement costs.

Figures:

1. per repeat: share of time lost, interruptions/s, p50/p99/max of interruptions (the loop
   of telemetry/intrinsic_loop.py) and redis-cli --intrinsic-latency's max;
2. the spread of each statistic over the repeats (min..max, max/min);
3. over every pair of repeats, how many the rule flags (governor and turbo do not change
   here, so only the lost-time part can flag);
4. wall time of one measurement (loop + redis-cli), what an agent adds to its startup.

The load average before and after is printed: on a shared machine the figures include
whatever else ran, which is the point of recording them.

    .venv/bin/python benchmarks/host_noise_bench.py [--repeats 8] [--seconds 2] [--cpu N]
"""

from __future__ import annotations

import argparse
import itertools
import os
import time

from redis_benchmarks_spec.analysis.host_noise import noise_differences
from redis_benchmarks_spec.results.platform import IntrinsicLatency
from redis_benchmarks_spec.telemetry import platform_probe


def _spread(name: str, values: list[float]) -> str:
    low, high = min(values), max(values)
    ratio = "inf" if low == 0 else f"{high / low:.2f}"
    return f"  {name:<22} {low:>10.2f} .. {high:<10.2f} max/min {ratio}"


def _row(i: int, n: IntrinsicLatency, wall: float) -> str:
    return (f"{i:>3} {n.lost_pct:>8.3f} {n.per_second:>9.1f} {n.p50_us or 0:>9.1f} "
            f"{n.p99_us or 0:>9.1f} {n.max_us or 0:>10.1f} {n.redis_cli_max_us or 0:>10.0f} "
            f"{wall:>7.2f}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--repeats", type=int, default=8)
    parser.add_argument("--seconds", type=float, default=2.0)
    parser.add_argument("--cpu", type=int, default=None)
    args = parser.parse_args()
    print(f"load average before: {os.getloadavg()}")
    print("  # lost_pct   intr/s   p50_us    p99_us     max_us  cli_max_us  wall_s")
    records, walls = [], []
    for i in range(args.repeats):
        started = time.monotonic()
        noise = platform_probe.measure_noise(args.seconds, args.cpu)
        walls.append(time.monotonic() - started)
        records.append(platform_probe.record("bench", "rbs platform record", noise))
        print(_row(i, noise, walls[-1]))
    print(f"load average after: {os.getloadavg()}")
    measured = [r.noise for r in records if r.noise is not None]
    print("spread over the repeats:")
    for name in ("lost_pct", "per_second", "p50_us", "p99_us", "max_us", "redis_cli_max_us"):
        values = [float(getattr(n, name) or 0.0) for n in measured]
        print(_spread(name, values))
    pairs = list(itertools.combinations(records, 2))
    flagged = [(a, b) for a, b in pairs if noise_differences(a, b)]
    print(f"rule flags {len(flagged)} of {len(pairs)} pairs of repeats of this unchanged host")
    print(f"one measurement (loop {args.seconds:g} s + redis-cli): wall "
          f"{min(walls):.2f}..{max(walls):.2f} s")


if __name__ == "__main__":
    main()
