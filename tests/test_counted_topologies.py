"""What a pull request's instruction-count A/B runs and promises: topologies whose counts
move with the host are left out when the pairs allowed cannot decide them, and the queued
line's ETA counts the runs the A/B makes (the head's only, when the base's counts are the
push's). Pure logic over the shipped topologies catalogue."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

from redis_benchmarks_spec.agent.ab_event import counted_topologies, eta_plan
from redis_benchmarks_spec.agent.platform_config import UntilDecidedBudget
from redis_benchmarks_spec.agent.suite_cost import EtaPlan, eta_text
from redis_benchmarks_spec.analysis.session_runs import topology_moves_counts
from redis_benchmarks_spec.common.metrics import MIN_PAIRS
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import load_topologies

COUNTS = UntilDecidedBudget(max_repetitions=4, first_round=6, round_repetitions=1,
                            time_budget_s=1800, metric="instructions_per_op")
CATALOGUE = load_topologies()


def _suite(name: str, *topologies: str) -> Suite:
    return Suite(name=name, path=Path(f"{name}.yml"), topologies=list(topologies))


def test_the_shipped_topologies_that_move_counts_are_named_with_why() -> None:
    assert topology_moves_counts(CATALOGUE["oss-standalone"]) == ""
    assert topology_moves_counts(CATALOGUE["oss-standalone-02-io-threads"]) == "2 io-threads"
    # the command path is the main thread's: I/O threads do not move it (HGET's pairs with 2
    # io-threads agreed to 0.06 %, at the standalone level, docs/statistics.md)
    io = CATALOGUE["oss-standalone-02-io-threads"]
    assert topology_moves_counts(io, "instructions_per_op") == ""
    assert topology_moves_counts(io, "instructions_per_op_process") == "2 io-threads"
    assert topology_moves_counts(CATALOGUE["oss-cluster-3-primaries"],
                                 "instructions_per_op") == "a cluster"
    assert topology_moves_counts(CATALOGUE["oss-standalone-01-replicas"]) == "replicas"
    assert topology_moves_counts(CATALOGUE["oss-cluster-3-primaries"]) == "a cluster"
    assert topology_moves_counts(None) == ""


def test_host_dependent_topologies_are_left_out_only_where_pairs_cannot_decide_them() -> None:
    suites = [_suite("get", "oss-standalone", "oss-standalone-02-io-threads",
                     "oss-cluster-3-primaries"),
              _suite("only-cluster", "oss-cluster-3-primaries"),
              _suite("set", "oss-standalone")]
    kept, line = counted_topologies(COUNTS, CATALOGUE, suites)
    # the command path's count (COUNTS' metric) is not moved by I/O threads: they are counted
    assert [s.topologies for s in kept] == [["oss-standalone", "oss-standalone-02-io-threads"],
                                            ["oss-cluster-3-primaries"], ["oss-standalone"]]
    assert line.startswith("Not counted: 1 test(s) in topologies whose instruction counts "
                           "move with the host (get @ oss-cluster-3-primaries (a cluster))")
    process = replace(COUNTS, metric="instructions_per_op_process")
    kept, line = counted_topologies(process, CATALOGUE, suites)
    assert kept[0].topologies == ["oss-standalone"] and "2 io-threads" in line
    assert f"they need {MIN_PAIRS} pairs, this platform allows 4" in line
    # enough pairs: every topology runs; a timed metric: every topology runs
    for budget in (replace(COUNTS, max_repetitions=MIN_PAIRS),
                   replace(COUNTS, metric="ALL_STATS.Totals.Ops/sec")):
        assert counted_topologies(budget, CATALOGUE, suites) == (suites, "")


def test_the_eta_counts_the_head_runs_of_a_count_ab_and_never_promises_more_than_its_cap() -> None:
    # the base's stored runs give a least spread: 3 head runs can decide, 4 at most
    head_only = eta_plan(COUNTS, stored_base=True)
    assert head_only == EtaPlan(3, 4, 1800, runs_per_pair=1)
    assert eta_plan(COUNTS, stored_base=False).runs_per_pair == 2
    timed = eta_plan(replace(COUNTS, metric="ALL_STATS.Totals.Ops/sec"), stored_base=True)
    assert timed == EtaPlan(6, 4, 1800, runs_per_pair=2)
    # 70 tests of ~6 s a run: "about" 21 min, "at most" 28 (4 pairs, within the budget)
    line = eta_text([f"t{i}" for i in range(70)], {f"t{i}": 6.0 for i in range(70)}, head_only)
    assert line.startswith("ETA about 21 min (70 suite(s) x 3 runs of the head at this "), line
    assert line.endswith("at most 28 min (4 pairs each)"), line
    over = eta_text(["a"], {"a": 600.0}, EtaPlan(6, 6, 1800))
    about, most = (int(x.split(" min")[0]) for x in over.split("about ")[1].split("at most "))
    assert about <= most, over
