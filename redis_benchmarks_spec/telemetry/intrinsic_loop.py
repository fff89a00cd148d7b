"""The intrinsic-latency loop, run as its own process (``python -m ...intrinsic_loop``).

The same idea as ``redis-cli --intrinsic-latency``: read the monotonic clock in a tight loop
on one CPU; a gap between two reads is time the kernel (interrupts, other tasks, the
hypervisor) did not give us. Gaps of ``--threshold-us`` or more are interruptions; their
distribution, rate and total share of the time describe the host's noise. It runs in a
child pinned to one CPU so that the parent's threads (the agent's heartbeat) and its GIL
never show up as noise. Prints one JSON object on stdout.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

import numpy as np


def measure(seconds: float, threshold_ns: int) -> tuple[int, list[int]]:
    """(iterations, gaps of ``threshold_ns`` or more) over ``seconds`` of a tight loop."""
    clock = time.perf_counter_ns
    gaps: list[int] = []
    iterations = 0
    last = clock()
    end = last + int(seconds * 1e9)
    while last < end:
        now = clock()
        gap = now - last
        last = now
        iterations += 1
        if gap >= threshold_ns:
            gaps.append(gap)
    return iterations, gaps


def summary(seconds: float, threshold_ns: int, iterations: int, gaps: list[int]
            ) -> dict[str, float | int | None]:
    """The statistics :class:`~redis_benchmarks_spec.results.platform.IntrinsicLatency`
    holds (without the CPU and redis-cli fields)."""
    us = np.asarray(gaps, dtype=float) / 1000.0

    def pct(q: float) -> float | None:
        return round(float(np.percentile(us, q)), 2) if len(us) else None

    return {"seconds": seconds, "threshold_us": threshold_ns / 1000.0,
            "iterations": iterations, "interruptions": len(gaps),
            "per_second": round(len(gaps) / seconds, 2),
            "lost_pct": round(min(100.0, float(us.sum()) / (seconds * 1e6) * 100.0), 4),
            "p50_us": pct(50), "p90_us": pct(90), "p99_us": pct(99),
            "max_us": round(float(us.max()), 2) if len(us) else None}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--seconds", type=float, required=True)
    parser.add_argument("--threshold-us", type=float, required=True)
    parser.add_argument("--cpu", type=int)
    args = parser.parse_args(argv)
    if args.cpu is not None:
        os.sched_setaffinity(0, {args.cpu})
    threshold_ns = int(args.threshold_us * 1000)
    iterations, gaps = measure(args.seconds, threshold_ns)
    json.dump(summary(args.seconds, threshold_ns, iterations, gaps), sys.stdout)
    return 0


if __name__ == "__main__":
    sys.exit(main())
