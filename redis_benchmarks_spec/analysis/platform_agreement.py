"""Whether the platforms that ran a test agree about it: the one rule every surface that
shows several platforms' verdicts of one change (the pull-request comment) renders.

The verdicts themselves come from the engine, one platform at a time; this module only
reads them side by side. For each test (and metric) it says where the test stands:

* :data:`EVERY`: decided the same way (regression or improvement) on every platform that
  compared it: the change's effect, as far as the lab can tell;
* :data:`ONE_PLATFORM`: decided on some platforms, while the others did not decide and
  their estimates do not point the other way (or no other platform compared the test);
* :data:`DISAGREE`: decided on one platform while another platform's estimate of the same
  test has the opposite sign (decided or not): a platform-specific result, or noise one
  platform happened to decide; never the change's plain regression or improvement;
* :data:`NO_EFFECT`: decided nowhere (no change, or not decided).

When only one platform reported at all, every decided test stands :data:`EVERY`: there is
no other platform to disagree with.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, REGRESSION, Comparison
from redis_benchmarks_spec.results.comparison_key import SEPARATOR, split

EVERY = "every platform"
ONE_PLATFORM = "one platform"
DISAGREE = "platforms disagree"
NO_EFFECT = "no effect"
#: the order a reader is told: what every platform says, then one platform, then conflicts
STANDINGS = (EVERY, ONE_PLATFORM, DISAGREE, NO_EFFECT)
EFFECTS = (REGRESSION, IMPROVEMENT)

PlatformRow = tuple[str, Comparison]  # (platform, the engine's row of one test there)


@dataclass(frozen=True)
class Agreement:
    """One test (and metric) across the platforms that compared it."""

    test: str
    metric: str
    rows: tuple[PlatformRow, ...]  # one per platform that compared it, in the order given
    standing: str
    verdict: str | None  # the decided verdict of EVERY and ONE_PLATFORM, else None

    @property
    def decided(self) -> list[PlatformRow]:
        """The platforms (and rows) where the engine decided an effect."""
        return [(p, r) for p, r in self.rows if r.verdict in EFFECTS]

    @property
    def lead(self) -> PlatformRow:
        """The row a sentence names first: the largest decided effect (else the largest)."""
        pool = self.decided or list(self.rows)
        return max(pool, key=lambda pr: abs(pr[1].change_pct or 0.0))

    @property
    def size(self) -> float:
        """The lead row's effect, percent, unsigned."""
        return abs(self.lead[1].change_pct or 0.0)

    @property
    def others(self) -> list[PlatformRow]:
        """Every row but the lead one."""
        lead = self.lead
        return [pr for pr in self.rows if pr != lead]


def _sign(row: Comparison) -> int:
    value = row.change_pct or 0.0
    return (value > 0) - (value < 0)


def standing(rows: list[PlatformRow], platforms: int) -> tuple[str, str | None]:
    """(standing, verdict) of one test from its rows on the platforms that compared it;
    ``platforms``: how many platforms reported at all."""
    decided = [r for _, r in rows if r.verdict in EFFECTS]
    if not decided:
        return NO_EFFECT, None
    verdicts = {r.verdict for r in decided}
    signs = {_sign(r) for r in decided}
    if len(verdicts) > 1 or len(signs) > 1:
        return DISAGREE, None
    sign = signs.pop()
    if any(_sign(r) == -sign for _, r in rows):
        return DISAGREE, None
    verdict = decided[0].verdict
    if len(decided) == len(rows) and (len(rows) > 1 or platforms == 1):
        return EVERY, verdict
    return ONE_PLATFORM, verdict


def _merge_bare(groups: dict[tuple[str, str, str | None], list[PlatformRow]]) -> None:
    """A platform that ran a suite in one topology labels it by its bare name; another that
    ran it in several labels each ``name @ topology``: the bare rows join the one labelled
    topology the others compared, when there is exactly one (else they stay apart)."""
    for metric, name, topology in [k for k in groups if k[2] is None]:
        labelled = [k for k in groups if k[:2] == (metric, name) and k[2] is not None]
        if len(labelled) == 1:
            groups[labelled[0]] += groups.pop((metric, name, topology))


def agreement(rows: Iterable[PlatformRow]) -> list[Agreement]:
    """Every test of ``rows`` (each platform's rows of one comparison) with its standing,
    in :data:`STANDINGS` order, the largest effect first within each."""
    given = list(rows)
    platforms = len({p for p, _ in given})
    groups: dict[tuple[str, str, str | None], list[PlatformRow]] = {}
    for platform, row in given:
        name, topology = split(row.test)
        groups.setdefault((row.metric, name, topology), []).append((platform, row))
    _merge_bare(groups)
    out = []
    for (metric, name, topology), found in groups.items():
        where, verdict = standing(found, platforms)
        test = name if topology is None else f"{name}{SEPARATOR}{topology}"
        out.append(Agreement(test, metric, tuple(found), where, verdict))
    return sorted(out, key=lambda t: (STANDINGS.index(t.standing), -t.size, t.test))
