"""One policy per metric (issue 62, item 4): the noise floor, the watch's candidate floor,
the share of a candidate a confirmation carries, the alert floor and the precedence between
kinds are fields of the metric's frozen catalogue entry (``common.metrics``), read through
``analysis.policy`` and nowhere else. Each surface is checked by behaviour, with the
catalogue's entry changed under it: a surface that kept a number or an order of its own
(1 %, 5 %, "half", 3 %, "counts decide") would not follow the change and fails here."""

from __future__ import annotations

import dataclasses
import random
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.analysis import arrival, shown
from redis_benchmarks_spec.analysis.arrival import ArrivalPoint, Confirmation, confirm, judge
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.bisection import watch_range
from redis_benchmarks_spec.bisection.search import is_bad
from redis_benchmarks_spec.common import metrics
from redis_benchmarks_spec.common.metrics import metric
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import SeriesStep
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.notify import pr_summary, watch_confirm
from redis_benchmarks_spec.pullrequest.state import Section
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    client_fixture,
    datasink_fixture,
)
from tests.test_watch_agent import WHERE, sha
from tests.test_watch_alert import targets_fixture  # noqa: F401  (fixture by import)
from tests.test_watch_timed import Replayed, context, run

COUNT = metrics.INSTRUCTIONS_METRIC
OPS = metrics.THROUGHPUT_METRIC
MEMORY = metrics.DATASET


def _set(monkeypatch: pytest.MonkeyPatch, name: str, **fields: Any) -> None:
    """The catalogue's entry for ``name`` with ``fields`` changed, for this test only."""
    monkeypatch.setitem(metrics.CATALOGUE, name,
                        dataclasses.replace(metrics.CATALOGUE[name], **fields))


def _series(levels: list[tuple[int, float]], cv: float, seed: int = 7) -> list[ArrivalPoint]:
    rng = random.Random(seed)
    out: list[ArrivalPoint] = []
    for n, level in levels:
        out += [ArrivalPoint(f"{len(out) + k:040x}", level * (1 + rng.gauss(0, cv)), "fp")
                for k in range(n)]
    return out


# --- the catalogue holds the policy --------------------------------------------------------


def test_every_kind_carries_the_whole_policy() -> None:
    count, memory, ops, cpu = (metric(COUNT), metric(MEMORY), metric(OPS),
                               metric(metrics.SERVER_CPU_METRIC))
    for entry in (*metrics.CATALOGUE.values(), metric("used_memory.after_run"),
                  metric("instructions_per_op_main_thread"), metric("some_rate")):
        # a candidate is raised from one point: never on a smaller step than pairs decide
        assert entry.candidate_floor_pct >= entry.floor_pct, entry
        assert 0 < entry.confirm_share <= 1 and entry.alert_floor_pct >= 0, entry
    # the watch's floors: 1 % for counts and memory (the 0.5 % floor judges pairs), 5 % timed
    assert count.candidate_floor_pct == memory.candidate_floor_pct == 1.0
    assert ops.candidate_floor_pct == cpu.candidate_floor_pct == metrics.TIMED_FLOOR_PCT
    assert {e.confirm_share for e in metrics.CATALOGUE.values()} == {0.5}
    assert count.alert_floor_pct == memory.alert_floor_pct == 3.0 and ops.alert_floor_pct == 0
    # counts decide over memory, and both over timed figures
    assert count.precedence < memory.precedence < ops.precedence == cpu.precedence
    # a memory figure after the run is timed: the timed policy, not memory's
    after = metric("used_memory.after_run")
    assert (after.candidate_floor_pct, after.alert_floor_pct, after.precedence) == \
        (ops.candidate_floor_pct, ops.alert_floor_pct, ops.precedence)


# --- the engine's options ------------------------------------------------------------------


def test_options_built_for_a_count_carry_the_count_floor() -> None:
    for name, entry in metrics.CATALOGUE.items():
        assert CompareOptions(metric=name).noise_floor_pct == entry.floor_pct, name
        assert CompareOptions.for_metric(name).noise_floor_pct == entry.floor_pct, name
    assert CompareOptions().noise_floor_pct == metric(OPS).floor_pct
    # a floor given (a user's --noise-floor, a report read back) is kept
    assert CompareOptions.for_metric(COUNT, noise_floor_pct=2.0).noise_floor_pct == 2.0
    assert CompareOptions(metric=COUNT, noise_floor_pct=2.0).noise_floor_pct == 2.0
    report = ComparisonReport((), CompareOptions.for_metric(COUNT, alpha=0.01))
    back = ComparisonReport.from_dict(report.to_dict()).options
    assert back == report.options and back.noise_floor_pct == metric(COUNT).floor_pct
    # another metric from timed options: the catalogue's floor of it, alpha kept
    moved = CompareOptions.for_metric(OPS, alpha=0.01).with_metric(COUNT)
    assert (moved.metric, moved.noise_floor_pct, moved.alpha) == \
        (COUNT, metric(COUNT).floor_pct, 0.01)
    assert arrival.confirm_options(COUNT).noise_floor_pct == metric(COUNT).floor_pct


def test_options_are_frozen() -> None:
    options = CompareOptions.for_metric(COUNT)
    with pytest.raises(dataclasses.FrozenInstanceError):
        options.noise_floor_pct = 5.0  # type: ignore[misc]


def test_the_floor_follows_the_catalogue(monkeypatch: pytest.MonkeyPatch) -> None:
    _set(monkeypatch, COUNT, floor_pct=0.25)
    assert CompareOptions(metric=COUNT).noise_floor_pct == 0.25
    assert arrival.confirm_options(COUNT).noise_floor_pct == 0.25


def test_a_range_bisection_judges_a_count_with_the_count_floor() -> None:
    """The watch's bisection of a count's change (its prober's options): the count's floor,
    not the timed 5 % the options once had by default."""
    setup = watch_range.RangeSetup(client=None, names=None, repo=None)  # type: ignore[arg-type]
    series = SeriesStep("t-get", "lab-a", BUILD_VARIANT, COUNT, -3.9)
    (prober,) = watch_range.probers_for(setup, series, sha(1))
    options = prober.plan.options  # type: ignore[attr-defined]
    assert options.metric == COUNT and options.noise_floor_pct == metric(COUNT).floor_pct


# --- the watch's candidate floor -----------------------------------------------------------


def test_the_watchs_candidate_floor_is_the_catalogues(monkeypatch: pytest.MonkeyPatch) -> None:
    """A 0.8 % step of a count that spreads 0.02 % run to run: under the count's candidate
    floor (1 %) it is no candidate; with the catalogue's floor at 0.5 % it is one. A 4 %
    step of ops/sec likewise against its 5 % and then 3 %."""
    quiet = _series([(20, 1e6), (1, 1.008e6)], 0.0002)
    assert judge(quiet, COUNT).outcome == "none"
    timed = _series([(30, 1e5), (6, 0.96e5)], 0.002, seed=5)
    assert all(judge(timed[:n], OPS).outcome == "none" for n in range(31, 37))
    _set(monkeypatch, COUNT, candidate_floor_pct=0.5)
    _set(monkeypatch, OPS, candidate_floor_pct=3.0)
    assert judge(quiet, COUNT).outcome == "candidate"
    assert any(judge(timed[:n], OPS).outcome == "candidate" for n in range(31, 37))


# --- the confirmation share ----------------------------------------------------------------


def _rows(change: float) -> tuple[list[float], list[float]]:
    """Five re-runs a side of a count whose change is ``change`` percent, pairs agreeing."""
    before = [1000.0 * (1 + 0.0001 * k) for k in range(5)]
    return before, [b * (1 + change / 100) for b in before]


def test_the_confirmation_share_is_the_catalogues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Re-runs that show 60 % of the candidate's change: confirmed at the catalogue's half,
    not when the catalogue asks 70 %; bisect's midpoint rule is the same rule."""
    before, after = _rows(-6.0)
    got = confirm(before, after, COUNT, -10.0)
    assert got.row.verdict == IMPROVEMENT and got.confirmed
    assert is_bad(-6.0, -10.0, COUNT) and is_bad(-6.0, -10.0, OPS)
    _set(monkeypatch, COUNT, confirm_share=0.7)
    assert not confirm(before, after, COUNT, -10.0).confirmed
    assert not is_bad(-6.0, -10.0, COUNT) and is_bad(-6.0, -10.0, OPS)


# --- the alert floor -----------------------------------------------------------------------


def _small_count_change(client: redis.Redis, targets: Any) -> watch_confirm.Decided:
    """A +1.08 % count change confirmed on five agreeing re-runs a side (#11199's)."""
    push_results(client, [run(sha(1), 1e5, 1000.0), run(sha(2), 1e5, 1010.8)])
    watch_store.add_candidate(client, WHERE, sha(1), sha(2), SeriesStep(
        "t-get", "lab-a", BUILD_VARIANT, COUNT, 1.08))
    reruns = Replayed(client, {sha(1): [1000.5, 1000.2, 1000.6, 1000.4, 1000.3],
                               sha(2): [1010.6, 1010.9, 1010.5, 1010.8, 1010.7]})
    return watch_confirm.step(context(client, reruns, targets))[-1]


def test_the_alert_floor_is_the_catalogues(client: redis.Redis, targets: Any,
                                          monkeypatch: pytest.MonkeyPatch) -> None:
    where_to, receiver, _issues = targets
    _set(monkeypatch, COUNT, alert_floor_pct=2.0)
    noted = _small_count_change(client, where_to)
    assert noted.alert is None and "below the 2 % alert floor" in noted.candidate.reason
    assert receiver.posts == []


def test_a_count_over_its_alert_floor_is_told(client: redis.Redis, targets: Any,
                                             monkeypatch: pytest.MonkeyPatch) -> None:
    where_to, receiver, _issues = targets
    _set(monkeypatch, COUNT, alert_floor_pct=1.0)
    told = _small_count_change(client, where_to)
    assert told.alert is not None and told.alert.sha == sha(2)
    assert [p["rbs"]["sha"] for p in receiver.posts] == [sha(2)]


# --- precedence between kinds --------------------------------------------------------------


def _row(name: str, verdict: str, change: float) -> Comparison:
    return Comparison(test="t", metric=name, n_baseline=5, n_comparison=5, change_pct=change,
                      ci_low_pct=change - 0.5, ci_high_pct=change + 0.5, verdict=verdict)


def _report() -> ComparisonReport:
    """Throughput and instructions per op of the same runs, both undecided (a tie)."""
    counted = ComparisonReport((_row(COUNT, UNKNOWN, 4.0),),
                               CompareOptions.for_metric(COUNT))
    return ComparisonReport((_row(OPS, UNKNOWN, -8.0),), CompareOptions.for_metric(OPS),
                            instructions=counted)


def _series_confirmation(name: str, change: float) -> watch_confirm.SeriesConfirmation:
    row = _row(name, REGRESSION, change)
    return watch_confirm.SeriesConfirmation(
        SeriesStep("t", "lab-a", BUILD_VARIANT, name, change), Confirmation(row, ()), [], 1.0)


def test_precedence_between_kinds_is_the_catalogues(monkeypatch: pytest.MonkeyPatch) -> None:
    """Counts decide over timed figures in the PR comment's rows, the watch's alert and a
    report's order on a tie; with the catalogue ranking ops/sec first, all three follow."""
    section = Section("lab-a", BUILD_VARIANT, "completed", report=_report().to_dict())
    confirmed = [_series_confirmation(OPS, -8.0), _series_confirmation(COUNT, 4.0)]

    def readings() -> tuple[list[str], list[str], list[str]]:
        rows = [r.metric for _, r in pr_summary._decided_rows([section])]
        chosen, _median = watch_confirm._choose(confirmed)
        order = [r.options.metric for r in shown.by_decided(_report())]
        return rows, [x.series.metric for x in chosen], order

    assert readings() == ([COUNT], [COUNT], [COUNT, OPS])
    _set(monkeypatch, OPS, precedence=-1)
    assert readings() == ([OPS], [OPS], [OPS, COUNT])


def test_more_decided_tests_still_come_first() -> None:
    """Precedence breaks a tie in a report's order; it never hides a decided metric."""
    counted = ComparisonReport((_row(COUNT, UNKNOWN, 4.0),),
                               CompareOptions.for_metric(COUNT))
    timed = ComparisonReport((_row(OPS, NO_CHANGE, 0.1),), CompareOptions.for_metric(OPS),
                             instructions=counted)
    assert [r.options.metric for r in shown.by_decided(timed)] == [OPS, COUNT]
