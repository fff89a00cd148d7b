"""Instructions per op in interleaved A/B: a real 'more work per command' change and an A/A.

The comparison server does more work per command without recompiling: the baseline runs with
``--latency-tracking no`` and the comparison with Redis 7's default (``yes``: every command
updates its latency histogram). Both sides use the same binary. Then the same session as A/A.
Prints the instruction verdict, its interval, and the functions that moved.

    .venv/bin/python benchmarks/instructions_ab.py [--pairs 5] [--test redis-benchmark-string-set-100B]
"""

from __future__ import annotations

import argparse
import json
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

RBS = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")


def session(test: str, pairs: int, requests: int, baseline_args: str, out: Path) -> dict:
    server = shutil.which("redis-server") or "redis-server"
    argv = [RBS, "run", "--test", test, "--topology", "oss-standalone", "--profilers",
            "instructions", "--instructions-method", "callgrind", "--profile-requests",
            str(requests), "--repetitions", str(pairs), "--baseline-server", server,
            "--comparison-server", server, "--baseline-server-args", baseline_args,
            "--results-dir", str(out), "--no-datasink", "--format", "json"]
    done = subprocess.run(argv, capture_output=True, text=True, timeout=3600, check=False)
    found = list(out.rglob("profiles-ab.json"))
    if not found:
        raise SystemExit(f"rbs run failed ({done.returncode}): {done.stderr[-2000:]}")
    return json.loads(found[0].read_text())


def show(label: str, data: dict) -> None:
    for row in data["instructions"]["rows"]:
        print(f"{label}: {row['test']}: instructions per op {row['baseline_median']:.1f} -> "
              f"{row['comparison_median']:.1f}: {row['verdict']} {row['change_pct']:+.3f}% "
              f"CI [{row['ci_low_pct']:+.3f}%, {row['ci_high_pct']:+.3f}%], CV "
              f"{100 * row['cv_baseline']:.3f}% / {100 * row['cv_comparison']:.3f}%, "
              f"n={row['n_baseline']}")
        for move in data["movers"].get(row["test"], [])[:5]:
            print(f"    {move['delta_per_op']:+9.1f}/op {move['function']} "
                  f"({move['share_of_total_pct']:+.2f}% of all)")


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--test", default="redis-benchmark-string-set-100B")
    ap.add_argument("--pairs", type=int, default=5)
    ap.add_argument("--requests", type=int, default=50_000)
    args = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-instr-ab-") as tmp:
        show("A/B (baseline --latency-tracking no)",
             session(args.test, args.pairs, args.requests, "--latency-tracking no",
                     Path(tmp) / "ab"))
        show("A/A", session(args.test, args.pairs, args.requests, "", Path(tmp) / "aa"))
    return 0


if __name__ == "__main__":
    sys.exit(main())
