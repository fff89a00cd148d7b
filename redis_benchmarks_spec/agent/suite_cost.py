"""What one run of each suite costs on this platform, measured, and the ETA it gives.

The agent times every run it makes (server start, preload, the client tool, the profiler
and clean-up: wall seconds of one side of one pair) and keeps, per platform and suite, a
moving average under ``<prefix>:suite-cost:<platform>`` (this module owns the key). A pull
request's queued line then says when the platform should be done from the suites it chose
and the plan (the first round's pairs for every suite; at most the budget's), instead of
one median for every suite; the final comment says the machine minutes the event took.
"""

from __future__ import annotations

import statistics
import time
from collections.abc import Callable
from dataclasses import dataclass, field

import redis

from redis_benchmarks_spec.events.names import StreamNames

KEEP = 0.5  # weight of the newest run in the moving average: a changed host shows in 2-3 runs
TTL_S = 90 * 24 * 3600


def key(names: StreamNames, platform: str) -> str:
    return f"{names.prefix}:suite-cost:{platform}"


def record(client: redis.Redis, names: StreamNames, platform: str,
           seconds: dict[str, list[float]]) -> None:
    """Fold each suite's new run times into its moving average."""
    if not seconds:
        return
    where = key(names, platform)
    old = load(client, names, platform, list(seconds))
    pipe = client.pipeline(transaction=False)
    for suite, runs in seconds.items():
        value = old.get(suite)
        for s in runs:
            value = s if value is None else KEEP * s + (1 - KEEP) * value
        if value is not None:
            pipe.hset(where, suite, f"{value:.3f}")
    pipe.expire(where, TTL_S)
    pipe.execute()


def load(client: redis.Redis, names: StreamNames, platform: str,
         suites: list[str]) -> dict[str, float]:
    """Seconds per run of each of ``suites`` measured here (those never run are absent; a
    value that does not read as a positive number is ignored: the key is writable by any
    broker client)."""
    if not suites:
        return {}
    values = client.hmget(key(names, platform), suites)
    out = {}
    for suite, raw in zip(suites, values):
        try:
            value = float(raw) if raw is not None else 0.0
        except ValueError:
            continue
        if 0 < value < 24 * 3600:
            out[suite] = value
    return out


@dataclass(frozen=True)
class EtaPlan:
    """The plan the ETA is computed from: pairs of the first round, most pairs, budget."""

    first_pairs: int
    max_pairs: int
    time_budget_s: float | None = None
    runs_per_pair: int = 2
    lanes: int = 1  # instruction-count tests side by side (runner/count_lanes.py)


def eta_text(suites: list[str], costs: dict[str, float], plan: EtaPlan) -> str:
    """``ETA about 14 min (...); at most 30 min (...)``; '' when no suite's cost is known."""
    known = [costs[s] for s in suites if s in costs]
    if not known:
        return ""
    typical = statistics.median(known)
    per_pair = [costs.get(s, typical) * plan.runs_per_pair for s in suites]
    # lanes share the suites out: the wall time is the larger of a lane's share and the
    # costliest suite
    lanes = max(1, plan.lanes)
    wall = max(sum(per_pair) / lanes, max(per_pair))
    expected = wall * plan.first_pairs
    most = wall * plan.max_pairs
    why = "time budget" if plan.time_budget_s is not None and \
        plan.time_budget_s + max(per_pair) < most else f"{plan.max_pairs} pairs each"
    if why == "time budget":
        assert plan.time_budget_s is not None
        # a pair started before the deadline is finished
        most = plan.time_budget_s + max(per_pair)
    expected = min(expected, most)  # "about" is never more than "at most"
    guessed = len(suites) - len(known)
    span = f"{min(known):.0f}" if round(min(known)) == round(max(known)) else \
        f"{min(known):.0f}-{max(known):.0f}"
    runs = f"pairs x {plan.runs_per_pair} runs" if plan.runs_per_pair != 1 else \
        "runs of the head"
    return (f"ETA about {expected / 60:.0f} min ({len(suites)} suite(s) x {plan.first_pairs} "
            f"{runs} at this platform's measured cost per suite, "
            f"{span} s a run"
            + (f"; {guessed} never run here, counted at the median" if guessed else "")
            + (f"; in {lanes} lanes on disjoint cores" if lanes > 1 else "")
            + f"), at most {most / 60:.0f} min ({why})")


@dataclass
class RunMeter:
    """Wall seconds of each run the agent makes, per suite, and their sum: the platform's
    machine time for one event. ``started`` before a run, ``ended`` after it."""

    clock: Callable[[], float] = time.monotonic
    per_suite: dict[str, list[float]] = field(default_factory=dict)
    _since: float | None = None

    def started(self) -> None:
        self._since = self.clock()

    def ended(self, suite: str, results: int = 1) -> None:
        """One run of ``suite`` ended (``results`` documents: one per topology it ran)."""
        if self._since is None:
            return
        spent = self.clock() - self._since
        self._since = None
        self.add(suite, spent, results)

    def add(self, suite: str, spent: float, results: int = 1) -> None:
        """``spent`` seconds for ``results`` runs of ``suite`` (one per topology)."""
        share = spent / max(1, results)
        self.per_suite.setdefault(suite, []).extend([share] * max(1, results))

    @property
    def machine_s(self) -> float:
        return sum(sum(v) for v in self.per_suite.values())
