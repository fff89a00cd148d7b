"""A/A of the watch's confirmation (notify/watch_confirm.py): both commits are the same
binary, a candidate is raised by the first runs' noise alone, the re-runs come from the same
distribution, in the rounds watch_confirm asks (its first_round, then one more a side while
the engine leaves it undecided), judged by the real confirmation (one call of the A/B engine
on the re-runs paired by round; the raising runs never vote). Prints how often such a candidate is
confirmed. It is conditional on a candidate: the arrival judge's own-spread rule (a step
must exceed 6x, or 2x for timed, the series' spread) is what keeps noise candidates rare.

Usage: .venv/bin/python benchmarks/watch_confirm_aa.py 2000
"""
import random
import sys

from redis_benchmarks_spec.analysis.arrival import confirm
from redis_benchmarks_spec.notify.watch_confirm import MAX_RERUN_ROUNDS, first_round


def draw(rng, kind):
    if kind == "count-steady":
        return 4300 * rng.gauss(1, 0.0015)
    if kind == "count-bimodal":
        return 4300 * (1 if rng.random() < 0.5 else 0.98) * rng.gauss(1, 0.0015)
    return 1e5 * rng.lognormvariate(0, 0.10)

def one(rng, kind):
    counted = kind.startswith("count")
    floor = 1.0 if counted else 5.0
    while True:  # a candidate: the first runs differ by the floor or more
        b0, a0 = draw(rng, kind), draw(rng, kind)
        pct = 100 * (a0 / b0 - 1)
        if abs(pct) >= floor:
            break
    metric = "instructions_per_op" if counted else "ALL_STATS.Totals.Ops/sec"
    before, after = [], []  # the raising runs b0, a0 never vote
    rounds = first_round([metric])
    while True:
        for _ in range(rounds):
            before.append(draw(rng, kind))
            after.append(draw(rng, kind))
        judged = confirm(before, after, metric, pct)
        if judged.confirmed:
            return True
        if not judged.undecided or len(before) >= MAX_RERUN_ROUNDS[counted]:
            return False
        rounds = 1

n = int(sys.argv[1])
for kind in ("count-bimodal", "timed-10pct"):
    rng = random.Random(1)
    hits = sum(one(rng, kind) for _ in range(n))
    print(f"{kind}: {hits}/{n} noise candidates confirmed = {100 * hits / n:.2f} %")
