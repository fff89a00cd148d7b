"""Paired (interleaved A/B) shift estimates that can decide with 5-6 pairs.

The exact signed-rank interval of :func:`stats.paired_shift` is distribution-free but has a
floor: with ``n`` pairs its smallest two-sided p-value is ``2 / 2**n`` (0.031 for 6 pairs)
and it has no 95 % interval below 6 pairs, so after a Benjamini-Hochberg step over a few
tests even a -65 % change stays UNKNOWN. The Student t interval on the per-pair log ratios
has no such floor, and its assumptions hold better for pairs than they look:

* **Symmetry.** ``log(c_i / b_i) = delta + (e_c - e_b)``. When the two runs of a pair have the
  same noise distribution (same machine, same pinning, interleaved A B B A), ``e_c - e_b`` is
  the difference of two identically distributed variables, which is symmetric whatever the
  shape of the run-to-run noise (skewed throughput noise included). Under the null it is
  exactly symmetric about 0.
* **Tails.** For observations symmetric about 0 the one-sample t test is conservative at the
  usual levels (Efron 1969, "Student's t-test under symmetry conditions", JASA 64): heavy
  tails widen the interval (lose power) rather than produce false alarms.
* **Outlying pairs widen, never narrow.** One pair far from the others inflates the
  standard deviation, so the t interval gets wider: the evidence of a far pair is weighed,
  not trimmed away. The engine used to switch to a 20 % trimmed mean (Tukey-McLaughlin)
  when Shapiro-Wilk rejected; that switch narrowed the interval exactly when a pair was
  strange, and its A/A false-decision rate at 5 pairs was 7-10 % (``analysis.null_check``;
  a real A/A on a 16-vCPU guest was called a -5 % REGRESSION by it). The trimmed mean is
  kept only for that table.

Which method is used depends on the pair count and what is known of the noise, never on
which gives the smaller p: the t interval from :data:`MIN_T_PAIRS` pairs (from 3 with a
prior or a timed metric's least spread), below it the signed-rank interval (which has no
95 % interval below 6 pairs). ``benchmarks/false_decisions.py`` simulates A/A
sessions of 3 to 30 pairs under normal, heavy-tailed, outlying, drifting, bimodal and
order-biased noise and resamples recorded real A/A sessions; ``tests/test_false_decisions.py``
holds the engine's pick to alpha.

* **A known noise level** (:class:`NoisePrior`: the spread of the same test's per-pair log
  ratios in a calibration A/A of this platform, :mod:`analysis.noise`) is pooled with the
  pairs' own spread, as rustc-perf and bencher use a benchmark's recorded noise. The pooled
  variance has the degrees of freedom of both, so 3-4 pairs can decide; the interval uses the
  larger of the pooled and the own spread, and a session whose spread is significantly larger
  (F test) keeps its own. That holds the false-alarm rate at alpha only when the noise is
  what it was at calibration: true of instruction counts (their spread comes from the
  binary and its hash seeds, not from the host's load), not of timed metrics (simulated:
  a session 2-3x noisier than its prior flags 8-19 % of A/A tests at 2-5 pairs), so
  :mod:`analysis.engine` applies priors to deterministic metrics only.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from redis_benchmarks_spec.analysis.stats import ShiftEstimate, paired_shift
from redis_benchmarks_spec.common.lazy import LazyModule

sps: Any = LazyModule("scipy.stats")

#: fewer pairs than this use the signed-rank interval when nothing else is known of the
#: noise: with bimodal noise (hash seeds), 3-4 pairs all of one sign give tiny t p-values
#: too often for a Benjamini-Hochberg family (analysis.null_check: 8-9 % of ten-test A/A
#: sessions at 3-4 pairs)
MIN_T_PAIRS = 5
#: with a known least spread (timed metrics: the host's) or a prior, the t interval from 3
MIN_KNOWN_SPREAD_PAIRS = 3
#: Shapiro-Wilk p below this names an outlying pair in the method (it widens the interval)
NORMALITY_ALPHA = 0.05
TRIM = 0.2
#: with a noise prior the t interval is used from this many pairs
MIN_PRIOR_PAIRS = 3
#: a session whose spread exceeds its prior's at this level is judged on its own pairs
PRIOR_CHECK_ALPHA = 0.05

T_METHOD = "mean of per-pair log ratios, Student t interval"
OUTLYING = " (an outlying pair widens it)"
TRIMMED_METHOD = "20 % trimmed mean of per-pair log ratios, Tukey-McLaughlin interval"
PRIOR_METHOD = ("mean of per-pair log ratios, Student t interval on the spread pooled with "
                "{source}")


@dataclass(frozen=True)
class NoisePrior:
    """The spread of a test's per-pair log ratios known from elsewhere (a calibration A/A
    of the same test, metric and platform): its SD and degrees of freedom."""

    sd: float
    df: int
    source: str = "a calibration A/A"
    # False for a spread assumed, not measured (a host never calibrated): it may widen an
    # interval but does not let fewer than MIN_T_PAIRS pairs decide
    measured: bool = True

    def __post_init__(self) -> None:
        if not (math.isfinite(self.sd) and self.sd >= 0 and self.df >= 1):
            raise ValueError(f"a noise prior needs sd >= 0 and df >= 1: {self}")


@dataclass(frozen=True)
class TFit:
    """Mean, standard error and degrees of freedom of the per-pair log ratios."""

    mean: float
    se: float
    df: int

    def interval(self, confidence: float) -> tuple[float, float]:
        """The t interval at ``confidence`` (degenerate when every ratio is equal)."""
        half = float(sps.t.ppf(0.5 + confidence / 2, self.df)) * self.se
        return self.mean - half, self.mean + half

    def p_value(self) -> float:
        """Two-sided p of the t test of mean zero."""
        if self.se == 0.0:
            return 1.0 if self.mean == 0.0 else 0.0
        return float(2.0 * sps.t.sf(abs(self.mean) / self.se, self.df))


def log_ratios(pairs: Sequence[tuple[float, float]]) -> np.ndarray:
    """``log(comparison / baseline)`` per pair; values must be positive and finite."""
    arr = np.asarray(pairs, dtype=float).reshape(-1, 2)
    if arr.size == 0 or np.any(arr <= 0) or not np.all(np.isfinite(arr)):
        raise ValueError("values must be finite and positive for a log-scale comparison")
    return np.log(arr[:, 1]) - np.log(arr[:, 0])


def t_fit(ratios: np.ndarray) -> TFit:
    """The t fit of at least two log ratios."""
    n = int(ratios.size)
    if n < 2:
        raise ValueError("a t interval needs at least 2 pairs")
    return TFit(float(ratios.mean()), float(ratios.std(ddof=1) / math.sqrt(n)), n - 1)


def t_assumptions(ratios: np.ndarray) -> str:
    """Empty when the t interval may be used, else the reason it may not."""
    if ratios.size < MIN_T_PAIRS:
        return f"fewer than {MIN_T_PAIRS} pairs"
    if np.ptp(ratios) == 0.0:
        return ""
    p = float(sps.shapiro(ratios).pvalue)
    if p < NORMALITY_ALPHA:
        return f"Shapiro-Wilk p={p:.3g} < {NORMALITY_ALPHA:g} (an outlying pair)"
    return ""


def t_shift(pairs: Sequence[tuple[float, float]], confidence: float = 0.95) -> ShiftEstimate:
    """Mean per-pair log ratio with its Student t interval and p-value."""
    fit = t_fit(log_ratios(pairs))
    low, high = fit.interval(confidence)
    return ShiftEstimate(fit.mean, low, high, fit.p_value(), T_METHOD,
                         f"own pairs ({fit.df + 1})")


def trimmed_shift(ratios: np.ndarray, confidence: float = 0.95) -> ShiftEstimate:
    """The Tukey-McLaughlin interval of the 20 % trimmed mean of ``ratios`` (5+ values)."""
    n = int(ratios.size)
    g = math.floor(TRIM * n)
    df = n - 2 * g - 1
    if df < 1:
        raise ValueError("a trimmed-mean interval needs at least 3 values left after trimming")
    mean = float(sps.trim_mean(ratios, TRIM))
    winsorized = np.clip(ratios, *np.sort(ratios)[[g, n - g - 1]])
    se = float(np.std(winsorized, ddof=1) / ((1 - 2 * TRIM) * math.sqrt(n)))
    fit = TFit(mean, se, df)
    low, high = fit.interval(confidence)
    return ShiftEstimate(mean, low, high, fit.p_value(), TRIMMED_METHOD, f"own pairs ({n})")


def prior_shift(ratios: np.ndarray, prior: NoisePrior,
                confidence: float = 0.95) -> ShiftEstimate:
    """Mean log ratio with a t interval on the spread pooled with ``prior`` (module doc)."""
    n = int(ratios.size)
    own_df = n - 1
    own_var = float(ratios.var(ddof=1)) if n >= 2 else 0.0
    pooled = (prior.df * prior.sd ** 2 + own_df * own_var) / (prior.df + own_df)
    sd = math.sqrt(max(pooled, own_var))
    fit = TFit(float(ratios.mean()), sd / math.sqrt(n), prior.df + own_df)
    low, high = fit.interval(confidence)
    return ShiftEstimate(fit.mean, low, high, fit.p_value(),
                         PRIOR_METHOD.format(source=prior.source),
                         f"own pairs ({n}) pooled with {prior.source} "
                         f"({100 * prior.sd:.2f} %, df {prior.df})")


def consistent_with(ratios: np.ndarray, prior: NoisePrior) -> bool:
    """The pairs' own spread is not significantly larger than the prior's (one-sided F test
    at :data:`PRIOR_CHECK_ALPHA`): a session noisier than its calibration keeps its own."""
    if ratios.size < 2:
        return True
    own = float(ratios.var(ddof=1))
    if prior.sd == 0.0:
        return own == 0.0
    f = own / prior.sd ** 2
    return float(sps.f.sf(f, ratios.size - 1, prior.df)) >= PRIOR_CHECK_ALPHA


def least_spread_shift(ratios: np.ndarray, least: NoisePrior,
                       confidence: float = 0.95) -> ShiftEstimate | None:
    """The t interval on the larger of the pairs' own spread and ``least`` (a timed
    metric's spread on this host: calibrated, or assumed without a calibration), with the
    pairs' own degrees of freedom; None when the own spread is the larger."""
    n = int(ratios.size)
    own = float(ratios.std(ddof=1))
    if own >= least.sd:
        return None
    fit = TFit(float(ratios.mean()), least.sd / math.sqrt(n), n - 1)
    low, high = fit.interval(confidence)
    return ShiftEstimate(fit.mean, low, high, fit.p_value(),
                         f"{T_METHOD} on the host's spread ({least.source}), wider than "
                         "the pairs' own", least.source)


def best_paired_shift(pairs: Sequence[tuple[float, float]], confidence: float = 0.95,
                      prior: NoisePrior | None = None,
                      least: NoisePrior | None = None,
                      min_pairs: int = MIN_T_PAIRS) -> ShiftEstimate:
    """The t interval from ``min_pairs`` pairs (the metric's: :data:`MIN_T_PAIRS`, 3 for memory
    whose bytes repeat exactly, ``common.metrics``) (:data:`MIN_KNOWN_SPREAD_PAIRS` with a
    prior or a least spread; an outlying pair stays in and widens it), else the signed-rank
    one. With a noise ``prior`` (deterministic metrics) the t
    interval pools its spread from :data:`MIN_PRIOR_PAIRS` pairs, unless a pair is outlying
    or the session is noisier than its prior. With ``least`` (timed metrics: the spread this
    host shows) the interval is never narrower than that spread allows: a few pairs that
    happen to agree on a noisy host do not decide."""
    ratios = log_ratios(pairs)
    known = prior is not None or (least is not None and least.measured)
    if ratios.size < (MIN_KNOWN_SPREAD_PAIRS if known else min_pairs):
        return paired_shift(pairs, confidence)
    outlying = t_assumptions(ratios).startswith("Shapiro")
    if prior is not None and ratios.size >= MIN_PRIOR_PAIRS and not outlying and \
            consistent_with(ratios, prior):
        return prior_shift(ratios, prior, confidence)
    if ratios.size < min_pairs and not (least is not None and least.measured):
        # the prior did not hold (a pair far off, or pairs noisier than it): too few pairs
        # of their own to decide on their spread (two-level counts, hash seeds)
        return paired_shift(pairs, confidence)
    if least is not None:
        wider = least_spread_shift(ratios, least, confidence)
        if wider is not None:
            return wider
    shift = t_shift(pairs, confidence)
    if outlying:
        return ShiftEstimate(shift.estimate, shift.low, shift.high, shift.p_value,
                             T_METHOD + OUTLYING, shift.spread_from)
    return shift
