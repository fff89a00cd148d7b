"""Looking again without inflating false positives: a group-sequential design for A/B pairs.

``rbs run --until-decided`` looks at the pairs of every still-UNKNOWN test after each round
and adds pairs to those only. Testing at alpha after every round would flag an A/A test far
more often than alpha (five looks at 5 % flag about 14 %). This module controls it with a
**two-sided group-sequential design with Lan-DeMets alpha spending** (default: the
O'Brien-Fleming-type spending function ``alpha(t) = 2 - 2 Phi(z_{1-alpha/2} / sqrt(t))``,
optional Pocock-type ``alpha ln(1 + (e - 1) t)``), with information fraction
``t = pairs so far / --max-repetitions``.

Why this design and not another:

* Spending functions need no fixed schedule: a round may be cut short by the time budget,
  a failed run may lose a pair, and the boundaries of the looks actually taken still
  spend exactly alpha in total (Lan & DeMets 1983).
* O'Brien-Fleming-type spending keeps almost all of alpha for the last looks, so the
  final boundary is close to the fixed-sample one (about z = 2.04 instead of 1.96 for six
  looks): a small change needing all ``--max-repetitions`` pairs loses little power,
  while a large change still stops early (a -65 % change stops at its second look). The
  cost: a first look at 6 of 40 pairs needs z > 5.06, so nothing stops at the very first
  look unless it is enormous. ``--spending pocock`` stops earlier and pays at the end.
* A confidence sequence (time-uniform, any number of looks) was the alternative; its
  intervals are about 1.5-2x wider than a fixed-sample interval at every n, which costs
  exactly the runs this feature exists to save.

The boundaries come from the recursive numerical integration of Armitage, McPherson and
Rowe as implemented by the ``gsdesign`` package (a port of R gsDesign's routines): the
z statistics of successive looks are correlated like Brownian motion, ``h1``/``hupdate``
carry the density of the not-yet-stopped paths from look to look, and each boundary is
solved so that the probability of first crossing at that look equals the alpha spent.

Each look's statistic is the paired method's two-sided p converted to z (``analysis.paired``:
the t test on per-pair log ratios, or the signed rank test), the "significance level
approach" for t statistics in group-sequential tests (Jennison & Turnbull 2000, ch. 11).

Many tests: each test's **repeated p-value** (the smallest alpha at which the design would
have stopped it by now; Jennison & Turnbull ch. 9) is valid at every look at once, and it
only falls as looks are added; Benjamini-Hochberg over these p-values therefore gives a
rejection set that only grows from round to round and controls the false discovery rate
like a fixed-sample comparison. Intervals are **repeated confidence intervals** (the
nominal level of the current look's boundary), so NO CHANGE is also safe to stop at.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import numpy as np

from redis_benchmarks_spec.analysis.spending import OBRIEN_FLEMING, POCOCK, SPENDING_FUNCTIONS
from redis_benchmarks_spec.common.lazy import LazyModule

sps: Any = LazyModule("scipy.stats")
_optimize: Any = LazyModule("scipy.optimize")
_gsdesign: Any = LazyModule("gsdesign")


#: Simpson grid size of gsDesign's integration (its default)
GRID_R = 18
#: boundaries above this z are treated as "cannot stop here" (p < 1e-300)
MAX_Z = 37.0
#: the density grid of the still-running paths: points, Simpson weights, densities
Grid = tuple[np.ndarray, np.ndarray, np.ndarray]
#: repeated p-values are resolved on this log grid of alphas: fine (0.1 decade) where
#: decisions are made, coarse in the far tail where only "very small" matters
_ALPHA_GRID = tuple(sorted({*np.logspace(-12, -4, 9).tolist(),
                            *np.logspace(-4, math.log10(0.5), 38).tolist()}))


@dataclass(frozen=True)
class SequentialPlan:
    """Total alpha, the spending function, and the pairs at which information is complete."""

    max_pairs: int
    alpha: float = 0.05
    spending: str = OBRIEN_FLEMING

    def __post_init__(self) -> None:
        if self.spending not in SPENDING_FUNCTIONS:
            raise ValueError(f"unknown spending function {self.spending!r} "
                             f"(one of {', '.join(SPENDING_FUNCTIONS)})")
        if self.max_pairs < 2:
            raise ValueError("max pairs must be at least 2")

    def fractions(self, looks: Sequence[int]) -> tuple[float, ...]:
        """Information fractions of looks at these pair counts (increasing, capped at 1)."""
        return tuple(min(1.0, n / self.max_pairs) for n in looks)


def spent(t: float, alpha: float, spending: str) -> float:
    """Alpha spent by information fraction ``t`` (two-sided)."""
    if t <= 0:
        return 0.0
    t = min(t, 1.0)
    if spending == POCOCK:
        return alpha * math.log(1 + (math.e - 1) * t)
    return float(2 - 2 * sps.norm.cdf(sps.norm.isf(alpha / 2) / math.sqrt(t)))


def _continue_mass(grid: Grid) -> float:
    return float(grid[2].sum())



@lru_cache(maxsize=8192)
def _chain(fractions: tuple[float, ...], alpha: float, spending: str
           ) -> tuple[tuple[float, ...], Grid]:
    """Boundaries of these looks and the density grid of paths still going after the last.

    Recursive on the prefix, so adding a look to a cached schedule costs one root search.
    """
    t = fractions[-1]
    if len(fractions) == 1:
        increment = spent(t, alpha, spending)
        b = min(MAX_Z, float(sps.norm.isf(increment / 2))) if increment > 0 else MAX_Z
        return (b,), _gsdesign.h1(GRID_R, 0.0, t, -b, b)
    bounds, grid = _chain(fractions[:-1], alpha, spending)
    prev_t = fractions[-2]
    if t <= prev_t:
        raise ValueError(f"information fractions must increase: {fractions}")
    increment = spent(t, alpha, spending) - spent(prev_t, alpha, spending)
    b, grid = _next_boundary(grid, prev_t, t, increment)
    return (*bounds, b), grid


def boundaries(fractions: tuple[float, ...], alpha: float, spending: str) -> tuple[float, ...]:
    """Two-sided z boundaries of looks at these information fractions.

    A look whose increment of spent alpha is (numerically) zero gets :data:`MAX_Z`.
    """
    if not fractions:
        return ()
    return _chain(tuple(fractions), alpha, spending)[0]


def _next_boundary(grid: Grid, prev_t: float, t: float, increment: float) -> tuple[float, Grid]:
    """Boundary b with P(continue so far, cross at this look) = increment, and the new grid."""
    before = _continue_mass(grid)

    def excess(b: float) -> float:
        return before - _continue_mass(_gsdesign.hupdate(GRID_R, 0.0, t, -b, b, 0.0, prev_t, grid)) \
            - increment

    if increment <= 0 or excess(MAX_Z) >= 0:
        b = MAX_Z
    else:
        b = float(_optimize.brentq(excess, 1e-3, MAX_Z, xtol=1e-5))
    return b, _gsdesign.hupdate(GRID_R, 0.0, t, -b, b, 0.0, prev_t, grid)


def nominal_level(fractions: tuple[float, ...], alpha: float, spending: str) -> float:
    """Two-sided nominal p-value threshold of the last look."""
    return float(2 * sps.norm.sf(boundaries(fractions, alpha, spending)[-1]))


def repeated_p(z_abs: float, fractions: tuple[float, ...], spending: str) -> float:
    """Smallest total alpha at which the design would stop at the last look with ``|z|``.

    Resolved by interpolation on a log grid of alphas (boundaries fall as alpha grows) from
    1e-12 to 0.5; anything above 0.5 is reported as 1 (no decision ever depends on it).
    """
    bounds = np.array([boundaries(fractions, a, spending)[-1] for a in _ALPHA_GRID])
    logs = np.log(np.array(_ALPHA_GRID))
    if z_abs >= bounds[0]:
        return _ALPHA_GRID[0]
    if z_abs <= bounds[-1]:
        return 1.0
    # bounds decrease along the grid; log(alpha) is close to linear in z**2 (normal tail)
    return float(math.exp(np.interp(z_abs ** 2, bounds[::-1] ** 2, logs[::-1])))


def z_from_p(p: float) -> float:
    """|z| with the same two-sided p-value."""
    if not math.isfinite(p):
        return 0.0
    return float(sps.norm.isf(max(p, 1e-300) / 2))
