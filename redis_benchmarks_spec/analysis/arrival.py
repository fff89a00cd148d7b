"""A tracked branch's new point judged on arrival: does its series step here?

The newest point of a series (``by.branch``) is judged against the series' history with the
package's change-point method (:func:`changepoints.steps`, Otava's E-Divisive with a t test
of the split). A step whose first point after it is the newest point, or one of the last
``tail`` points (timed metrics need a few points after a step before the t test can see it),
is a *candidate*: a change between two commits that the lab must confirm before anyone is
told (``agent.watch``).

Instruction counts and timed metrics are judged apart. Each series' own noise is read from
its history (the robust spread of its log values since its last change point), and a step
smaller than ``noise_factor`` times that spread, or than the kind's floor, is not a
candidate: instruction counts drift by about 0.15 % run to run, timed metrics by 10-15 %
here (DESIGN.md), so one threshold for both would either miss every instruction change or
raise a false one on every timed series.

The host-fingerprint gate comes first: only the points taken under the newest point's
fingerprint are history. A newest point whose fingerprint differs from the point before it
is a ``host-changed`` boundary, never a candidate.

A candidate is confirmed (:func:`confirm`) by the A/B engine itself, one call of
``analysis.engine.judge_pairs`` on fresh re-runs of the two commits paired by round, with
the catalogue's floor and prior for the metric (``common.metrics``): the runs that raised a
candidate never vote on it.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass

from redis_benchmarks_spec.analysis import stats
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
    """How one kind of metric is judged."""

    floor_pct: float  # no step smaller than this is a candidate
    noise_factor: float  # nor one smaller than this many times the series' own spread
    tail: int  # a step whose first point after is among the last ``tail`` is new
    min_history: int  # points of history (same fingerprint) before anything is judged
    max_pvalue: float = 1e-4


#: instruction counts: a 1 % step on a 0.15 %-noise count is unmistakable on one point
INSTRUCTION_OPTIONS = KindOptions(floor_pct=1.0, noise_factor=6.0, tail=1, min_history=4)
#: timed metrics: a step is seen only with a few points after it (the t test of the split)
TIMED_OPTIONS = KindOptions(floor_pct=5.0, noise_factor=2.0, tail=5, min_history=10)


def kind_of(metric: str) -> str:
    """``instructions`` for a deterministic metric (counts of work, a dataset's memory:
    ``common.metrics``), else ``timed``."""
    return INSTRUCTIONS if catalogued(metric).deterministic else TIMED


def options_for(metric: str) -> KindOptions:
    return INSTRUCTION_OPTIONS if kind_of(metric) == INSTRUCTIONS else TIMED_OPTIONS


@dataclass(frozen=True)
class ArrivalPoint:
    """One point of a series: its commit, value and the host fingerprint id it ran under."""

    commit: str
    value: float
    fingerprint: str = ""


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
        return Judgement("none")
    values = [p.value for p in same]
    found = steps(values, ChangePointOptions(max_pvalue=options.max_pvalue,
                                             window=max(len(values), 8)))
    if not found or found[-1].index < len(values) - options.tail:
        return Judgement("none")
    step = found[-1]
    start = found[-2].index if len(found) > 1 else 0
    noise = noise_pct(values[start:step.index])
    if abs(step.change_pct) < max(options.floor_pct, options.noise_factor * noise):
        return Judgement("none", noise_pct=noise)
    return Judgement("candidate", same[step.index - 1].commit, same[step.index].commit,
                     step.change_pct, step.ci_low_pct, step.ci_high_pct, noise, step.p_value)


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
    entry = catalogued(metric)
    options = CompareOptions(metric=metric, noise_floor_pct=entry.floor_pct)
    if entry.deterministic:
        return options.for_deterministic(metric, entry.floor_pct)
    return options.with_host(None)


def confirm(before: Sequence[float], after: Sequence[float], metric: str,
            candidate_pct: float, test: str = "candidate") -> Confirmation:
    """Do the re-runs of the two commits show the candidate's step? One call of the A/B
    engine (``analysis.engine.judge_pairs``) on the re-runs paired by round, never on the
    runs that raised the candidate (the caller leaves them out): confirmed when the engine
    decides a change (REGRESSION or IMPROVEMENT, past the metric's floor) with the
    candidate's sign and at least half its size."""
    pairs = rerun_pairs(before, after)
    report = judge_pairs({test: list(pairs)}, confirm_options(metric))
    row = report.rows[0]
    change = 0.0 if row.change_pct is None else row.change_pct
    same_way = change * candidate_pct > 0 and abs(change) >= abs(candidate_pct) / 2
    decided = row.verdict in (REGRESSION, IMPROVEMENT)
    return Confirmation(row, pairs, confirmed=decided and same_way,
                        undecided=row.verdict == UNKNOWN and same_way)
