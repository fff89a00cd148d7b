"""Looking again: Lan-DeMets boundaries, repeated p-values, and the --until-decided loop
checked by simulation (A/A false positives with repeated looks, A/B stopping early)."""

from __future__ import annotations

import math

import numpy as np
import pytest

from redis_benchmarks_spec.analysis import sequential as sq
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    CompareOptions,
    compare_paired,
)
from redis_benchmarks_spec.analysis.sequential_compare import SequentialRecord, compare_recorded
from redis_benchmarks_spec.runner.adaptive import (
    BUDGET_SPENT,
    DECIDED,
    MAX_REACHED,
    AdaptivePlan,
    PairSource,
    until_decided,
)

FIVE = (0.2, 0.4, 0.6, 0.8, 1.0)


def test_obrien_fleming_first_and_single_look_are_analytic() -> None:
    """Lan-DeMets (1983) two-sided spending 2 - 2 Phi(z_{alpha/2} / sqrt(t)): the first look
    spends alpha(t1) alone, so its boundary is z_{1-alpha(t1)/2} = z_{alpha/2}/sqrt(t1); one
    look at t = 1 is the fixed-sample 1.96."""
    bounds = sq.boundaries(FIVE, 0.05, sq.OBRIEN_FLEMING)
    assert bounds[0] == pytest.approx(1.959964 / math.sqrt(0.2), rel=1e-6)
    assert list(bounds) == sorted(bounds, reverse=True)
    assert 1.96 < bounds[-1] < 2.1  # the last look keeps almost all of alpha
    assert sq.boundaries((1.0,), 0.05, sq.OBRIEN_FLEMING)[0] == pytest.approx(1.959964, abs=1e-5)


@pytest.mark.parametrize("spending", sq.SPENDING_FUNCTIONS)
def test_boundaries_spend_alpha_on_brownian_paths(spending: str) -> None:
    """Monte Carlo: z paths of a null Brownian motion cross some boundary ~5 % of the time,
    and each look takes the increment its spending function allows."""
    fractions = (0.15, 0.25, 0.4, 0.55, 0.7, 0.85, 1.0)
    bounds = np.array(sq.boundaries(fractions, 0.05, spending))
    rng = np.random.default_rng(3)
    steps = np.diff((0.0, *fractions))
    walk = np.cumsum(rng.normal(size=(400_000, len(fractions))) * np.sqrt(steps), axis=1)
    z = walk / np.sqrt(fractions)
    crossed = np.abs(z) >= bounds
    first = np.where(crossed.any(axis=1), crossed.argmax(axis=1), -1)
    assert (first >= 0).mean() == pytest.approx(0.05, abs=0.002)
    for k, t in enumerate(fractions):
        want = sq.spent(t, 0.05, spending) - (sq.spent(fractions[k - 1], 0.05, spending)
                                              if k else 0.0)
        assert (first == k).mean() == pytest.approx(want, abs=max(0.0012, want * 0.1))


def test_repeated_p_is_the_alpha_at_which_the_look_stops() -> None:
    fractions = (0.25, 0.5, 1.0)
    for alpha in (0.01, 0.05, 0.2):
        b = sq.boundaries(fractions, alpha, sq.OBRIEN_FLEMING)[-1]
        assert sq.repeated_p(b, fractions, sq.OBRIEN_FLEMING) == pytest.approx(alpha, rel=0.03)
    assert sq.repeated_p(0.1, fractions, sq.OBRIEN_FLEMING) == 1.0
    # one look is a fixed-sample test
    assert sq.repeated_p(1.95996, (1.0,), sq.OBRIEN_FLEMING) == pytest.approx(0.05, rel=0.01)


def test_plan_rejects_unknown_spending_and_bad_looks() -> None:
    with pytest.raises(ValueError, match="spending"):
        sq.SequentialPlan(40, spending="linear")
    from redis_benchmarks_spec.analysis.sequential_compare import compare_sequential
    with pytest.raises(ValueError, match="looks must increase"):
        compare_sequential({"t": [(1.0, 1.0)] * 6}, {"t": [6, 4]}, sq.SequentialPlan(40))


# --- the loop, on simulated pairs ----------------------------------------------------------


def _source(rng: np.random.Generator, ratios: dict[str, float], cv: float = 0.12,
            calls: list[tuple[list[str], int, int]] | None = None) -> PairSource:
    def source(tests: list[str], first: int, count: int,
               deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        if calls is not None:
            calls.append((list(tests), first, count))
        out = {}
        for t in tests:
            drift = rng.lognormal(0, 0.05, count)
            b = 1e5 * drift * rng.lognormal(0, cv, count)
            c = 1e5 * ratios[t] * drift * rng.lognormal(0, cv, count)
            out[t] = list(zip(b.tolist(), c.tolist(), strict=True))
        return out
    return source


def _plan(max_pairs: int = 40, floor: float = 2.0, budget: float | None = None) -> AdaptivePlan:
    return AdaptivePlan(sq.SequentialPlan(max_pairs),
                        CompareOptions(noise_floor_pct=floor), first_round=6, round_pairs=4,
                        time_budget_s=budget)


def test_a_a_with_repeated_looks_stays_at_alpha_and_naive_looks_do_not() -> None:
    """One A/A test at 12 % CV, looks at 6, 10, ..., 30 pairs, no noise floor (every flag
    counts). The design flags <= alpha; re-testing at alpha after each round flags ~2-3x."""
    sims, flagged, naive = 120, 0, 0
    rng = np.random.default_rng(41)
    plan = _plan(max_pairs=30, floor=0.0)
    for _ in range(sims):
        out = until_decided(["t"], _source(rng, {"t": 1.0}), plan)
        flagged += out.report.rows[0].verdict in (REGRESSION, IMPROVEMENT)
        pairs = out.progress["t"].pairs
        # the naive way on the same data: a fixed-sample test after every round
        naive += any(compare_paired({"t": pairs[:n]}, CompareOptions(noise_floor_pct=0.0))
                     .rows[0].verdict in (REGRESSION, IMPROVEMENT) for n in range(6, 31, 4))
    assert flagged / sims <= 0.05 + 2 * math.sqrt(0.05 * 0.95 / sims)
    assert naive > flagged


def test_a_b_large_change_stops_early_small_one_runs_longer() -> None:
    rng = np.random.default_rng(7)
    calls: list[tuple[list[str], int, int]] = []
    out = until_decided(["set", "get", "incr"],
                        _source(rng, {"set": 0.35, "get": 1.0, "incr": 0.93}, cv=0.08, calls=calls),
                        _plan())
    rows = {r.test: r for r in out.report.rows}
    assert rows["set"].verdict == REGRESSION
    assert len(out.progress["set"].pairs) <= 10
    assert out.progress["set"].stop_reason == f"{DECIDED} (REGRESSION)"
    assert rows["incr"].verdict == REGRESSION
    assert len(out.progress["incr"].pairs) > len(out.progress["set"].pairs)
    assert rows["get"].verdict != REGRESSION
    # later rounds only ran the tests still open
    assert calls[0] == (["set", "get", "incr"], 0, 6)
    assert all("set" not in tests for tests, first, _ in calls if first >= 10)
    assert "pairs (looks at 6" in rows["set"].reason


def test_max_repetitions_and_time_budget_stop_the_loop() -> None:
    rng = np.random.default_rng(8)
    out = until_decided(["t"], _source(rng, {"t": 0.99}, cv=0.15), _plan(max_pairs=14))
    assert out.progress["t"].stop_reason == MAX_REACHED
    assert len(out.progress["t"].pairs) == 14 and out.progress["t"].looks == [6, 10, 14]
    now = [0.0]

    def clock() -> float:
        now[0] += 50.0  # every look of the clock is 50 s later
        return now[0]

    out = until_decided(["t"], _source(rng, {"t": 0.99}, cv=0.15), _plan(budget=120.0), clock)
    assert out.progress["t"].stop_reason == BUDGET_SPENT
    assert len(out.progress["t"].pairs) < 40


def test_the_session_record_reproduces_the_runs_table() -> None:
    """``rbs report`` on an --until-decided session judges the pairs at the looks the run
    took (from sequential.json), so the page shows the run's verdicts, intervals and reasons;
    a fixed-sample comparison of the same pairs differs."""
    rng = np.random.default_rng(11)
    plan = _plan()
    out = until_decided(["set", "get", "incr"],
                        _source(rng, {"set": 0.35, "get": 1.0, "incr": 0.95}, cv=0.08), plan)
    progress = out.progress.values()
    record = SequentialRecord(plan.design, plan.options.metric,
                              {p.test: p.looks for p in progress},
                              {p.test: p.stop_reason for p in progress},
                              {p.test: len(p.pairs) for p in progress})
    again = SequentialRecord.from_json(record.to_json())
    assert again == record
    pairs = {t: p.pairs for t, p in out.progress.items()}
    replayed = compare_recorded(pairs, again, plan.options)
    shown = [(r.test, r.verdict, r.change_pct, r.ci_low_pct, r.ci_high_pct, r.reason)
             for r in replayed.rows]
    assert shown == [(r.test, r.verdict, r.change_pct, r.ci_low_pct, r.ci_high_pct, r.reason)
                     for r in out.report.rows]
    fixed = compare_paired(pairs, plan.options)
    assert [r.ci_low_pct for r in fixed.rows] != [r.ci_low_pct for r in replayed.rows]
    with pytest.raises(ValueError, match="until-decided"):
        SequentialRecord.from_json('{"design": {"max_pairs": "x"}}')
