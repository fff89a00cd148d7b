"""The binary search of ``rbs bisect``, whatever builds and measures the commits.

A :class:`Prober` builds a commit (on this machine, or through the builder and agents) and
measures it against the good end over interleaved pairs, returning the change of one metric
and its verdict. The search:

1. checks the bad end: it must be a decided change against good, a REGRESSION (or an
   IMPROVEMENT, whose commit is hunted the same way), with at least :data:`BAD_END_PAIRS`
   pairs, where the paired t interval can decide. Its change is the effect being hunted.
   Several probers may be offered, best metric first (instruction counts, then throughput):
   the first that decides the bad end is the one used for every midpoint, so a slowdown that
   adds no instructions (a sleep, a lock) is still found by throughput, and an instruction
   count that decided is never traded for a noisier metric;
2. classifies each midpoint as *bad* when its change carries that effect (:func:`is_bad`:
   the same direction and at least the catalogue's confirmation share of it, half, the
   rule the watch confirms a candidate with, ``analysis.policy.carries``), the same for
   every mode: a classification of a known effect needs far fewer pairs than proving each
   midpoint significant;
3. stops when the first bad commit is found, or when ``max_builds`` commits were built or
   the time budget would be overrun: a probe whose estimate (its pairs at the pace measured
   so far, plus a build) does not fit in the time left is not started, and the prober does
   not start a pair that would not fit (the range still holding it is reported);
4. a host too busy to give complete pairs of a timed metric ends the search with that
   outcome (``busy``), not an error.

``say`` gets a line per step (which commit, which probe) and, from the prober, per pair
(the running estimate).
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Protocol

from redis_benchmarks_spec.analysis import policy
from redis_benchmarks_spec.analysis.compare import BUSY, IMPROVEMENT, REGRESSION

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


class HostBusy(RuntimeError):
    """Other processes disturbed so many pairs of a timed metric that fewer than 2 are left:
    the host, not the commit, decided the probe."""


#: the verdicts at the bad end that give an effect to hunt
DECIDED_CHANGE = (REGRESSION, IMPROVEMENT)


@dataclass
class Measurement:
    """One probe commit against good: change (%) of the metric and its verdict."""

    change_pct: float | None
    verdict: str
    pairs: int
    build_s: float = 0.0
    reason: str = ""  # the verdict's reason (BUSY: how many pairs were disturbed)


class Prober(Protocol):
    """Builds commits and measures them against the good end."""

    metric: str  # the metric its verdicts are about, e.g. instructions_per_op

    def built(self) -> int:
        """Distinct commits built so far (a build reused from a cache counts too)."""
        ...

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        """``sha`` against good over ``pairs`` interleaved pairs; :class:`BudgetSpent` when
        ``deadline`` (``time.monotonic()``) passes first (or the next pair would not fit),
        :class:`HostBusy` when too few pairs were left undisturbed."""
        ...


def pair_seconds(prober: Prober) -> float | None:
    """Seconds one pair took so far (a prober may say; None: nothing measured yet)."""
    pace = getattr(prober, "pair_seconds", None)
    return pace() if callable(pace) else None


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
    busy: bool = False  # ended because the host disturbed the pairs (its own exit code)
    direction: str = ""  # the bad end's verdict: REGRESSION or IMPROVEMENT

    def change_of(self, sha: str) -> float | None:
        """The measured change of ``sha`` against good on the deciding metric."""
        return next((p.change_pct for p in reversed(self.probes)
                     if p.sha == sha and p.metric == self.metric), None)


def is_bad(change_pct: float | None, effect_pct: float, metric: str) -> bool:
    """A midpoint is bad when it carries the bad end's change of ``metric`` (same sign, at
    least the catalogue's confirmation share of it: ``analysis.policy.carries``)."""
    return policy.carries(change_pct, effect_pct, metric)


def _fmt(change: float | None) -> str:
    return "n/a" if change is None else f"{change:+.2f}%"


def _bad_end(probers: list[Prober], commits: list[str], good: str, outcome: BisectOutcome,
             deadline: float | None, say: Callable[[str], None]) -> Prober | None:
    """The first prober that shows the bad end as a REGRESSION (recorded as a probe)."""
    notes: list[str] = []
    for prober in probers:
        say(f"step 1: bad end {commits[-1][:12]} against good {good[:12]} on "
            f"{prober.metric}, {BAD_END_PAIRS} pairs")
        m = prober.measure(commits[-1], BAD_END_PAIRS, deadline)
        if m.verdict == BUSY:
            raise HostBusy(f"{commits[-1][:12]} on {prober.metric}: {m.reason or m.verdict}")
        changed = m.verdict in DECIDED_CHANGE and m.change_pct is not None
        outcome.probes.append(Probe(commits[-1], m.change_pct, m.verdict, changed,
                                    m.build_s, prober.metric, m.pairs))
        say(f"bad {commits[-1][:12]} vs good {good[:12]} on {prober.metric}: "
            f"{_fmt(m.change_pct)} ({m.verdict}, {m.pairs} pairs)")
        if changed:
            outcome.metric, outcome.metric_note = prober.metric, "; ".join(notes)
            outcome.direction = m.verdict
            if m.verdict == IMPROVEMENT:
                note = "the bad end is an IMPROVEMENT: hunting the commit that brought it"
                outcome.metric_note = "; ".join([*notes, note])
            return prober
        notes.append(f"{prober.metric} saw no regression or improvement at the bad end "
                     f"({m.verdict} {_fmt(m.change_pct)})")
    outcome.reason = "bad is not a REGRESSION (nor an IMPROVEMENT) against good: " + \
        "; ".join(notes)
    return None


def _no_time_for(prober: Prober, pairs: int, outcome: BisectOutcome,
                 deadline: float | None) -> str:
    """Why the next probe is not started ('' when it fits): its pairs at the pace measured
    so far, plus a build as long as the probes' builds took on average."""
    pace = pair_seconds(prober)
    if deadline is None or pace is None:
        return ""
    builds = [p.build_s for p in outcome.probes if p.build_s > 0]
    need = pairs * pace + (sum(builds) / len(builds) if builds else 0.0)
    left = deadline - time.monotonic()
    if need <= left:
        return ""
    return (f"budget: the next probe needs about {need:.0f} s ({pairs} pairs at "
            f"{pace:.0f} s a pair so far, and a build), {max(left, 0):.0f} s left")


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
        outcome.range_left = (good, commits[-1])  # nothing narrowed: the whole range
        return outcome
    except HostBusy as exc:
        outcome.reason, outcome.busy = f"at the bad end {exc}", True
        outcome.builds = max(p.built() for p in probers)
        outcome.range_left = (good, commits[-1])
        return outcome
    if prober is None:
        outcome.builds = max(p.built() for p in probers)
        return outcome
    lo, hi = _midpoints(prober, commits, budget, outcome, deadline, say)
    outcome.builds = max(p.built() for p in probers)
    outcome.range_left = (good if lo < 0 else commits[lo], commits[hi])
    if hi - lo == 1:
        outcome.first_bad = commits[hi]
        outcome.reason = outcome.reason or "found"
    return outcome


def _midpoints(prober: Prober, commits: list[str], budget: Budget, outcome: BisectOutcome,
               deadline: float | None, say: Callable[[str], None]) -> tuple[int, int]:
    """The binary search between good (index -1) and the bad end; returns (lo, hi)."""
    effect = outcome.probes[-1].change_pct or 0.0
    lo, hi = -1, len(commits) - 1  # commits[lo] is good (lo=-1: the good end), commits[hi] bad
    step = 1
    while hi - lo > 1:
        if prober.built() >= budget.max_builds or \
                (deadline is not None and time.monotonic() >= deadline):
            outcome.reason = "budget spent"
            break
        late = _no_time_for(prober, budget.pairs, outcome, deadline)
        if late:
            outcome.reason = late
            break
        mid, step = (lo + hi) // 2, step + 1
        say(f"step {step}: {commits[mid][:12]} ({hi - lo - 1} commit(s) left between good "
            f"and bad), {budget.pairs} pairs on {prober.metric}")
        try:
            m = prober.measure(commits[mid], budget.pairs, deadline)
        except BudgetSpent:
            outcome.reason = "budget spent"
            break
        except HostBusy as exc:
            outcome.reason, outcome.busy = f"at {exc}", True
            break
        bad = is_bad(m.change_pct, effect, prober.metric)
        outcome.probes.append(Probe(commits[mid], m.change_pct, m.verdict, bad, m.build_s,
                                    prober.metric, m.pairs))
        say(f"{commits[mid][:12]}: {_fmt(m.change_pct)} vs good ({m.verdict}) -> "
            f"{'bad' if bad else 'good'}")
        lo, hi = (lo, mid) if bad else (mid, hi)
    return lo, hi
