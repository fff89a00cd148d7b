"""Which A/B design shrinks a throughput interval most for the same machine time, on this host?

One A/A session per run length (the same redis-server on both sides, interleaved pairs),
with the pair count chosen so every session measures about the same seconds of load:
``--budget`` seconds per side, split into runs of 1, 2, 4 ... seconds. From each session:

* **one run per side per pair**: the SD of the per-pair log ratios, and the 95 % t half-width
  the session's pairs give (what a verdict would carry);
* **k short runs per side per pair, median**: consecutive pairs of the short-run sessions
  taken k at a time, each side's median (A B B A A B ... inside a block, so order effects
  cancel);
* **order**: the mean log ratio of A-first pairs minus B-first pairs (a second-run effect);
* the wall time per pair, server start, preload and warm-up included (the real cost).

The half-widths are comparable across designs because the measured seconds are equal; the
wall times say what each design costs. Run it alone (nothing else on the machine): a
neighbour's load is what it measures otherwise (``--allow-busy`` to run anyway).

Usage: .venv/bin/python benchmarks/pair_design.py [--test SUITE] [--budget 24]
       [--lengths 1,2,4] [--server /usr/bin/redis-server] [--placement]
"""

from __future__ import annotations

import argparse
import json
import math
import os
import shutil
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
from scipy import stats as sps

ROOT = Path(__file__).resolve().parent.parent
RBS = str(ROOT / ".venv" / "bin" / "rbs")
METRIC = "ALL_STATS.Totals.Ops/sec"


def session(server: str, test: str, length: int, pairs: int, out: Path,
            as_given: bool = False) -> tuple[list, float]:
    """Run one A/A session; (pairs in run order as (first side, b, c), wall seconds).
    ``as_given``: CPUs handed out in numeric order (the server on CPU 0, as before)."""
    argv = [RBS, "run", "--baseline-server", server, "--comparison-server", server,
            "--test", test, "--topology", "oss-standalone", "--test-time", str(length),
            "--repetitions", str(pairs), "--max-repetitions", str(pairs), "--no-datasink",
            "--no-noise-prior", "--results-dir", str(out), "--format", "json"]
    env = dict(os.environ, RBS_CPU_PLACEMENT="as-given") if as_given else None
    started = time.monotonic()
    subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=True, env=env)
    wall = time.monotonic() - started
    values: dict[int, dict[str, float]] = {}
    for path in out.rglob("result.json"):
        doc = json.loads(path.read_text())
        ctx = doc["context"]
        if doc["status"] == "ok" and METRIC in doc["metrics"]:
            values.setdefault(ctx["repetition"], {})[ctx["ab_side"]] = doc["metrics"][METRIC]
    found = [(rep % 2 == 0, v["baseline"], v["comparison"])
             for rep, v in sorted(values.items()) if len(v) == 2]
    return found, wall


def half_width(ratios: np.ndarray) -> float:
    n = ratios.size
    return float(sps.t.ppf(0.975, n - 1) * ratios.std(ddof=1) / math.sqrt(n)) if n > 1 else math.nan


def blocks(pairs: list, k: int) -> np.ndarray:
    """k consecutive pairs as one: each side's median, the log ratio of the medians."""
    out = []
    for i in range(0, len(pairs) - k + 1, k):
        chunk = pairs[i:i + k]
        out.append(math.log(np.median([c for _, _, c in chunk]) /
                            np.median([b for _, b, _ in chunk])))
    return np.asarray(out)


def report(length: int, pairs: list, wall: float) -> None:
    ratios = np.asarray([math.log(c / b) for _, b, c in pairs])
    first = np.asarray([a for a, _, _ in pairs])
    order = (ratios[first].mean() - ratios[~first].mean()) if first.any() and (~first).any() \
        else math.nan
    print(f"runs of {length} s: {len(pairs)} pairs, {wall / max(1, len(pairs)):.1f} s wall a "
          f"pair; SD of pair log ratios {100 * ratios.std(ddof=1):.1f} %, 95 % half-width "
          f"{100 * half_width(ratios):.1f} %; A-first minus B-first {100 * order:+.1f} %")
    for k in (2, 4):
        if len(pairs) >= 2 * k:
            med = blocks(pairs, k)
            print(f"    {k} runs of {length} s per side per pair (median): {med.size} pairs, SD "
                  f"{100 * med.std(ddof=1):.1f} %, half-width {100 * half_width(med):.1f} %")


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--test", default="redis-benchmark-1Kkeys-string-get-100B")
    p.add_argument("--budget", type=int, default=24, help="measured seconds per side")
    p.add_argument("--lengths", default="1,2,4")
    p.add_argument("--server", default=shutil.which("redis-server") or "redis-server")
    p.add_argument("--out", type=Path, default=ROOT / ".cache" / "pair-design")
    p.add_argument("--allow-busy", action="store_true")
    p.add_argument("--placement", action="store_true",
                   help="also the 2 s design with CPUs in numeric order (server on CPU 0)")
    args = p.parse_args()
    load = os.getloadavg()[0]
    if load > 0.5 and not args.allow_busy:
        print(f"load average {load:.2f}: run it alone (or --allow-busy)", file=sys.stderr)
        return 2
    print(f"{args.test}, {args.budget} s measured per side and design, load {load:.2f}")
    for length in (int(x) for x in args.lengths.split(",")):
        pairs, wall = session(args.server, args.test, length, max(3, args.budget // length),
                              args.out / f"len{length}-{int(time.time())}")
        report(length, pairs, wall)
    if args.placement:
        print("CPUs in numeric order (the server on CPU 0, the placement before issue 28):")
        pairs, wall = session(args.server, args.test, 2, max(3, args.budget // 2),
                              args.out / f"as-given-{int(time.time())}", as_given=True)
        report(2, pairs, wall)
    return 0


if __name__ == "__main__":
    sys.exit(main())
