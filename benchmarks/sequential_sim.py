"""Figures for --until-decided (issue 15), by simulation of the real loop on synthetic pairs.

A/A: how often a test is flagged with the group-sequential design vs re-testing at alpha
after every round (same data); A/B: pairs used to decide a change of a given size.

Usage: .venv/bin/python benchmarks/sequential_sim.py [--sims 300] [--cv 0.12] [--max 40]
"""

from __future__ import annotations

import argparse

import numpy as np

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    CompareOptions,
    compare_paired,
)
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.runner.adaptive import AdaptivePlan, PairSource, until_decided


def source(rng: np.random.Generator, ratio: float, cv: float) -> PairSource:
    def pairs(tests: list[str], first: int, count: int,
              deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        drift = rng.lognormal(0, 0.05, count)
        b = 1e5 * drift * rng.lognormal(0, cv, count)
        c = 1e5 * ratio * drift * rng.lognormal(0, cv, count)
        return {t: list(zip(b.tolist(), c.tolist(), strict=True)) for t in tests}
    return pairs


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--sims", type=int, default=300)
    ap.add_argument("--cv", type=float, default=0.12)
    ap.add_argument("--max", type=int, default=40)
    args = ap.parse_args()
    flagged = naive = 0
    rng = np.random.default_rng(1)
    plan = AdaptivePlan(SequentialPlan(args.max), CompareOptions(noise_floor_pct=0.0))
    looks = range(plan.first_round, args.max + 1, plan.round_pairs)
    for _ in range(args.sims):
        out = until_decided(["t"], source(rng, 1.0, args.cv), plan)
        flagged += out.report.rows[0].verdict in (REGRESSION, IMPROVEMENT)
        pairs = out.progress["t"].pairs
        naive += any(compare_paired({"t": pairs[:n]}, CompareOptions(noise_floor_pct=0.0))
                     .rows[0].verdict in (REGRESSION, IMPROVEMENT) for n in looks)
    print(f"A/A, CV {args.cv:.0%}, looks at {list(looks)}: flagged {flagged}/{args.sims} "
          f"({flagged / args.sims:.1%}) with the design; {naive}/{args.sims} "
          f"({naive / args.sims:.1%}) re-testing at alpha after every round")
    plan = AdaptivePlan(SequentialPlan(args.max), CompareOptions())
    for ratio in (0.35, 0.90, 0.95):
        used, decided = [], 0
        for _ in range(max(20, args.sims // 10)):
            out = until_decided(["t"], source(rng, ratio, args.cv), plan)
            decided += out.report.rows[0].verdict == REGRESSION
            used.append(len(out.progress["t"].pairs))
        print(f"A/B {ratio - 1:+.0%}: decided {decided}/{len(used)}, pairs used median "
              f"{int(np.median(used))} (max {max(used)})")


if __name__ == "__main__":
    main()
