"""Does ``rbs run --until-decided`` decide a held-out slowdown of a few percent on this machine,
and does it stay quiet on A/A? (issue 15, first check)

Two experiments, each one real ``rbs run`` of interleaved A/B pairs, oss-standalone only:

* **A/B**: ``--server`` against ``--slow-server`` (a redis-server built from the same tree
  with a busy loop in ``call()``, real CPU work on every command; docs/statistics.md says how
  it was built and what it costs: ~0.35 us per command, about 3 % of the server's CPU per
  command of a non-pipelined suite here) and/or ``--slow-args`` on the comparison side,
  on ``--ab-tests``. ``benchmarks/build_held_out.sh /tmp/ho`` builds both binaries.
* **A/A**: identical sides on ``--aa-tests`` (several suites).

Both with ``--until-decided --max-repetitions N``. Prints per test: verdict, change and
repeated interval, pairs used and why it stopped, and per experiment the wall time; then, from
the stored results, the standard deviation of the per-pair log ratios of ops/sec and of the
server's CPU time per command (the noise the statistic has to beat).

Usage (heavy: run it alone, under the machine's lock):
  flock /tmp/rbs-heavy.lock .venv/bin/python benchmarks/decide_bench.py \\
      --server /tmp/ho/redis-server-base --slow-server /tmp/ho/redis-server-spin \
      [--metric auto|NAME] [--test-time 10] [--max-repetitions 40]
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import tempfile
import time
from collections import defaultdict
from pathlib import Path

from redis_benchmarks_spec.analysis.sequential_compare import SEQUENTIAL_RECORD, SequentialRecord
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.server_cpu import SERVER_CPU_METRIC

OPS = "ALL_STATS.Totals.Ops/sec"
RBS = str(Path(sys.executable).with_name("rbs"))
AB_TESTS = "redis-benchmark-(1Kkeys-string-get-100B|string-set-100B)"
AA_TESTS = "redis-benchmark-(1Kkeys-string-get-100B|string-set-100B|ping-inline)"


def rbs_ab(args: argparse.Namespace, tests: str, comparison: tuple[str, str],
           out: Path) -> tuple[dict, float]:
    """One ``rbs run --until-decided`` session; its JSON report and wall time."""
    server, slow_args = comparison
    argv = [RBS, "run", "--baseline-server", args.server, "--comparison-server", server,
            "--topology", "oss-standalone", "--tests-regexp", f"^{tests}$",
            "--test-time", str(args.test_time), "--until-decided",
            "--max-repetitions", str(args.max_repetitions), "--metric", args.metric,
            "--no-datasink", "--results-dir", str(out), "--format", "json"]
    if args.noise_floor is not None:
        argv += ["--noise-floor", str(args.noise_floor)]
    if slow_args:
        argv += [f"--comparison-server-args={slow_args}"]
    print("$ " + " ".join(argv), flush=True)
    started = time.monotonic()
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=args.timeout, check=False)
    wall = time.monotonic() - started
    if not proc.stdout.strip():
        sys.exit(f"rbs run failed ({proc.returncode}): {proc.stderr[-2000:]}")
    return json.loads(proc.stdout), wall


def stops(out: Path) -> dict[str, dict]:
    """Per test: pairs and why it stopped (the session's ``sequential.json``)."""
    found = sorted(out.glob(f"*/{SEQUENTIAL_RECORD}"))
    if not found:
        return {}
    record = SequentialRecord.from_json(found[-1].read_text())
    return {t: {"pairs": record.pairs.get(t, 0), "stopped": record.stopped.get(t, "")}
            for t in record.looks}


def pair_noise(out: Path) -> dict[str, dict[str, float]]:
    """Per test and metric, the SD (in %) of the per-pair log ratios of the stored runs."""
    values: dict[tuple[str, str, int], dict[str, float]] = {}
    for path in out.glob("*/*/rep-*/**/result.json"):
        r = RunResult.read(path)
        if r.status == "ok":
            rep = int(path.relative_to(out).parts[2].removeprefix("rep-"))
            values[(r.test_name, r.context.ab_side or "", rep)] = r.metrics
    ratios: dict[str, dict[str, list[float]]] = defaultdict(lambda: defaultdict(list))
    for (test, side, rep), base in values.items():
        comp = values.get((test, "comparison", rep))
        if side != "baseline" or comp is None:
            continue
        for metric in (OPS, SERVER_CPU_METRIC):
            if base.get(metric) and comp.get(metric):
                ratios[test][metric].append(math.log(comp[metric] / base[metric]))
    return {t: {m: 100 * statistics.stdev(v) for m, v in by.items() if len(v) > 2}
            for t, by in ratios.items()}


def show(title: str, report: dict, wall: float, out: Path) -> None:
    print(f"\n== {title}: wall {wall / 60:.1f} min, metric {report['options']['metric']}, "
          f"noise floor ±{report['options']['noise_floor_pct']:g}%")
    why = report.get("method", "").partition("; metric ")[2]
    if why:
        print(f"  metric {why}")
    progress, noise = stops(out), pair_noise(out)
    for row in report["rows"]:
        test, p = row["test"], progress.get(row["test"], {})
        ci = (f"[{row['ci_low_pct']:+.1f}%, {row['ci_high_pct']:+.1f}%]"
              if row["ci_low_pct"] is not None else "[no interval]")
        change = f"{row['change_pct']:+.1f}%" if row["change_pct"] is not None else "?"
        sd = noise.get(test, {})
        print(f"  {test:<52} {row['verdict']:<11} {change:>7} {ci:<18} "
              f"pairs {p.get('pairs', '?'):>2} ({p.get('stopped', '?')}); "
              f"SD of pair log ratios: ops/sec {sd.get(OPS, float('nan')):.1f}%, "
              f"server CPU/op {sd.get(SERVER_CPU_METRIC, float('nan')):.1f}%")
    for problem in report["problems"]:
        print(f"  problem: {problem}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--server", default="/usr/bin/redis-server")
    ap.add_argument("--slow-server", default=None, help="A/B comparison binary")
    ap.add_argument("--slow-args", default="", help="A/B comparison server arguments")
    ap.add_argument("--ab-tests", default=AB_TESTS)
    ap.add_argument("--aa-tests", default=AA_TESTS)
    ap.add_argument("--metric", default="auto")
    ap.add_argument("--noise-floor", type=float, default=None)
    ap.add_argument("--test-time", type=int, default=10)
    ap.add_argument("--max-repetitions", type=int, default=40)
    ap.add_argument("--timeout", type=float, default=3600)
    ap.add_argument("--skip", choices=["ab", "aa"], default=None)
    args = ap.parse_args()
    slow = (args.slow_server or args.server, args.slow_args)
    if slow == (args.server, "") and args.skip != "ab":
        ap.error("A/B needs --slow-server or --slow-args (or --skip ab)")
    with tempfile.TemporaryDirectory(prefix="decide-bench-") as tmp:
        for name, tests, comparison in (("ab", args.ab_tests, slow),
                                        ("aa", args.aa_tests, (args.server, ""))):
            if args.skip == name:
                continue
            out = Path(tmp) / name
            report, wall = rbs_ab(args, tests, comparison, out)
            title = "A/A" if name == "aa" else f"A/B, comparison {' '.join(comparison)}"
            show(title, report, wall, out)


if __name__ == "__main__":
    main()
