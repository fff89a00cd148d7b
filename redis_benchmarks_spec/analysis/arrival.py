"""A tracked branch's new point judged on arrival: does its series step here?

The newest point of a series (``by.branch``) is judged against the series' history with the
package's change-point method (:func:`changepoints.steps`, Otava's E-Divisive with a t test
of the split). A step whose first point after it is the newest point, or one of the last
``tail`` points (timed metrics need a few points after a step before the t test can see it),
is a *candidate*: a change between two commits that the lab must confirm before anyone is
told (``agent.watch``).

Instruction counts and timed metrics are judged apart. Each series' own noise is read from
its history (the robust spread of its log values since its last change point), and a step
smaller than ``noise_factor`` times that spread, or than the metric's candidate floor (the
catalogue's, ``analysis.policy``), is not a candidate: instruction counts drift by about
0.15 % run to run, timed metrics by 10-15 % here (DESIGN.md), so one threshold for both
would either miss every instruction change or raise a false one on every timed series.

The host-fingerprint gate comes first: only the points taken under the newest point's
fingerprint are history, so the old host's points are never compared with the new host's.
A newest point whose fingerprint differs from the point before it is a ``host-changed``
boundary, never a candidate. The watch then has the last commit before the boundary
measured again on the new host (:func:`series_of` places that *re-measure* first among the
new host's points), and the new host's first points are judged against it
(:func:`judge_boundary`): a change at the boundary commit, or at one of the next few, is a
candidate like any other, confirmed the usual way.

A candidate is confirmed (:func:`confirm`) by the A/B engine itself, one call of
``analysis.engine.judge_pairs`` on fresh re-runs of the two commits paired by round, with
the catalogue's floor and prior for the metric (``common.metrics``): the runs that raised a
candidate never vote on it.
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass, replace
from itertools import pairwise

from redis_benchmarks_spec.analysis import policy, stats
from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions, steps
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    Comparison,
)
from redis_benchmarks_spec.analysis.engine import judge_pairs
from redis_benchmarks_spec.common.metrics import metric as catalogued

INSTRUCTIONS = "instructions"
TIMED = "timed"


@dataclass(frozen=True)
class KindOptions:
    """How one kind of metric is judged (no step under the metric's candidate floor is a
    candidate either: ``analysis.policy.candidate_floor_pct``)."""

    noise_factor: float  # nor one smaller than this many times the series' own spread
    tail: int  # a step whose first point after is among the last ``tail`` is new
    min_history: int  # points of history (same fingerprint) before anything is judged
    max_pvalue: float = 1e-4
    #: a new host's point against the re-measure, one run against one: this many times the
    #: series' spread on the old host (the new host has none of its own yet)
    boundary_factor: float = 6.0


#: instruction counts: a step past the candidate floor on a 0.15 %-noise count is
#: unmistakable on one point
INSTRUCTION_OPTIONS = KindOptions(noise_factor=6.0, tail=1, min_history=4)
#: timed metrics: a step is seen only with a few points after it (the t test of the split);
#: at a host boundary one run is weighed against one (the difference of two runs spreads
#: sqrt(2) times one run's) up to ``min_history`` times: 5 spreads, 3.5 of the difference's
#: (``benchmarks/null_year.py``, a host change every 10 commits, 480 boundaries of a
#: series: 20 null candidates and one false alert at 4, 14 and none at 5)
TIMED_OPTIONS = KindOptions(noise_factor=2.0, tail=5, min_history=10,
                            boundary_factor=5.0)


def kind_of(metric: str) -> str:
    """``instructions`` for a deterministic metric (counts of work, a dataset's memory:
    ``common.metrics``), else ``timed``."""
    return INSTRUCTIONS if catalogued(metric).deterministic else TIMED


def options_for(metric: str) -> KindOptions:
    return INSTRUCTION_OPTIONS if kind_of(metric) == INSTRUCTIONS else TIMED_OPTIONS


@dataclass(frozen=True)
class ArrivalPoint:
    """One point of a series: its commit, value and the host fingerprint id it ran under;
    ``remeasure``: the last commit before a host boundary, measured again on the new host;
    ``runs``: how many runs its value is the median of."""

    commit: str
    value: float
    fingerprint: str = ""
    remeasure: bool = False
    runs: int = 1


def series_of(points: Sequence[ArrivalPoint]) -> list[ArrivalPoint]:
    """The series arrival judges, from one point per (commit, fingerprint) in order of first
    arrival: a point of the last commit before a host boundary under the new host's
    fingerprint is that host's re-measure, placed first among the new host's points; any
    other point of a commit already seen under another fingerprint (a re-run on a later
    host) is left out, so no host's points are mixed with another's."""
    out: list[ArrivalPoint] = []
    seen: set[str] = set()
    for p in points:
        if p.commit not in seen:
            seen.add(p.commit)
            out.append(p)
            continue
        at = _boundary_after(out, p)
        if at is not None:
            out.insert(at, replace(p, remeasure=True))
    return out


def _boundary_after(points: Sequence[ArrivalPoint], p: ArrivalPoint) -> int | None:
    """Where the re-measure ``p`` goes: the index of the first point of the boundary from
    ``p.commit`` to ``p``'s fingerprint (None: no such boundary, or it has its re-measure)."""
    for i in range(1, len(points)):
        before, after = points[i - 1], points[i]
        if before.commit == p.commit and after.fingerprint == p.fingerprint != \
                before.fingerprint and not after.remeasure:
            return i
    return None


@dataclass(frozen=True)
class Judgement:
    """What the newest point says: ``none``, ``candidate`` or ``host-changed``."""

    outcome: str
    before_commit: str = ""  # last commit before the step (or the boundary)
    after_commit: str = ""  # first commit after it
    change_pct: float = 0.0
    low_pct: float | None = None
    high_pct: float | None = None
    noise_pct: float = 0.0  # the series' spread the step was weighed against
    p_value: float = 1.0


def noise_pct(values: Sequence[float]) -> float:
    """A series' run-to-run spread in percent: the robust SD of its log values."""
    logs = [math.log(v) for v in values if v > 0]
    if len(logs) < 3:
        return 0.0
    return 100.0 * stats.robust_sd(logs)


def spread_pct(values: Sequence[float]) -> float:
    """A series' whole spread in percent, the plain SD of its log values: a host boundary
    weighs one run against one, so every level a count sits on counts (the robust SD of a
    count on two levels 2 % apart can be one level's: ``benchmarks/null_year.py``)."""
    logs = [math.log(v) for v in values if v > 0]
    return 100.0 * statistics.stdev(logs) if len(logs) >= 3 else 0.0


def _same_host(points: Sequence[ArrivalPoint]) -> list[ArrivalPoint]:
    """The trailing points taken under the newest point's fingerprint."""
    newest = points[-1].fingerprint
    start = len(points)
    while start > 0 and points[start - 1].fingerprint == newest:
        start -= 1
    return list(points[start:])


def judge(points: Sequence[ArrivalPoint], metric: str) -> Judgement:
    """Judge the newest of ``points`` (oldest first, one per commit) against the rest."""
    if len(points) < 2:
        return Judgement("none")
    if points[-1].fingerprint != points[-2].fingerprint:
        return Judgement("host-changed", points[-2].commit, points[-1].commit)
    options = options_for(metric)
    same = _same_host(points)
    if len(same) - 1 < options.min_history:
        young = _young(points, metric)
        return young if young.after_commit == points[-1].commit else Judgement("none")
    values = [p.value for p in same]
    found = steps(values, ChangePointOptions(max_pvalue=options.max_pvalue,
                                             window=max(len(values), 8)))
    if not found or found[-1].index < len(values) - options.tail:
        return Judgement("none")
    step = found[-1]
    start = found[-2].index if len(found) > 1 else 0
    noise = noise_pct(values[start:step.index])
    if abs(step.change_pct) < max(policy.candidate_floor_pct(metric),
                                  options.noise_factor * noise):
        return Judgement("none", noise_pct=noise)
    return Judgement("candidate", same[step.index - 1].commit, same[step.index].commit,
                     step.change_pct, step.ci_low_pct, step.ci_high_pct, noise, step.p_value)


def judge_boundary(points: Sequence[ArrivalPoint], metric: str) -> Judgement:
    """The new host's first points against its re-measure of the last commit before the
    boundary (the series' ``remeasure`` point, :func:`series_of`), in order: the first that
    differs from it by more than the candidate floor and ``boundary_factor`` times the series'
    spread on the old host is a candidate between it and the point before it (``none``
    when none does, or the new host already has its own history to be judged on)."""
    if len(points) < 2 or len(_same_host(points)) - 1 >= options_for(metric).min_history:
        return Judgement("none")
    return _young(points, metric)


def _young(points: Sequence[ArrivalPoint], metric: str) -> Judgement:
    """:func:`judge_boundary` of a series whose new host has fewer points than its history
    needs: the first of them that differs from the re-measure."""
    same = _same_host(points)
    if not same[0].remeasure or len(same) < 2 or same[0].value <= 0:
        return Judgement("none")
    options = options_for(metric)
    noise = _old_host_spread(points[:len(points) - len(same)], options)
    if noise is None:
        return Judgement("none")  # no spread to weigh a point with: its own history will
    bar = max(policy.candidate_floor_pct(metric), options.boundary_factor * noise)
    for previous, point in pairwise(same):
        change = 100.0 * (point.value / same[0].value - 1)
        if abs(change) >= bar:
            return Judgement("candidate", previous.commit, point.commit, change, None, None,
                             noise)
    return Judgement("none", noise_pct=noise)


def _old_host_spread(earlier: Sequence[ArrivalPoint], options: KindOptions) -> float | None:
    """The old host's spread (:func:`spread_pct`) since its last step, or over all its points
    when too few follow that step (None: fewer than 3 points)."""
    old = [p.value for p in _same_host(earlier)] if earlier else []
    found = steps(old, ChangePointOptions(max_pvalue=options.max_pvalue,
                                          window=max(len(old), 8))) if len(old) > 2 else []
    since = old[found[-1].index:] if found else old
    window = since if len(since) >= options.min_history else old
    return spread_pct(window) if len(window) >= 3 else None


@dataclass(frozen=True)
class Confirmation:
    """The engine's verdict on a candidate's re-runs (:func:`confirm`): its one row, whether
    it shows the candidate's step again, and whether another round could still decide it."""

    row: Comparison  # the engine's row: change, interval, verdict, reason, pairs judged
    pairs: tuple[tuple[float, float], ...]  # (before, after) re-runs, one pair a round
    confirmed: bool = False
    undecided: bool = False  # UNKNOWN, with the candidate's sign and half its size

    @property
    def change_pct(self) -> float:
        return 0.0 if self.row.change_pct is None else self.row.change_pct

    @property
    def low_pct(self) -> float | None:
        return self.row.ci_low_pct

    @property
    def high_pct(self) -> float | None:
        return self.row.ci_high_pct


def rerun_pairs(before: Sequence[float], after: Sequence[float]
                ) -> tuple[tuple[float, float], ...]:
    """The re-runs of the two commits paired by round (the watch asks them interleaved:
    before, after, before, after...); a round one side lacks is left out."""
    return tuple(zip(before, after, strict=False))


def confirm_options(metric: str) -> CompareOptions:
    """The engine's options for a confirmation of ``metric``: the catalogue's floor; a
    timed metric with its kind's prior spread (the lab's hosts are not calibrated)."""
    options = CompareOptions.for_metric(metric)
    if catalogued(metric).deterministic:
        return options.for_deterministic(metric, options.noise_floor_pct)
    return options.with_host(None)


def confirm(before: Sequence[float], after: Sequence[float], metric: str,
            candidate_pct: float, test: str = "candidate") -> Confirmation:
    """Do the re-runs of the two commits show the candidate's step? One call of the A/B
    engine (``analysis.engine.judge_pairs``) on the re-runs paired by round, never on the
    runs that raised the candidate (the caller leaves them out): confirmed when the engine
    decides a change (REGRESSION or IMPROVEMENT, past the metric's floor) that carries
    the candidate's change (its sign, and the catalogue's share of its size: half)."""
    pairs = rerun_pairs(before, after)
    report = judge_pairs({test: list(pairs)}, confirm_options(metric))
    row = report.rows[0]
    change = 0.0 if row.change_pct is None else row.change_pct
    same_way = policy.carries(change, candidate_pct, metric)
    decided = row.verdict in (REGRESSION, IMPROVEMENT)
    return Confirmation(row, pairs, confirmed=decided and same_way,
                        undecided=row.verdict == UNKNOWN and same_way)
