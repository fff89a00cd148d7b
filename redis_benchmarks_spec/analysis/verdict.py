"""The verdict of one test: REGRESSION, IMPROVEMENT, NO CHANGE or UNKNOWN, and why.

A test is a REGRESSION or an IMPROVEMENT only when all of these hold: the confidence
interval of the change excludes zero, the estimated change is beyond the noise floor, and
the Benjamini-Hochberg adjusted p-value (across every compared test) is below alpha. It is
NO CHANGE when the whole interval lies inside +/- the noise floor. Anything else is
UNKNOWN, with a reason and an estimate of the runs per side that would likely decide it.

One point on a side gives no interval (and a rank test cannot reach significance: with 7
points on the other side its smallest two-sided p is 2/8). Such a test is UNKNOWN unless
the single point is far outside the other side's observed spread: beyond its min/max by
more than the noise floor *and* by more than 3 robust standard deviations (1.4826 * MAD),
*and* its prediction p-value (how unlikely a new run of the other side would land there,
Student t on the log scale with the other side's n - 1 degrees of freedom) survives the
Benjamini-Hochberg adjustment with the other tests. The min/max and MAD conditions alone
are not enough: on 12 % CV noise they flag about 1.6 % of single runs, so one test in two
50-test comparisons would be a false alarm; the p-value joins the false-discovery control.

Nothing here prints; nothing here computes interval estimates (see ``stats``).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

import numpy as np

from redis_benchmarks_spec.analysis import policy, stats
from redis_benchmarks_spec.common import metrics
from redis_benchmarks_spec.common.lazy import LazyModule

sps: Any = LazyModule("scipy.stats")

REGRESSION = "REGRESSION"
IMPROVEMENT = "IMPROVEMENT"
NO_CHANGE = "NO CHANGE"
UNKNOWN = "UNKNOWN"
#: undecided because other processes disturbed the pairs that would have decided it
BUSY = "BUSY"
#: a timed verdict of the opposite sign to the decided instruction count of the same runs:
#: shown with both numbers, never a verdict, never an exit code (analysis.engine)
SUSPECT = "SUSPECT"
VERDICTS = (REGRESSION, IMPROVEMENT, SUSPECT, UNKNOWN, BUSY, NO_CHANGE)

DEFAULT_METRIC = metrics.THROUGHPUT_METRIC
#: the other side needs this many points before a single point can be judged against it
MIN_POINTS_FOR_SINGLE_POINT_RULE = 3
SINGLE_POINT_ROBUST_SDS = 3.0

#: a timed metric's floor on a host without a calibration (``common.metrics``)
DEFAULT_NOISE_FLOOR_PCT = metrics.TIMED_FLOOR_PCT
#: :class:`CompareOptions`' floor when none is given: the catalogue's floor of its metric
CATALOGUE_FLOOR = math.nan
#: the spread of ops/sec's per-pair log ratios assumed on a host never calibrated
UNCALIBRATED_PAIR_SD = metrics.THROUGHPUT_PRIOR_SD
INSTRUCTIONS_NOISE_FLOOR_PCT = metrics.COUNT_FLOOR_PCT


def metric_direction(metric: str) -> int:
    """+1 when higher is better (ops/sec), -1 for latencies, costs and counts
    (``common.metrics``)."""
    return metrics.metric(metric).direction


def default_noise_floor(metric: str) -> float:
    """The noise floor a metric gets unless the user or a calibration gives one: its kind's
    (``common.metrics``: 0.5 % for counts and memory, 2 % for server CPU per op, 5 % for
    throughput and latency)."""
    return policy.floor_pct(metric)


@dataclass(frozen=True)
class HostNoise:
    """A timed metric's noise on one host, from its calibration A/A sessions: per test, the
    noise floor (%) and the least spread of per-pair log ratios, and where they came from
    (:meth:`analysis.noise.NoiseBook.host_noise`)."""

    floors: dict[str, float] = field(default_factory=dict)
    spreads: dict[str, float] = field(default_factory=dict)
    note: str = ""


@dataclass(frozen=True)
class CompareOptions:
    """Decision thresholds of a comparison; ``floors`` are tests' own noise floors (a
    host's calibration, :meth:`analysis.noise.NoiseBook.floors`), ``noise_floor_pct`` the
    floor of every other test, ``floor_note`` says where the floors came from.

    Without a ``noise_floor_pct`` the options take the catalogue's floor of their metric
    (0.5 % for a count, not the timed 5 %); :meth:`for_metric` says so at the call. A copy
    for another metric (``dataclasses.replace(options, metric=...)``) keeps the floor it
    is given: build it with :meth:`for_metric` or :meth:`for_deterministic` instead."""

    noise_floor_pct: float = CATALOGUE_FLOOR
    alpha: float = 0.05
    confidence: float = 0.95
    metric: str = DEFAULT_METRIC
    max_runs: int = 200
    floors: dict[str, float] = field(default_factory=dict)
    floor_note: str = ""
    # a timed metric's least spread of per-pair log ratios per test (the host's, from its
    # calibration), and the one assumed for other tests (0: none; deterministic metrics)
    spreads: dict[str, float] = field(default_factory=dict)
    default_spread: float = 0.0
    # tests whose count (the metric) their deployment moves, and why ("2 io-threads"):
    # judged as ``common.metrics.host_dependent`` says (``analysis.session_runs``)
    host_dependent: dict[str, str] = field(default_factory=dict)
    # where a test's least spread came from when it is not the host's calibration (a base
    # counted once at its push: ``analysis.engine.stored_base_spreads``)
    spread_sources: dict[str, str] = field(default_factory=dict)

    def __post_init__(self) -> None:
        if math.isnan(self.noise_floor_pct):
            object.__setattr__(self, "noise_floor_pct", policy.floor_pct(self.metric))

    @classmethod
    def for_metric(cls, metric: str, **overrides: Any) -> CompareOptions:
        """Options judging ``metric`` with the catalogue's floor of it (``common.metrics``);
        ``overrides`` set any other field (a user's ``--noise-floor`` among them)."""
        return cls(**{"metric": metric, "noise_floor_pct": policy.floor_pct(metric),
                      **overrides})

    def with_metric(self, metric: str) -> CompareOptions:
        """These options' alpha, confidence and run limit judging ``metric`` instead, with
        the catalogue's floor of it (nothing of a host's calibration of the old metric)."""
        return CompareOptions.for_metric(metric, alpha=self.alpha, confidence=self.confidence,
                                         max_runs=self.max_runs)

    def kind_of(self, test: str) -> metrics.Metric:
        """The catalogue's entry judging ``test``: the metric's, or its host-dependent form
        where the test's deployment moves its counts."""
        entry = metrics.metric(self.metric)
        why = self.host_dependent.get(test)
        return metrics.host_dependent(entry, why) if why else entry

    def with_host(self, noise: HostNoise | None) -> CompareOptions:
        """These options judging a timed metric with the host's noise (for tests it does not
        know, the floor and the pair spread of the metric's kind, ``common.metrics``)."""
        kind = metrics.metric(self.metric)
        return replace(self, floors=dict(noise.floors) if noise else {},
                       spreads=dict(noise.spreads) if noise else {},
                       default_spread=kind.prior_sd, host_dependent={}, spread_sources={},
                       floor_note=(noise.note if noise and noise.note else
                                   "no calibration of this host: the uncalibrated floor and "
                                   f"the {kind.spread_source}"))

    def for_deterministic(self, metric: str, floor_pct: float) -> CompareOptions:
        """These options judging a deterministic metric (instruction counts, dataset
        memory): its own floor, and none of a timed metric's host noise."""
        return replace(self, metric=metric, noise_floor_pct=floor_pct, floors={}, spreads={},
                       default_spread=0.0, floor_note="", host_dependent={},
                       spread_sources={})

    def floor_of(self, test: str) -> float:
        """The noise floor that judges ``test``."""
        return self.floors.get(test, self.noise_floor_pct)

    def spread_of(self, test: str) -> tuple[float, str]:
        """The least spread ``test``'s interval may assume, and where it comes from."""
        if test in self.spreads:
            return self.spreads[test], self.spread_sources.get(test, "calibrated on this host")
        if test in self.host_dependent:
            return self.kind_of(test).prior_sd, self.kind_of(test).prior_source
        return self.default_spread, \
            f"the {metrics.metric(self.metric).kind} prior (no calibration of this host)"


@dataclass(frozen=True)
class SinglePoint:
    """The one-point rule applied to a test: why, whether the point is far outside the
    other side's spread, and its prediction p-value (NaN when not computable)."""

    reason: str
    beyond: bool = False
    p_value: float = math.nan


@dataclass(frozen=True)
class Evidence:
    """What a verdict is decided from; percentages are comparison relative to baseline.

    ``ci_*`` are None for an unbounded interval; ``log_sd`` is the per-side dispersion on
    the log scale, used to estimate the runs needed when the interval is unbounded.
    """

    metric: str
    n: int  # points on the smaller side (pairs when paired)
    change_pct: float | None
    ci_low_pct: float | None
    ci_high_pct: float | None
    p_adjusted: float | None
    log_sd: float | None = None
    single_point: SinglePoint | None = None

    @property
    def bounded(self) -> bool:
        return self.ci_low_pct is not None and self.ci_high_pct is not None

    def ci_text(self) -> str:
        return f"CI [{self.ci_low_pct:+.2f}%, {self.ci_high_pct:+.2f}%]"


@dataclass(frozen=True)
class Decision:
    """A verdict, the sentence explaining it, and for UNKNOWN the runs per side likely to
    decide it (None when it cannot be estimated)."""

    verdict: str
    reason: str
    runs_needed: int | None = None


# --- one point on a side -------------------------------------------------------------------


def prediction_p(single: float, others: Sequence[float]) -> float:
    """Two-sided p of a new run landing at ``single`` given ``others`` (t on log values)."""
    logs = np.log(np.asarray(others, dtype=float))
    n = logs.size
    if n < 2:
        return math.nan
    distance = abs(math.log(single) - float(logs.mean()))
    scale = float(logs.std(ddof=1)) * math.sqrt(1.0 + 1.0 / n)
    if scale == 0.0:
        return 0.0 if distance > 0 else 1.0
    return float(2.0 * sps.t.sf(distance / scale, df=n - 1))


def _beyond_spread(single: float, others: Sequence[float], floor_pct: float) -> bool:
    """True when ``single`` lies outside others' [min, max] by > floor and > 3 robust SDs."""
    lo, hi = min(others), max(others)
    margin = SINGLE_POINT_ROBUST_SDS * stats.robust_sd(others)
    if single > hi:
        return (single - hi) / hi * 100 > floor_pct and single - hi > margin
    if single < lo:
        return (lo - single) / lo * 100 > floor_pct and lo - single > margin
    return False


def single_point_check(baseline: Sequence[float], comparison: Sequence[float],
                       floor_pct: float) -> SinglePoint | None:
    """The one-point rule for unpaired samples, or None when both sides have 2+ points."""
    nb, nc = len(baseline), len(comparison)
    if nb != 1 and nc != 1:
        return None
    if nb == 1 and nc == 1:
        return SinglePoint("1 point on each side: no spread to judge a change against")
    side, single, others = ("comparison", comparison[0], baseline) if nc == 1 else \
        ("baseline", baseline[0], comparison)
    reason = f"1 point on {side} side"
    if len(others) < MIN_POINTS_FOR_SINGLE_POINT_RULE:
        return SinglePoint(f"{reason}, and fewer than {MIN_POINTS_FOR_SINGLE_POINT_RULE} "
                           "on the other")
    p_value = prediction_p(single, others)
    if _beyond_spread(single, others, floor_pct):
        return SinglePoint(f"{reason}: it lies beyond the other side's range by more than the "
                           f"noise floor and {SINGLE_POINT_ROBUST_SDS:g} robust SDs",
                           True, p_value)
    return SinglePoint(f"{reason}: not far enough outside the other side's observed spread",
                       False, p_value)


# --- the decision --------------------------------------------------------------------------


def _direction_verdict(evidence: Evidence) -> str:
    worse = (evidence.change_pct or 0.0) * metric_direction(evidence.metric) < 0
    return REGRESSION if worse else IMPROVEMENT


def _p_text(evidence: Evidence) -> str:
    return "n/a" if evidence.p_adjusted is None else f"{evidence.p_adjusted:.3g}"


def _decide_single(evidence: Evidence, single: SinglePoint, options: CompareOptions) -> Decision:
    if not single.beyond:
        return Decision(UNKNOWN, single.reason)
    if evidence.p_adjusted is not None and evidence.p_adjusted < options.alpha:
        return Decision(_direction_verdict(evidence),
                        f"{single.reason}; adjusted prediction p={_p_text(evidence)}")
    return Decision(UNKNOWN, f"{single.reason}, but its adjusted prediction "
                             f"p={_p_text(evidence)} is not below alpha={options.alpha:g}")


def _is_significant(evidence: Evidence, options: CompareOptions) -> bool:
    if not evidence.bounded or evidence.p_adjusted is None:
        return False
    assert evidence.ci_low_pct is not None and evidence.ci_high_pct is not None
    excludes_zero = evidence.ci_low_pct > 0 or evidence.ci_high_pct < 0
    beyond_floor = abs(evidence.change_pct or 0.0) > options.noise_floor_pct
    return excludes_zero and beyond_floor and evidence.p_adjusted < options.alpha


def _inside_floor(evidence: Evidence, floor: float) -> bool:
    return (evidence.ci_low_pct is not None and evidence.ci_high_pct is not None
            and -floor < evidence.ci_low_pct and evidence.ci_high_pct < floor)


def _unknown_reason(evidence: Evidence, options: CompareOptions) -> str:
    floor = options.noise_floor_pct
    if not evidence.bounded:
        return f"too few points for a {options.confidence:.0%} interval (n={evidence.n})"
    assert evidence.ci_low_pct is not None and evidence.ci_high_pct is not None
    # the interval and the runs needed have their own columns: the reason says only why
    if not (evidence.ci_low_pct > 0 or evidence.ci_high_pct < 0):
        return f"interval includes 0 and reaches beyond the ±{floor:g}% noise floor"
    if abs(evidence.change_pct or 0.0) <= floor:
        return f"interval excludes 0 but the change is within the ±{floor:g}% noise floor"
    return (f"interval excludes 0 but the adjusted p is not below alpha={options.alpha:g} "
            "after Benjamini-Hochberg across tests")


def runs_needed(evidence: Evidence, options: CompareOptions) -> int | None:
    """Runs per side that would likely shrink the interval enough to decide.

    Deciding needs the half-width below the distance between the estimate and the nearest
    decision boundary (0 beyond the floor, the floor inside it). The half-width scales like
    ``1/sqrt(n)``; with no bounded interval it is approximated from the log-scale SD.
    """
    change = abs(evidence.change_pct or 0.0)
    floor = options.noise_floor_pct
    target = change if change > floor else floor - change
    if evidence.bounded:
        assert evidence.ci_low_pct is not None and evidence.ci_high_pct is not None
        half_width = (evidence.ci_high_pct - evidence.ci_low_pct) / 2
        return stats.runs_needed(evidence.n, half_width, target, options.max_runs)
    if evidence.log_sd is None:
        return None
    z = float(sps.norm.ppf(0.5 + options.confidence / 2))
    # two samples of n points: half-width ~ 100 * z * sd * sqrt(2 / n), solved for n
    half_width_at_1 = 100 * z * evidence.log_sd * math.sqrt(2)
    needed = stats.runs_needed(1, half_width_at_1, target, options.max_runs)
    return min(options.max_runs, max(evidence.n + 1, needed))


def _verdict_only(evidence: Evidence, options: CompareOptions) -> Decision:
    floor = options.noise_floor_pct
    if evidence.single_point is not None:
        return _decide_single(evidence, evidence.single_point, options)
    if _inside_floor(evidence, floor):
        return Decision(NO_CHANGE, f"interval inside the ±{floor:g}% noise floor")
    if _is_significant(evidence, options):
        return Decision(_direction_verdict(evidence),
                        f"interval excludes 0, change beyond the ±{floor:g}% noise floor, "
                        f"adjusted p below alpha={options.alpha:g}")
    return Decision(UNKNOWN, _unknown_reason(evidence, options))


def decide(evidence: Evidence, options: CompareOptions) -> Decision:
    """The verdict of one test, its reason and, when UNKNOWN, the runs likely to decide it."""
    decision = _verdict_only(evidence, options)
    if decision.verdict != UNKNOWN:
        return decision
    needed = runs_needed(evidence, options)
    if needed is None:
        return decision
    return Decision(UNKNOWN, decision.reason, needed)
