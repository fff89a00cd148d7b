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
"""

from __future__ import annotations

import math
import statistics
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

from redis_benchmarks_spec.analysis import stats
from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions, steps
from redis_benchmarks_spec.common.lazy import LazyModule
from redis_benchmarks_spec.common.metrics import metric as catalogued

_sps: Any = LazyModule("scipy.stats")

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


def welch_interval(before: Sequence[float], after: Sequence[float],
                   confidence: float = 0.95) -> tuple[float, float]:
    """Welch's t interval of the difference of mean log values, in percent: bounded with
    two runs a side, where the rank interval of 2 against 2 cannot reach 95 %. Used for
    instruction counts only, whose run-to-run spread is a fraction of a percent."""
    b = [math.log(v) for v in before]
    a = [math.log(v) for v in after]
    vb, va = statistics.variance(b) / len(b), statistics.variance(a) / len(a)
    diff = statistics.fmean(a) - statistics.fmean(b)
    if vb + va == 0:
        return stats.log_to_pct(diff), stats.log_to_pct(diff)
    df = (vb + va) ** 2 / (vb ** 2 / (len(b) - 1) + va ** 2 / (len(a) - 1))
    half = float(_sps.t.ppf(0.5 + confidence / 2, df)) * math.sqrt(vb + va)
    return stats.log_to_pct(diff - half), stats.log_to_pct(diff + half)


def confirm(before: Sequence[float], after: Sequence[float], metric: str,
            candidate_pct: float) -> tuple[bool, float, float | None, float | None]:
    """Do re-runs of the two commits show the candidate's step? (confirmed, change %, low %,
    high %): the Hodges-Lehmann shift of ``after`` against ``before`` with its interval (for
    an instruction count with too few runs for a rank interval, Welch's t interval); a
    change is confirmed when it has the candidate's sign, at least half its size, and an
    interval that excludes zero."""
    if not before or not after:
        return False, 0.0, None, None
    shift = stats.unpaired_shift(list(before), list(after), 0.95)
    change = stats.log_to_pct(shift.estimate)
    low, high = stats.log_to_pct(shift.low), stats.log_to_pct(shift.high)
    if not (math.isfinite(low) and math.isfinite(high)) and kind_of(metric) == INSTRUCTIONS \
            and min(len(before), len(after)) >= 2:
        low, high = welch_interval(before, after)
    bounded = math.isfinite(low) and math.isfinite(high)
    clear = bounded and (low > 0 or high < 0)
    same_way = change * candidate_pct > 0 and abs(change) >= abs(candidate_pct) / 2
    return (clear and same_way, change, low if bounded else None, high if bounded else None)
