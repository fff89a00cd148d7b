"""The binary search of ``rbs bisect``, whatever builds and measures the commits.

A :class:`Prober` builds a commit (on this machine, or through the builder and agents) and
measures it against the good end over interleaved pairs, returning the change of one metric
and its verdict. The search:

1. checks the bad end: it must be a REGRESSION against good (with at least
   :data:`BAD_END_PAIRS` pairs, where the paired t interval can decide). Its change is the
   effect being hunted. Several probers may be offered, best metric first (instruction
   counts, then throughput): the first whose bad end is a REGRESSION is used, so a slowdown
   that adds no instructions (a sleep, a lock) is still found by throughput;
2. classifies each midpoint as *bad* when its change is at least half of that effect in the
   same direction (:func:`is_bad`), the same rule for every metric and mode: a
   classification of a known effect needs far fewer pairs than proving each midpoint
   significant;
3. stops when the first bad commit is found, or when ``max_builds`` commits were built or
   the time budget is spent (the range still holding it is reported).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from redis_benchmarks_spec.analysis.compare import REGRESSION

#: --metric values besides an exporter metric path
METRIC_AUTO = "auto"
METRIC_INSTRUCTIONS = "instructions"
METRIC_THROUGHPUT = "throughput"
#: pairs of the bad-vs-good check (6: the signed-rank interval is bounded from 6 as well)
BAD_END_PAIRS = 6


class BisectError(RuntimeError):
    """The bisection cannot go on (git, a build, the broker, or no complete pairs)."""


class BudgetSpent(RuntimeError):
    """The time budget ran out in the middle of a probe."""


@dataclass
class Measurement:
    """One probe commit against good: change (%) of the metric and its verdict."""

    change_pct: float | None
    verdict: str
    pairs: int
    build_s: float = 0.0


class Prober(Protocol):
    """Builds commits and measures them against the good end."""

    metric: str  # the metric its verdicts are about, e.g. instructions_per_op

    def built(self) -> int:
        """Distinct commits built so far (a build reused from a cache counts too)."""
        ...

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        """``sha`` against good over ``pairs`` interleaved pairs; :class:`BudgetSpent` when
        ``deadline`` (``time.monotonic()``) passes first."""
        ...


@dataclass
class Budget:
    max_builds: int = 12
    time_budget_s: float | None = None
    pairs: int = 4  # per midpoint


@dataclass
class Probe:
    """One measured commit: its change against good and whether it counts as bad."""

    sha: str
    change_pct: float | None
    verdict: str
    bad: bool
    build_s: float
    metric: str
    pairs: int


@dataclass
class BisectOutcome:
    commits: list[str]
    first_bad: str | None = None
    probes: list[Probe] = field(default_factory=list)
    builds: int = 0  # distinct commits built (a cached build counts)
    compiles: int = 0  # of those, compiled by this bisection (local mode)
    reason: str = ""
    range_left: tuple[str, str] | None = None  # (last known good, first known bad)
    metric: str = ""  # the metric that decided the probes
    metric_note: str = ""  # why that metric (e.g. instructions did not see the regression)


def is_bad(change_pct: float | None, effect_pct: float) -> bool:
    """A midpoint is bad when it carries at least half of the bad end's change (same sign)."""
    return change_pct is not None and effect_pct != 0 and change_pct / effect_pct >= 0.5


def _fmt(change: float | None) -> str:
    return "n/a" if change is None else f"{change:+.2f}%"


def _bad_end(probers: list[Prober], commits: list[str], good: str, outcome: BisectOutcome,
             deadline: float | None, say: Callable[[str], None]) -> Prober | None:
    """The first prober that shows the bad end as a REGRESSION (recorded as a probe)."""
    notes: list[str] = []
    for prober in probers:
        m = prober.measure(commits[-1], BAD_END_PAIRS, deadline)
        regression = m.verdict == REGRESSION and m.change_pct is not None
        outcome.probes.append(Probe(commits[-1], m.change_pct, m.verdict, regression,
                                    m.build_s, prober.metric, m.pairs))
        say(f"bad {commits[-1][:12]} vs good {good[:12]} on {prober.metric}: "
            f"{_fmt(m.change_pct)} ({m.verdict}, {m.pairs} pairs)")
        if regression:
            outcome.metric, outcome.metric_note = prober.metric, "; ".join(notes)
            return prober
        notes.append(f"{prober.metric} saw no regression at the bad end ({m.verdict} "
                     f"{_fmt(m.change_pct)})")
    outcome.reason = "bad is not a REGRESSION against good: " + "; ".join(notes)
    return None


def search(probers: list[Prober], good: str, commits: list[str], budget: Budget,
           say: Callable[[str], None] = lambda _: None) -> BisectOutcome:
    """Binary search of ``commits`` (oldest first, after ``good``) for the first bad one."""
    deadline = None if budget.time_budget_s is None \
        else time.monotonic() + budget.time_budget_s
    outcome = BisectOutcome(commits)
    try:
        prober = _bad_end(probers, commits, good, outcome, deadline, say)
    except BudgetSpent:
        outcome.reason = "budget spent before the bad end was measured"
        outcome.builds = max(p.built() for p in probers)
        return outcome
    if prober is None:
        outcome.builds = max(p.built() for p in probers)
        return outcome
    effect = outcome.probes[-1].change_pct or 0.0
    lo, hi = -1, len(commits) - 1  # commits[lo] is good (lo=-1: the good end), commits[hi] bad
    while hi - lo > 1:
        if prober.built() >= budget.max_builds or \
                (deadline is not None and time.monotonic() >= deadline):
            outcome.reason = "budget spent"
            break
        mid = (lo + hi) // 2
        try:
            m = prober.measure(commits[mid], budget.pairs, deadline)
        except BudgetSpent:
            outcome.reason = "budget spent"
            break
        bad = is_bad(m.change_pct, effect)
        outcome.probes.append(Probe(commits[mid], m.change_pct, m.verdict, bad, m.build_s,
                                    prober.metric, m.pairs))
        say(f"{commits[mid][:12]}: {_fmt(m.change_pct)} vs good ({m.verdict}) -> "
            f"{'bad' if bad else 'good'}")
        lo, hi = (lo, mid) if bad else (mid, hi)
    outcome.builds = max(p.built() for p in probers)
    outcome.range_left = (good if lo < 0 else commits[lo], commits[hi])
    if hi - lo == 1:
        outcome.first_bad = commits[hi]
        outcome.reason = outcome.reason or "found"
    return outcome
