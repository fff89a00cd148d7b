"""Does each interval method keep its promise when nothing changed? A/A by simulation.

A false decision is an A/A test (the same binary on both sides) called REGRESSION or
IMPROVEMENT. For each method the verdict engine can pick, and each pair count, the share of
simulated A/A sessions with a false decision must stay at or below alpha, under the noise
real hosts have (:data:`NOISES`): not only normal noise, but heavy tails, one run ruined by a
neighbour, slow drift within a session, bimodal runs (a server start's hash seed or memory
layout), and a second-run-of-a-pair effect. Runs are generated in the order the runner makes
them (pair ``i`` runs A B when ``i`` is even, B A when odd: :func:`runner.ab.order`).

Judged with the noise floor at 0, so what is measured is the interval's own promise; a floor
only lowers these rates.

``benchmarks/false_decisions.py`` prints the whole table (and resamples recorded real A/A
sessions); ``tests/test_false_decisions.py`` holds the engine's own pick to it.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from redis_benchmarks_spec.analysis import paired, stats
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    CompareOptions,
    compare_paired,
)
from redis_benchmarks_spec.analysis.sequential import (
    SequentialPlan,
    repeated_p,
    z_from_p,
)
from redis_benchmarks_spec.analysis.verdict import UNCALIBRATED_PAIR_SD

ALPHA = 0.05
#: run-to-run spread (log scale) of the noisy hosts measured: about 12 % per run
SIGMA = 0.12

#: (sims, n) -> values of shape (sims, n, 2): [:, i, 0] baseline, [:, i, 1] comparison
Noise = Callable[[np.random.Generator, int, int], np.ndarray]
#: an (n, 2) array of one session's pairs -> did the method decide (a false decision)?
Method = Callable[[np.ndarray], bool]


def _by_slot(log_runs: np.ndarray) -> np.ndarray:
    """Runs in time order (sims, 2n) -> pairs (sims, n, 2), A B for even pairs, B A for odd."""
    sims, slots = log_runs.shape
    pairs = log_runs.reshape(sims, slots // 2, 2).copy()
    pairs[:, 1::2, :] = pairs[:, 1::2, ::-1]
    return np.exp(pairs)


def _normal(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    return _by_slot(rng.normal(0, SIGMA, (sims, 2 * n)))


def _heavy_tails(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    return _by_slot(SIGMA * rng.standard_t(3, (sims, 2 * n)) / math.sqrt(3))


def _one_ruined_run(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """A quiet session in which one run lost 35 % to a neighbour."""
    runs = rng.normal(0, 0.04, (sims, 2 * n))
    runs[np.arange(sims), rng.integers(0, 2 * n, sims)] += math.log(0.65)
    return _by_slot(runs)


def _frequent_dips(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """One run in ten loses 40 % (a busy neighbour comes and goes)."""
    runs = rng.normal(0, 0.06, (sims, 2 * n))
    runs[rng.random((sims, 2 * n)) < 0.1] += math.log(0.6)
    return _by_slot(runs)


def _slow_drift(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """The host slows (or speeds up) by up to 30 % over the session, plus a random walk."""
    slots = 2 * n
    trend = rng.uniform(-0.3, 0.3, (sims, 1)) * np.linspace(0, 1, slots)
    walk = np.cumsum(rng.normal(0, 0.02, (sims, slots)), axis=1)
    return _by_slot(trend + walk + rng.normal(0, 0.06, (sims, slots)))


def _bimodal(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """Each server start lands in a fast or a slow mode 16 % apart (hash seed, layout)."""
    modes = np.where(rng.random((sims, 2 * n)) < 0.5, 0.08, -0.08)
    return _by_slot(modes + rng.normal(0, 0.03, (sims, 2 * n)))


def _second_run_slower(rng: np.random.Generator, sims: int, n: int) -> np.ndarray:
    """The second run of every pair is 6 % slower (cache, thermal, page cache)."""
    runs = rng.normal(0, 0.08, (sims, 2 * n))
    runs[:, 1::2] -= 0.06
    return _by_slot(runs)


NOISES: dict[str, Noise] = {
    "normal 12 %": _normal,
    "heavy tails (t3)": _heavy_tails,
    "one ruined run": _one_ruined_run,
    "dips 1 in 10": _frequent_dips,
    "slow drift": _slow_drift,
    "bimodal runs": _bimodal,
    "second run slower": _second_run_slower,
}


def _decided(shift: stats.ShiftEstimate) -> bool:
    if not shift.bounded or not math.isfinite(shift.p_value):
        return False
    return (shift.low > 0 or shift.high < 0) and shift.p_value < ALPHA


def _tuples(pairs: np.ndarray) -> list[tuple[float, float]]:
    return [(float(b), float(c)) for b, c in pairs]


def _t(pairs: np.ndarray) -> bool:
    return _decided(paired.t_shift(_tuples(pairs)))


def _signed_rank(pairs: np.ndarray) -> bool:
    return _decided(stats.paired_shift(_tuples(pairs)))


def _trimmed(pairs: np.ndarray) -> bool:
    ratios = paired.log_ratios(_tuples(pairs))
    if ratios.size < 5:
        return False
    return _decided(paired.trimmed_shift(ratios))


def _trimmed_when_outlying(pairs: np.ndarray) -> bool:
    """The engine before issue 28: signed rank below 5 pairs, the trimmed mean when
    Shapiro-Wilk rejected, else t."""
    ratios = paired.log_ratios(_tuples(pairs))
    if ratios.size < 5:
        return _decided(stats.paired_shift(_tuples(pairs)))
    if paired.t_assumptions(ratios).startswith("Shapiro"):
        return _decided(paired.trimmed_shift(ratios))
    return _decided(paired.t_shift(_tuples(pairs)))


def _engine(pairs: np.ndarray) -> bool:
    """The pick for a deterministic metric without a prior (and the bare timed one)."""
    return _decided(paired.best_paired_shift(_tuples(pairs)))


UNCALIBRATED = paired.NoisePrior(UNCALIBRATED_PAIR_SD, 1, "assumed")


def _engine_timed(pairs: np.ndarray) -> bool:
    """A timed metric on a host never calibrated: the assumed least spread."""
    return _decided(paired.best_paired_shift(_tuples(pairs), least=UNCALIBRATED))


def _engine_calibrated(pairs: np.ndarray, calibration: np.ndarray) -> bool:
    """A timed metric on a host calibrated by an A/A session of the same noise."""
    spread = float(paired.log_ratios(_tuples(calibration)).std(ddof=1))
    least = paired.NoisePrior(spread, 1, "calibrated")
    return _decided(paired.best_paired_shift(_tuples(pairs), least=least))


def _unpaired(pairs: np.ndarray) -> bool:
    return _decided(stats.unpaired_shift(pairs[:, 0].tolist(), pairs[:, 1].tolist()))


def _sequential(pairs: np.ndarray, least: paired.NoisePrior | None = None) -> bool:
    """``--until-decided``'s looks (6, then every 4, and the last pair; the only look at
    fewer than 6), O'Brien-Fleming over all of them."""
    n = len(pairs)
    looks = sorted({*range(min(n, 6), n + 1, 4), n})
    plan = SequentialPlan(max_pairs=n, alpha=ALPHA)
    fractions = plan.fractions(looks)
    tuples = _tuples(pairs)
    best = min(repeated_p(z_from_p(paired.best_paired_shift(tuples[:k], least=least).p_value),
                          fractions[:j + 1], plan.spending)
               for j, k in enumerate(looks))
    return best < ALPHA


def _sequential_timed(pairs: np.ndarray) -> bool:
    return _sequential(pairs, UNCALIBRATED)


def _engine_bh_ten(pairs_of_tests: list[np.ndarray]) -> bool:
    report = compare_paired({f"t{i}": _tuples(p) for i, p in enumerate(pairs_of_tests)},
                            CompareOptions(noise_floor_pct=0.0, alpha=ALPHA))
    return any(r.verdict in (REGRESSION, IMPROVEMENT) for r in report.rows)


METHODS: dict[str, Method] = {
    "Student t": _t,
    "signed rank (HL)": _signed_rank,
    "20 % trimmed mean": _trimmed,
    "old pick (trimmed if outlying)": _trimmed_when_outlying,
    "engine's pick": _engine,
    "engine, timed, uncalibrated": _engine_timed,
    "sequential looks": _sequential,
    "sequential, timed, uncalibrated": _sequential_timed,
    "unpaired (Mann-Whitney)": _unpaired,
}
#: methods that need a calibration A/A session of the same noise (8 pairs)
CALIBRATED = "engine, timed, calibrated (8 A/A pairs)"
CALIBRATION_PAIRS = 8
#: a session of this many A/A tests judged at once (BH), flagged when any test is decided
BH_TESTS = 10


@dataclass(frozen=True)
class Rate:
    """False decisions out of sessions, and whether that breaks the promise: the lower end
    of the 95 % Wilson interval of the rate lies above alpha."""

    decided: int
    sessions: int

    @property
    def rate(self) -> float:
        return self.decided / self.sessions if self.sessions else math.nan

    @property
    def broken(self) -> bool:
        return wilson_low(self.decided, self.sessions) > ALPHA


def wilson_low(k: int, n: int, z: float = 1.96) -> float:
    """Lower end of the Wilson score interval of ``k`` successes in ``n``."""
    if n == 0:
        return 0.0
    p = k / n
    centre = p + z * z / (2 * n)
    spread = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n))
    return (centre - spread) / (1 + z * z / n)


def false_decisions(method: str, noise: str, n: int, sims: int, seed: int = 0) -> Rate:
    """Simulated A/A sessions of ``n`` pairs under ``noise``: how many ``method`` decided."""
    rng = np.random.default_rng(seed)
    make = NOISES[noise]
    if method == "BH over 10 tests":
        data = make(rng, sims * BH_TESTS, n).reshape(sims, BH_TESTS, n, 2)
        return Rate(sum(_engine_bh_ten(list(session)) for session in data), sims)
    if method == CALIBRATED:
        calibrations = make(rng, sims, CALIBRATION_PAIRS)
        return Rate(sum(_engine_calibrated(session, cal) for session, cal
                        in zip(make(rng, sims, n), calibrations, strict=True)), sims)
    decide = METHODS[method]
    return Rate(sum(decide(session) for session in make(rng, sims, n)), sims)


def resampled(pairs: np.ndarray, n: int, sims: int, method: str,
              seed: int = 0) -> Rate:
    """Sessions of ``n`` pairs drawn without replacement from recorded A/A ``pairs`` (kept
    in their recorded orientation: a real host's order and side effects stay in)."""
    rng = np.random.default_rng(seed)
    decide = METHODS[method]
    count = 0
    for _ in range(sims):
        pick = np.sort(rng.choice(len(pairs), size=n, replace=False))
        count += decide(pairs[pick])
    return Rate(count, sims)
