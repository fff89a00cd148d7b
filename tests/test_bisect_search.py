"""The search of `rbs bisect` (bisection/search.py) over a prober whose measurements follow
a known first bad commit: the decision rule in both directions, the metric fallback, and
the budgets. The real probers are exercised by tests/test_bisect.py and
tests/test_bisect_remote.py."""

from __future__ import annotations

from dataclasses import dataclass, field

from redis_benchmarks_spec.bisection.search import (
    Budget,
    BudgetSpent,
    Measurement,
    is_bad,
    search,
)

COMMITS = [f"{i:040x}" for i in range(1, 10)]  # 9 commits after good
GOOD = "0" * 40


@dataclass
class KnownStep:
    """Commits from ``first_bad`` on change the metric by ``step`` % (0 elsewhere)."""

    first_bad: int
    step: float
    metric: str = "instructions_per_op"
    verdict_at_bad_end: str = "REGRESSION"
    spent_after: int | None = None  # raise BudgetSpent on this many-th measurement
    measured: list[str] = field(default_factory=list)

    def built(self) -> int:
        return len({GOOD, *self.measured})

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        if self.spent_after is not None and len(self.measured) >= self.spent_after:
            raise BudgetSpent(sha)
        self.measured.append(sha)
        change = self.step if COMMITS.index(sha) >= self.first_bad else 0.1
        verdict = self.verdict_at_bad_end if sha == COMMITS[-1] else "UNKNOWN"
        return Measurement(change, verdict, pairs)


def test_is_bad_follows_the_direction_of_the_effect() -> None:
    ops, counts = "ALL_STATS.Totals.Ops/sec", "instructions_per_op"
    assert is_bad(+20.0, +25.0, counts) and is_bad(-15.0, -20.0, ops)  # counts up, ops down
    assert not is_bad(+5.0, +25.0, counts) and not is_bad(-20.0, +25.0, counts)
    assert not is_bad(None, 10.0, ops) and not is_bad(1.0, 0.0, ops)


def test_search_finds_the_step_in_log2_probes() -> None:
    for first_bad in range(len(COMMITS)):
        prober = KnownStep(first_bad, +30.0)
        out = search([prober], GOOD, COMMITS, Budget(max_builds=20))
        assert out.first_bad == COMMITS[first_bad], first_bad
        assert out.metric == "instructions_per_op" and out.reason == "found"
        assert len(prober.measured) <= 1 + 4  # the bad end, then ceil(log2(9)) midpoints


def test_auto_falls_back_when_the_first_metric_sees_nothing() -> None:
    blind = KnownStep(5, 0.0, verdict_at_bad_end="NO CHANGE")  # a sleep adds no instructions
    timed = KnownStep(5, -12.0, metric="ALL_STATS.Totals.Ops/sec")
    out = search([blind, timed], GOOD, COMMITS, Budget(max_builds=20))  # type: ignore[list-item]
    assert out.first_bad == COMMITS[5] and out.metric == "ALL_STATS.Totals.Ops/sec"
    assert "instructions_per_op saw no regression" in out.metric_note
    assert blind.measured == [COMMITS[-1]]


def test_no_regression_at_the_bad_end_stops_at_once() -> None:
    prober = KnownStep(3, 0.0, verdict_at_bad_end="NO CHANGE")
    out = search([prober], GOOD, COMMITS, Budget())
    assert out.first_bad is None and "not a REGRESSION" in out.reason
    assert prober.measured == [COMMITS[-1]]


def test_budgets_stop_the_search_with_the_range_left() -> None:
    prober = KnownStep(2, +30.0)
    out = search([prober], GOOD, COMMITS, Budget(max_builds=3))  # good, bad, one midpoint
    assert out.first_bad is None and out.reason == "budget spent" and out.builds == 3
    assert out.range_left == (GOOD, COMMITS[3])  # the first midpoint (index 3) was bad
    spent = KnownStep(2, +30.0, spent_after=2)
    out = search([spent], GOOD, COMMITS, Budget(max_builds=20))
    assert out.reason == "budget spent" and out.range_left == (GOOD, COMMITS[3])
    out = search([KnownStep(2, +30.0, spent_after=0)], GOOD, COMMITS, Budget())
    assert out.reason.startswith("budget spent before the bad end")
