"""Change points on arrival (analysis/arrival.py): synthetic series of both kinds."""

from __future__ import annotations

import random

from redis_benchmarks_spec.analysis.arrival import (
    ArrivalPoint,
    confirm,
    judge,
    judge_boundary,
    noise_pct,
    rerun_pairs,
    series_of,
)
from redis_benchmarks_spec.analysis.compare import REGRESSION, UNKNOWN

COUNT = "instructions_per_op"
OPS = "ALL_STATS.Totals.Ops/sec"


def series(levels: list[tuple[int, float]], cv: float, seed: int = 7,
           fingerprint: str = "fp1") -> list[ArrivalPoint]:
    rng = random.Random(seed)
    out = []
    for n, level in levels:
        for _ in range(n):
            out.append(ArrivalPoint(f"{len(out):040x}", level * (1 + rng.gauss(0, cv)),
                                    fingerprint))
    return out


def test_a_count_step_is_a_candidate_on_its_first_point() -> None:
    points = series([(20, 1e6), (1, 1.03e6)], 0.0015)
    got = judge(points, COUNT)
    assert got.outcome == "candidate"
    assert (got.before_commit, got.after_commit) == (points[-2].commit, points[-1].commit)
    assert 2.5 < got.change_pct < 3.5


def test_a_flat_count_series_raises_nothing_on_any_arrival() -> None:
    points = series([(40, 1e6)], 0.0015, seed=3)
    assert all(judge(points[:n], COUNT).outcome == "none" for n in range(2, 41))


def test_a_timed_step_waits_for_points_after_it_and_a_flat_one_never_fires() -> None:
    flat = series([(60, 1e5)], 0.12, seed=11)
    assert all(judge(flat[:n], OPS).outcome == "none" for n in range(2, 61))
    stepped = series([(30, 1e5), (6, 0.7e5)], 0.05, seed=5)
    outcomes = [judge(stepped[:n], OPS).outcome for n in range(31, 37)]
    assert "candidate" in outcomes
    found = next(judge(stepped[:n], OPS) for n in range(31, 37)
                 if judge(stepped[:n], OPS).outcome == "candidate")
    assert found.after_commit == stepped[30].commit and found.change_pct < -20


def test_the_noise_of_the_series_sets_the_bar() -> None:
    # a 3 % step is a candidate on a quiet count, not on a count whose own spread is 2 %
    assert judge(series([(20, 1e6), (1, 1.03e6)], 0.0015), COUNT).outcome == "candidate"
    noisy = series([(30, 1e6), (1, 1.03e6)], 0.02, seed=2)
    assert judge(noisy, COUNT).outcome == "none"
    assert 1.0 < noise_pct([p.value for p in noisy[:30]]) < 3.5


def test_a_changed_fingerprint_is_a_boundary_not_a_candidate() -> None:
    before = series([(20, 1e6)], 0.0015)
    after = [ArrivalPoint("f" * 40, 1.2e6, "fp2")]
    got = judge(before + after, COUNT)
    assert got.outcome == "host-changed" and got.after_commit == "f" * 40
    # and the points after the boundary are judged only against each other
    more = series([(3, 1.2e6)], 0.0015, seed=9, fingerprint="fp2")
    assert judge(before + after + more, COUNT).outcome == "none"


def _new_host(old: list[ArrivalPoint], values: list[float]) -> list[ArrivalPoint]:
    """``old`` then the new host's points (fp2) of ``values``, in arrival order, then the
    re-measure of ``old``'s last commit on the new host (it is asked after the boundary)."""
    new = [ArrivalPoint(f"{len(old) + k:040x}", v, "fp2") for k, v in enumerate(values)]
    return [*old, *new, ArrivalPoint(old[-1].commit, 1.2e6, "fp2")]


def test_the_remeasure_goes_first_among_the_new_hosts_points() -> None:
    old = series([(20, 1e6)], 0.0015)
    stray = ArrivalPoint(old[5].commit, 1.2e6, "fp2")  # a re-run of an older commit there
    got = series_of([*_new_host(old, [1.2e6, 1.2e6]), stray])
    assert [p.commit for p in got[19:]] == [old[-1].commit, old[-1].commit,
                                           f"{20:040x}", f"{21:040x}"]
    assert [p.remeasure for p in got[19:]] == [False, True, False, False]
    assert [p.fingerprint for p in got[20:]] == ["fp2"] * 3


def test_the_new_hosts_first_points_are_judged_against_the_remeasure() -> None:
    old = series([(20, 1e6)], 0.0015)
    # no code change: the new host counts 20 % more for every commit: nothing
    assert judge_boundary(series_of(_new_host(old, [1.2e6, 1.2e6])), COUNT).outcome == "none"
    # +4 % at the boundary commit: a candidate between the last old commit and it
    at = judge_boundary(series_of(_new_host(old, [1.248e6, 1.248e6])), COUNT)
    assert (at.outcome, at.before_commit, at.after_commit) == (
        "candidate", old[-1].commit, f"{20:040x}")
    assert 3.5 < at.change_pct < 4.5
    # +4 % one commit later: the candidate is on that commit
    later = series_of(_new_host(old, [1.2e6, 1.248e6]))
    got = judge_boundary(later, COUNT)
    assert (got.before_commit, got.after_commit) == (f"{20:040x}", f"{21:040x}")
    # and a point arriving after the re-measure is judged against it, once
    assert judge([*later, ArrivalPoint(f"{22:040x}", 1.25e6, "fp2")], COUNT).outcome == "none"
    arrives = [*series_of(_new_host(old, [1.2e6])), ArrivalPoint(f"{21:040x}", 1.248e6, "fp2")]
    assert judge(arrives, COUNT).after_commit == f"{21:040x}"
    # a timed series against its old host's spread: a 10 % wobble is not a candidate
    timed = series([(20, 1e5)], 0.05, seed=4)
    assert judge_boundary(series_of([*timed, ArrivalPoint("e" * 40, 1.1e5, "fp2"),
                                     ArrivalPoint(timed[-1].commit, 1e5, "fp2")]),
                          OPS).outcome == "none"


def test_confirmation_is_the_engines_verdict_on_pairs_of_reruns() -> None:
    before = [1e6, 1.001e6, 1e6, 1.0005e6, 1.001e6]
    up = confirm(before, [1.03e6, 1.031e6, 1.03e6, 1.0305e6, 1.031e6], COUNT, 3.0)
    assert up.confirmed and up.row.verdict == REGRESSION and len(up.pairs) == 5
    assert up.low_pct is not None and up.high_pct is not None
    assert 2.0 < up.low_pct < up.change_pct < up.high_pct < 4.0
    # too few pairs for the engine to decide on their own spread: undecided, not confirmed
    few = confirm(before[:2], [1.03e6, 1.031e6], COUNT, 3.0)
    assert not few.confirmed and few.undecided and few.row.verdict == UNKNOWN
    # inside the catalogue's 0.5 % floor for counts, or the other way: not confirmed
    flat = confirm(before, [v * 1.001 for v in before], COUNT, 3.0)
    assert not flat.confirmed and not flat.undecided
    assert not confirm(before, [v * 0.97 for v in before], COUNT, 3.0).confirmed
    drop = confirm([1e5, 1.01e5] * 5, [0.8e5, 0.81e5] * 5, OPS, -20.0)
    assert drop.confirmed and drop.high_pct is not None and drop.high_pct < 0
    assert -22 < drop.change_pct < -18 and drop.row.noise_floor_pct == 5.0


def test_reruns_are_paired_by_round() -> None:
    assert rerun_pairs([1.0, 2.0, 3.0], [4.0, 5.0]) == ((1.0, 4.0), (2.0, 5.0))
