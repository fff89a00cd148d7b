"""The A/A false-alarm rate of the verdict engine, simulated over recorded A/A runs.

Input: one or more A/A session folders (``rbs run --baseline-server X --comparison-server X``,
the same binary on both sides), or a JSON file of per-test pair lists written by
``--save``. Every test's recorded pairs are resampled (``--pairs`` distinct pairs drawn
without replacement, and the sides of each drawn pair swapped at random: under A/A both
orders are equally likely; drawing with replacement from a handful of pairs repeats values
and shrinks the spread, which flags far too often) into simulated sessions over every test
at once (a pair count above a test's recorded pairs is skipped), judged by
:func:`analysis.engine.judge_pairs` with the same options as a real A/B. A REGRESSION or
IMPROVEMENT is a false alarm. With ``--prior``, each test's noise prior is estimated from a
disjoint half of its recorded pairs (as a calibration A/A would) and the other half is
resampled.

Prints, per pair count, the share of simulated tests flagged and of sessions with any flag.

Usage: .venv/bin/python benchmarks/aa_false_alarms.py SESSION_DIR... [--metric M]
       [--pairs 3,5,10] [--sims 2000] [--prior] [--save FILE] [--load FILE]
"""

from __future__ import annotations

import argparse
import json
import math
import sys
from pathlib import Path

import numpy as np

from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, REGRESSION, CompareOptions
from redis_benchmarks_spec.analysis.engine import judge_pairs
from redis_benchmarks_spec.analysis.noise import NoiseBook
from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.session_runs import pair_runs
from redis_benchmarks_spec.analysis.verdict import default_noise_floor
from redis_benchmarks_spec.inputs.session_folder import load_session

Pairs = list[tuple[float, float]]


def recorded(folders: list[Path], metric: str) -> dict[str, Pairs]:
    """Every test's pairs over the sessions (a test label per session folder)."""
    out: dict[str, Pairs] = {}
    for i, root in enumerate(folders):
        for test, found in pair_runs(load_session(root).runs, metric).items():
            if len(found.pairs) >= 2:
                out[f"{test}#{i}"] = found.pairs
    return out


def _prior(pairs: Pairs) -> NoisePrior:
    book = NoiseBook(Path("/dev/null"))
    entry = book.record("t", "m", "p", pairs)
    assert entry is not None
    return NoisePrior(entry.sd, entry.df, "the other half")


def simulate(data: dict[str, Pairs], n: int, sims: int, metric: str, prior: bool,
             rng: np.random.Generator) -> tuple[float, float]:
    """(share of tests flagged, share of sessions with a flag) over ``sims`` sessions."""
    options = CompareOptions(noise_floor_pct=default_noise_floor(metric), metric=metric)
    pools, priors = {}, {}
    for test, pairs in data.items():
        order = rng.permutation(len(pairs))
        if prior and len(pairs) >= 6:
            half = len(pairs) // 2
            priors[test] = _prior([pairs[i] for i in order[:half]])
            pools[test] = [pairs[i] for i in order[half:]]
        else:
            pools[test] = pairs
    pools = {t: p for t, p in pools.items() if len(p) >= n}
    if not pools:
        return math.nan, math.nan
    flagged = sessions = 0
    for _ in range(sims):
        session = {}
        for test, pool in pools.items():
            picks = rng.choice(len(pool), n, replace=False)
            swap = rng.random(n) < 0.5
            session[test] = [(pool[i][1], pool[i][0]) if s else pool[i]
                             for i, s in zip(picks, swap, strict=True)]
        report = judge_pairs(session, options, priors=priors if prior else None)
        hits = sum(r.verdict in (REGRESSION, IMPROVEMENT) for r in report.rows)
        flagged += hits
        sessions += hits > 0
    return flagged / (sims * len(pools)), sessions / sims


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__,
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("folders", nargs="*", type=Path)
    p.add_argument("--metric", default="instructions_per_op")
    p.add_argument("--pairs", default="3,5,10")
    p.add_argument("--sims", type=int, default=2000)
    p.add_argument("--prior", action="store_true")
    p.add_argument("--save", type=Path)
    p.add_argument("--load", type=Path)
    p.add_argument("--seed", type=int, default=1)
    args = p.parse_args()
    if args.load:
        data = {t: [tuple(x) for x in v] for t, v in json.loads(args.load.read_text()).items()}
    else:
        data = recorded(args.folders, args.metric)
    if not data:
        print("no test with 2+ recorded pairs", file=sys.stderr)
        return 2
    if args.save:
        args.save.write_text(json.dumps(data, indent=1))
    rng = np.random.default_rng(args.seed)
    print(f"{len(data)} recorded A/A test(s), metric {args.metric}, {args.sims} simulated "
          f"sessions per row, prior: {'yes (disjoint half)' if args.prior else 'no'}")
    print(f"{'pairs':>5}  {'tests flagged':>13}  {'sessions with a flag':>20}")
    for n in (int(x) for x in args.pairs.split(",")):
        per_test, per_session = simulate(data, n, args.sims, args.metric, args.prior, rng)
        if math.isnan(per_test):
            print(f"{n:>5}  {'(fewer recorded pairs than this)':>34}")
            continue
        print(f"{n:>5}  {per_test:>12.2%}  {per_session:>19.2%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
