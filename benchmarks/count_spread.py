"""The per-suite spread of instruction counts in an A/A session, on the command path as it
was before this wave (5a2e0e8) and as it is now, and what the engine decides of the same A/A
pairs at 3 and 5 pairs with the count prior the catalogue ships.

One ``rbs run`` A/A (the same binary on both sides, interleaved pairs, every selected suite in
each of its topologies, ``--profilers instructions``, callgrind) with its callgrind dumps kept;
each window is then counted on both scopes from its dump
(``telemetry.profilers.command_path``; the old scope kept ``processCommand``'s own
``strcasecmp`` calls and the command-table lookups made below it). Per test it prints the
pair spread (SD of the per-pair log ratios, %) and the range of all its counts (max-min over
the median, %) on both scopes, then the verdicts of the engine at 3 and 5 pairs
(``analysis.engine.judge_pairs``, one Benjamini-Hochberg family): in an A/A, every
REGRESSION or IMPROVEMENT is a false decision. Whether the session's pairs drew the same
seeds (``runner/seeds.py``) is the code that ran it: the table reads the dumps either way.

    .venv/bin/python benchmarks/count_spread.py --redis-server BIN [--tests-regexp RE] \\
        [--all-topologies] [--pairs 5] [--profile-requests 3000] [--out DIR] [--reuse DIR]

``--reuse DIR`` re-reads a session folder a previous call left (no runs). Run it alone: a
heavy benchmark beside other work measures the neighbour (its counts hold, its time does not).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.analysis.engine import judge_pairs
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC, metric
from redis_benchmarks_spec.telemetry.profilers.callgrind import parse_callgrind
from redis_benchmarks_spec.telemetry.profilers.command_path import (
    COMMAND_LOOKUP_CALLEES,
    COMMAND_PATH_FUNCTIONS,
    REHASH_BY_TIMER,
    command_path_instructions,
    inclusive,
    slow_records,
)

RBS = ROOT / ".venv" / "bin" / "rbs"
TARGET_PCT = 0.3


def run_session(args: argparse.Namespace, out: Path) -> float:
    argv = [str(RBS), "run", "--baseline-server", args.redis_server, "--comparison-server", args.redis_server,
            "--profilers", "instructions", "--instructions-method", "callgrind",
            "--profile-requests", str(args.profile_requests),
            "--repetitions", str(args.pairs), "--results-dir", str(out), "--no-datasink",
            "--no-noise-prior"]
    if args.tests_regexp:
        argv += ["--tests-regexp", args.tests_regexp]
    if args.all_topologies:
        argv += ["--all-topologies"]
    if args.topology:
        argv += ["--topology", args.topology]
    start = time.monotonic()
    done = subprocess.run(argv, capture_output=True, text=True, timeout=6 * 3600, check=False)
    if done.returncode not in (0, 1):
        sys.exit(f"rbs run exited {done.returncode}: {done.stderr.strip()[-800:]}")
    return time.monotonic() - start


def counts(doc_path: Path) -> tuple[str, str, int, float, float] | None:
    """(test label, side, repetition, count per op now, count per op on the old scope)."""
    doc = json.loads(doc_path.read_text())
    data = doc.get("profiles", {}).get("instructions", {}).get("data", {})
    ops = float(data.get("ops") or 0)
    dumps = [Path(p) for k, p in doc.get("paths", {}).items() if k.startswith("callgrind_")]
    if doc.get("status") != "ok" or ops <= 0 or not dumps:
        return None
    profiles = [parse_callgrind(p.read_text(errors="replace")) for p in dumps if p.exists()]
    if len(profiles) != len(dumps):
        return None
    now = command_path_instructions(profiles)
    # the scope as it was before this wave (5a2e0e8): processCommand less its own lookup
    # and the slow log's entries, plus the timer's rehashing
    old = inclusive(profiles, COMMAND_PATH_FUNCTIONS) - sum(
        p.edge(name, COMMAND_LOOKUP_CALLEES) for p in profiles
        for name in COMMAND_PATH_FUNCTIONS) - slow_records(profiles) + \
        inclusive(profiles, REHASH_BY_TIMER)
    ctx = doc["context"]
    label = f"{doc['test_name']}@{ctx['topology']}"
    return label, ctx["ab_side"], int(ctx["repetition"]), now / ops, old / ops


def pair_sd(pairs: list[tuple[float, float]]) -> float:
    ratios = [math.log(c / b) for b, c in pairs]
    return 100 * statistics.stdev(ratios) if len(ratios) > 1 else math.nan


def spread(values: list[float]) -> float:
    return 100 * (max(values) - min(values)) / statistics.median(values)


def verdicts(pairs: dict[str, list[tuple[float, float]]], n: int) -> dict[str, str]:
    entry = metric(INSTRUCTIONS_METRIC)
    options = CompareOptions(metric=INSTRUCTIONS_METRIC).for_deterministic(
        INSTRUCTIONS_METRIC, entry.floor_pct)
    report = judge_pairs({t: p[:n] for t, p in pairs.items() if len(p) >= n}, options)
    return {r.test: r.verdict for r in report.rows}


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--redis-server", help="a redis-server built with symbols")
    p.add_argument("--tests-regexp", default="")
    p.add_argument("--pairs", type=int, default=5)
    p.add_argument("--topology", default="", help="only this topology")
    p.add_argument("--all-topologies", action="store_true",
                   help="every topology each suite lists (io-threads, replicas, a cluster)")
    p.add_argument("--profile-requests", type=int, default=3000)
    p.add_argument("--out", type=Path, default=Path("/tmp/rbs-count-spread"))
    p.add_argument("--reuse", type=Path, help="a session folder a previous call left")
    args = p.parse_args()
    folder = args.reuse
    if folder is None:
        if not args.redis_server:
            p.error("--redis-server is required without --reuse")
        args.out.mkdir(parents=True, exist_ok=True)
        took = run_session(args, args.out)
        folder = args.out
        print(f"A/A session: {took:.0f} s, {args.profile_requests} requests a counted run")
    found: dict[str, dict[int, dict[str, tuple[float, float]]]] = {}
    for path in sorted(folder.rglob("result.json")):
        row = counts(path)
        if row is not None:
            label, side, rep, now, old = row
            found.setdefault(label, {}).setdefault(rep, {})[side] = (now, old)
    pairs_now: dict[str, list[tuple[float, float]]] = {}
    pairs_old: dict[str, list[tuple[float, float]]] = {}
    for label, reps in found.items():
        full = [reps[r] for r in sorted(reps) if len(reps[r]) == 2]
        pairs_now[label] = [(s["baseline"][0], s["comparison"][0]) for s in full]
        pairs_old[label] = [(s["baseline"][1], s["comparison"][1]) for s in full]
    at3, at5 = verdicts(pairs_now, 3), verdicts(pairs_now, 5)
    print(f"{'test@topology':70s} pairs  pair SD before/after %   range before/after %   "
          "A/A verdict at 3 / 5 pairs")
    over = []
    for label in sorted(pairs_now):
        now, old = pairs_now[label], pairs_old[label]
        if not now:
            continue
        sd_now, sd_old = pair_sd(now), pair_sd(old)
        r_now = spread([v for pair in now for v in pair])
        r_old = spread([v for pair in old for v in pair])
        if sd_now > TARGET_PCT:
            over.append(label)
        print(f"{label:70s} {len(now):5d}  {sd_old:8.3f} / {sd_now:8.3f}      "
              f"{r_old:8.3f} / {r_now:8.3f}      {at3.get(label, '-')} / {at5.get(label, '-')}")
    tests = [t for t in pairs_now if pairs_now[t]]
    false3 = [t for t, v in at3.items() if v in ("REGRESSION", "IMPROVEMENT")]
    false5 = [t for t, v in at5.items() if v in ("REGRESSION", "IMPROVEMENT")]
    print(f"\n{len(tests)} tests; pair SD above {TARGET_PCT} %: {len(over)} {over}")
    print(f"A/A false decisions with the shipped count prior: {len(false3)} of {len(at3)} at 3 "
          f"pairs {false3}, {len(false5)} of {len(at5)} at 5 pairs {false5}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
