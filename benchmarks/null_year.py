"""False alerts per platform-year of ``unstable`` with no real change (issue 39, item 5).

Each series of a platform (one suite, one metric) gets one point per commit, drawn from a
noise shape recorded here or in the lab's replays, and no real change anywhere. The real
arrival judge (``analysis.arrival.judge``: the host gate, E-Divisive, the kind's floors) looks
at every new point; a candidate is confirmed by the real ``analysis.arrival.confirm`` on
re-runs of both commits drawn from the same distribution, in the rounds
``notify.watch_confirm`` asks (the re-runs only: the raising runs never vote). A confirmed candidate is an alert; one alert per commit and platform, whatever the
number of series that saw it (``watch_store.claim_alert``). Host changes happen every
``--host-every`` commits (the timed level moves on the new host, counts do not); as the
watch does, the last commit before one is measured again on the new host and the new host's
first points are judged against that re-measure (``arrival.judge_boundary``), so the
boundaries' own false candidates are counted.

Noise shapes: ``count-steady`` (CV 0.15 %, DESIGN.md), ``count-two-level`` (two levels 2 %
apart, hash seeds: benchmarks/watch_confirm_aa.py), ``timed-drift`` (CV 10 % with a slow
random-walk drift of the level, 0.2 % a commit).

Usage (brief; the default year takes long on 2 cores):
  .venv/bin/python benchmarks/null_year.py --commits 300 --series 4 --years 1
"""

from __future__ import annotations

import argparse
import math
import random
from collections.abc import Callable
from dataclasses import dataclass, field

from redis_benchmarks_spec.analysis.arrival import (
    ArrivalPoint,
    Judgement,
    confirm,
    judge,
    judge_boundary,
    series_of,
)
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC, THROUGHPUT_METRIC
from redis_benchmarks_spec.notify.watch_confirm import MAX_RERUN_ROUNDS, first_round

#: judge only the last this many points of a host's history (the watch reads 200)
HISTORY = 200


@dataclass
class Shape:
    """A noise shape: how a point is drawn given the series' current level."""

    name: str
    metric: str
    draw: Callable[[random.Random, float], float]
    drift: float = 0.0  # random-walk step of the level's log, a commit
    host_shift: float = 0.0  # SD of the level's log move at a host change


SHAPES = {
    "count-steady": Shape("count-steady", INSTRUCTIONS_METRIC,
                          lambda r, level: level * r.gauss(1, 0.0015)),
    "count-two-level": Shape("count-two-level", INSTRUCTIONS_METRIC,
                             lambda r, level: level * (1 if r.random() < 0.5 else 0.98)
                             * r.gauss(1, 0.0015)),
    "timed-drift": Shape("timed-drift", THROUGHPUT_METRIC,
                         lambda r, level: level * r.lognormvariate(0, 0.10),
                         drift=0.002, host_shift=0.05),
}


@dataclass
class Series:
    shape: Shape
    level: float
    points: list[ArrivalPoint] = field(default_factory=list)


def _confirmed(rng: random.Random, s: Series, raised_pct: float) -> bool:
    """The real confirmation on null re-runs, in watch_confirm's rounds."""
    counted = s.shape.metric == INSTRUCTIONS_METRIC
    before: list[float] = []  # the raising runs never vote (watch_confirm.reruns_of)
    after: list[float] = []
    rounds = first_round([s.shape.metric])
    while True:
        for _ in range(rounds):
            before.append(s.shape.draw(rng, s.level))
            after.append(s.shape.draw(rng, s.level))
        judged = confirm(before, after, s.shape.metric, raised_pct)
        if judged.confirmed:
            return True
        if not judged.undecided or len(before) >= MAX_RERUN_ROUNDS[counted]:
            return False
        rounds = 1


def _arrived(rng: random.Random, s: Series, commit: int) -> Judgement:
    """The judgement of the newest point; at a host boundary, the re-measure of the commit
    before it on the new host, and the new host's first point judged against it."""
    found = judge(series_of(s.points[-HISTORY:]), s.shape.metric)
    if found.outcome != "host-changed":
        return found
    s.points.append(ArrivalPoint(f"c{commit - 1}", s.shape.draw(rng, s.level),
                                 s.points[-1].fingerprint))
    return judge_boundary(series_of(s.points[-HISTORY:]), s.shape.metric)


def platform_year(rng: random.Random, shapes: list[Shape], args: argparse.Namespace
                  ) -> tuple[int, int]:
    """(alerts, candidates) of one platform over ``args.commits`` null commits."""
    series = [Series(shape, 1e5 if shape.metric == THROUGHPUT_METRIC else 4300.0)
              for shape in shapes]
    alerted: set[int] = set()
    candidates = 0
    host = 0
    for commit in range(args.commits):
        if commit and commit % args.host_every == 0:
            host += 1
        for s in series:
            if commit and commit % args.host_every == 0:
                s.level *= math.exp(rng.gauss(0, s.shape.host_shift))
            s.level *= math.exp(rng.gauss(0, s.shape.drift))
            s.points.append(ArrivalPoint(f"c{commit}", s.shape.draw(rng, s.level), f"h{host}"))
            found = _arrived(rng, s, commit)
            if found.outcome != "candidate":
                continue
            candidates += 1
            if _confirmed(rng, s, found.change_pct):
                alerted.add(commit)
    return len(alerted), candidates


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=1500, help="commits a year")
    parser.add_argument("--series", type=int, default=10, help="series of each shape")
    parser.add_argument("--years", type=int, default=3, help="platform-years simulated")
    parser.add_argument("--host-every", type=int, default=300)
    parser.add_argument("--seed", type=int, default=1)
    args = parser.parse_args()
    rng = random.Random(args.seed)
    print(f"{args.commits} commits a year, {args.series} series of each shape, host change "
          f"every {args.host_every} commits, no real change")
    print("| shape | platform-years | candidates | false alerts | per platform-year |")
    print("|---|---|---|---|---|")
    for shape in SHAPES.values():
        alerts = cands = 0
        for _ in range(args.years):
            a, c = platform_year(rng, [shape] * args.series, args)
            alerts, cands = alerts + a, cands + c
        print(f"| {shape.name} | {args.years} | {cands} | {alerts} | "
              f"{alerts / args.years:.2f} |")


if __name__ == "__main__":
    main()
