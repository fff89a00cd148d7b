"""How many operations a callgrind window needs for a per-op instruction count stable to
0.1 %: the lab sizes its instruction runs by this (``--profile-requests``), not by the
suite's request count (a valgrind run of a suite's 2,000,000 requests takes minutes).

For each request count, ``rbs run`` runs the suite ``--repetitions`` times with
``--profilers instructions`` against one redis-server binary (a build with symbols, so the
command path is counted); the script prints per count the instructions per op of each run,
their spread (max-min as % of the median) and the seconds per run, and the smallest count
whose spread is within 0.1 %. Run it under ``flock /tmp/rbs-heavy.lock`` on a shared host.

    .venv/bin/python benchmarks/instruction_stability.py --redis-server BIN \\
        --test redis-benchmark-1Kkeys-geo-geodist --counts 500,2000,8000 --repetitions 3
"""

from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
RBS = ROOT / ".venv" / "bin" / "rbs"
TARGET_PCT = 0.1


def per_op(results: Path) -> list[float]:
    """instructions_per_op of every result document under ``results``."""
    out = []
    for path in sorted(results.rglob("result.json")):
        metrics = json.loads(path.read_text()).get("metrics", {})
        if "instructions_per_op" in metrics:
            out.append(float(metrics["instructions_per_op"]))
    return out


def measure(args: argparse.Namespace, count: int, folder: Path) -> tuple[list[float], float]:
    start = time.monotonic()
    done = subprocess.run(
        [str(RBS), "run", "--test", args.test, "--redis-server", args.redis_server,
         "--profilers", "instructions", "--profile-requests", str(count),
         "--repetitions", str(args.repetitions), "--results-dir", str(folder),
         "--no-datasink", "--format", "json"],
        capture_output=True, text=True, timeout=3600, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"rbs run exited {done.returncode}: {done.stderr.strip()[-500:]}")
    return per_op(folder), (time.monotonic() - start) / args.repetitions


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--redis-server", required=True)
    p.add_argument("--test", default="redis-benchmark-1Kkeys-geo-geodist")
    p.add_argument("--counts", default="500,2000,8000")
    p.add_argument("--repetitions", type=int, default=3)
    args = p.parse_args()
    chosen = None
    with tempfile.TemporaryDirectory(prefix="rbs-stability-") as tmp:
        for count in [int(c) for c in args.counts.split(",")]:
            values, seconds = measure(args, count, Path(tmp) / str(count))
            if len(values) < 2:
                print(f"{count:>7} requests: fewer than 2 runs measured ({values})")
                continue
            median = statistics.median(values)
            spread = 100 * (max(values) - min(values)) / median
            print(f"{count:>7} requests: {', '.join(f'{v:,.1f}' for v in values)} "
                  f"instructions/op; spread {spread:.3f} % of the median; "
                  f"{seconds:.1f} s per run", flush=True)
            if chosen is None and spread <= TARGET_PCT:
                chosen = count
    print(f"smallest count stable to {TARGET_PCT} %: {chosen or 'none of those tried'}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
