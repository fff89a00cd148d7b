"""Counts of deployments that move them (io-threads, replicas, a cluster) are judged as
host-dependent, in one place (issue 40, item 2): synthetic pairs through the engine and the
``--until-decided`` loop."""

from __future__ import annotations

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.paired import NoisePrior
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.sequential_compare import compare_sequential
from redis_benchmarks_spec.analysis.session_runs import (
    ABRun,
    count_moves_with_host,
    host_dependent_tests,
)
from redis_benchmarks_spec.common.metrics import (
    HOST_COUNT_PRIOR_SD,
    INSTRUCTIONS_METRIC,
    MIN_PAIRS,
    THROUGHPUT_METRIC,
    host_dependent,
    metric,
)
from redis_benchmarks_spec.results.document import DeploymentRecord, RunContext, RunResult
from redis_benchmarks_spec.runner.adaptive import AdaptivePlan, for_metric, until_decided

STANDALONE = "oss-standalone"
THREADED = "oss-standalone-04-io-threads"
COUNTS = CompareOptions(metric=INSTRUCTIONS_METRIC, noise_floor_pct=0.5)


def _doc(name: str, topology: str, value: float, args: tuple[str, ...] = (),
         deployment: DeploymentRecord | None = None) -> RunResult:
    return RunResult(test_name=name, run_id=f"{name}-{value}", status="ok",
                     context=RunContext(topology=topology), server_args=list(args),
                     metrics={INSTRUCTIONS_METRIC: value}, deployment=deployment)


def _runs(tests: dict[str, str], pairs: list[tuple[float, float]], first: int = 0
          ) -> list[ABRun]:
    """Each test (name -> topology) with the same (baseline, comparison) counts."""
    out = []
    for i, (b, c) in enumerate(pairs, start=first):
        for name, topology in tests.items():
            out += [ABRun("baseline", i, _doc(name, topology, b)),
                    ABRun("comparison", i, _doc(name, topology, c))]
    return out


def test_the_rule_names_threaded_replicated_and_clustered_deployments() -> None:
    assert count_moves_with_host(_doc("t", STANDALONE, 1.0)) == ""
    assert count_moves_with_host(_doc("t", THREADED, 1.0)) == "4 io-threads"
    assert count_moves_with_host(_doc("t", "custom", 1.0, ("--io-threads", "2"))) == \
        "2 io-threads"
    one_thread = DeploymentRecord("x", STANDALONE, io_threads=1)
    assert count_moves_with_host(_doc("t", "x", 1.0, deployment=one_thread)) == ""
    replicas = DeploymentRecord("r", STANDALONE, replicas=1)
    assert count_moves_with_host(_doc("t", "r", 1.0, deployment=replicas)) == "replicas"
    assert count_moves_with_host(_doc("t", "oss-standalone-01-replicas", 1.0)) == "replicas"
    cluster = DeploymentRecord("c", "oss-cluster", primaries=3)
    assert count_moves_with_host(_doc("t", "c", 1.0, deployment=cluster)) == "a cluster"
    runs = _runs({"a": STANDALONE, "b": THREADED}, [(1.0, 1.0)])
    assert host_dependent_tests(runs, INSTRUCTIONS_METRIC) == {"b": "4 io-threads"}
    # only counts: a timed metric is host-dependent anyway, memory of a primary is not moved
    assert host_dependent_tests(runs, THROUGHPUT_METRIC) == {}
    assert host_dependent_tests(runs, "used_memory") == {}


def test_the_command_path_of_a_threaded_server_is_not_moved_by_its_io_threads() -> None:
    """The command path runs on the main thread: a run that counted it with I/O threads is
    judged as deterministic; its whole-process count, and a cluster's command path, are not."""
    from redis_benchmarks_spec.results.profile import ProfileSummary
    scope = {"scope": "command path (inclusive instructions of processCommand ...)"}
    doc = _doc("t", THREADED, 1.0)
    doc.profiles["instructions"] = ProfileSummary("instructions", data=scope)
    assert count_moves_with_host(doc, INSTRUCTIONS_METRIC) == ""
    assert count_moves_with_host(doc, "instructions_per_op_process") == "4 io-threads"
    assert count_moves_with_host(doc) == "4 io-threads"
    whole = _doc("t", THREADED, 1.0)  # a binary without symbols: the whole process
    whole.profiles["instructions"] = ProfileSummary("instructions", data={
        "scope": "whole process (serverCron left out)"})
    assert count_moves_with_host(whole, INSTRUCTIONS_METRIC) == "4 io-threads"
    cluster = _doc("t", "oss-cluster-3-primaries", 1.0,
                   deployment=DeploymentRecord("c", "oss-cluster", primaries=3))
    cluster.profiles["instructions"] = ProfileSummary("instructions", data=scope)
    assert count_moves_with_host(cluster, INSTRUCTIONS_METRIC) == "a cluster"


def test_the_catalogue_judges_a_moved_count_as_host_dependent() -> None:
    moved = host_dependent(metric(INSTRUCTIONS_METRIC), "2 io-threads")
    assert not moved.deterministic and moved.min_pairs == MIN_PAIRS
    assert moved.prior_sd == HOST_COUNT_PRIOR_SD and "2 io-threads" in moved.prior_source
    assert metric(INSTRUCTIONS_METRIC).deterministic  # the entry itself is unchanged


def test_agreeing_pairs_decide_a_standalone_count_not_a_threaded_one() -> None:
    # +0.7 %, five pairs that agree to 0.02 %: decided on their own spread standalone; the
    # threaded count's interval is never narrower than the assumed 1 % spread
    pairs = [(1000.0, 1007.0), (1000.2, 1007.1), (999.9, 1006.9), (1000.1, 1007.2),
             (1000.0, 1007.0)]
    report = judge(_runs({"get": STANDALONE, "get-t": THREADED}, pairs), Judging(COUNTS))
    rows = {r.test: r for r in report.rows}
    assert rows["get"].verdict == "REGRESSION"
    assert not rows["get"].spread_from.startswith("host-dependent")
    assert rows["get-t"].verdict == "UNKNOWN"
    assert rows["get-t"].spread_from.startswith("host-dependent count (4 io-threads)")
    assert "1.0 %" in rows["get-t"].spread_from
    assert rows["get-t"].ci_low_pct is not None and rows["get-t"].ci_low_pct < 0


def test_a_calibration_widens_a_threaded_count_instead_of_pooling() -> None:
    # pairs that agree, a calibration A/A of each test: the standalone count pools it and
    # decides from 3 pairs; the threaded one does not decide from 3, and from 5 it is held to
    # the calibration's spread, named as such
    pairs = [(1000.0, 1020.0), (1000.5, 1020.4), (999.8, 1019.9), (1000.1, 1020.1),
             (1000.0, 1020.2)]
    prior = NoisePrior(0.01, 8)
    how = Judging(COUNTS, priors={INSTRUCTIONS_METRIC: {"get": prior, "get-t": prior}})
    tests = {"get": STANDALONE, "get-t": THREADED}
    three = {r.test: r for r in judge(_runs(tests, pairs[:3]), how).rows}
    assert three["get"].verdict == "REGRESSION"
    assert "pooled with a calibration" in three["get"].spread_from
    assert three["get-t"].verdict == "UNKNOWN"
    assert three["get-t"].spread_from.startswith("host-dependent count (4 io-threads)")
    five = {r.test: r for r in judge(_runs(tests, pairs), how).rows}
    assert "pooled" not in five["get-t"].spread_from
    assert "calibrated on this host: 1.0 %" in five["get-t"].spread_from
    width = {t: r.ci_high_pct - r.ci_low_pct for t, r in five.items()
             if r.ci_high_pct is not None and r.ci_low_pct is not None}
    assert width["get-t"] > width["get"]


class _Source:
    """Pairs of +2 % counts that agree, for every test asked, with their documents."""

    def __init__(self, tests: dict[str, str]) -> None:
        self.tests, self.asked = tests, {t: 0 for t in tests}
        self.runs: list[ABRun] = []

    def __call__(self, tests: list[str], first: int, count: int,
                 deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        pairs = [(1000.0 + 0.1 * i, 1020.0 + 0.1 * i) for i in range(first, first + count)]
        for test in tests:
            self.asked[test] += count
            self.runs += _runs({test: self.tests[test]}, pairs, first)
        return {t: pairs for t in tests}


def test_until_decided_stops_the_decided_count_and_spends_on_the_open_one() -> None:
    source = _Source({"get": STANDALONE, "get-t": THREADED})
    prior = NoisePrior(0.001, 8)
    plan = AdaptivePlan(SequentialPlan(9, 0.05), COUNTS, first_round=3, round_pairs=3,
                        priors={INSTRUCTIONS_METRIC: {"get": prior, "get-t": prior}})
    outcome = until_decided(list(source.tests), source, plan)
    assert source.asked == {"get": 3, "get-t": 6}
    assert outcome.progress["get"].stop_reason == "decided (REGRESSION)"
    rows = {r.test: r for r in outcome.report.rows}
    assert rows["get-t"].spread_from.startswith("host-dependent count (4 io-threads)")


class _Counts:
    """Per test a change in %: pairs that agree to 0.02 %, with their documents."""

    def __init__(self, tests: dict[str, tuple[str, float]]) -> None:
        self.tests, self.asked = tests, {t: 0 for t in tests}
        self.runs: list[ABRun] = []

    def __call__(self, tests: list[str], first: int, count: int,
                 deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        out = {}
        for test in tests:
            topology, pct = self.tests[test]
            out[test] = [(1000.0 + 0.2 * (i % 2), (1000.0 + 0.2 * (i % 3)) * (1 + pct / 100))
                         for i in range(first, first + count)]
            self.asked[test] += count
            self.runs += _runs({test: topology}, out[test], first)
        return out


def test_the_agents_budget_stops_agreeing_counts_at_three_pairs() -> None:
    # the agent's default budget (40 pairs, a first round of 6): counts with a calibration
    # prior take 3 pairs, decided either way; a threaded count keeps the rounds
    tests = {"changed": (STANDALONE, 0.7), "same": (STANDALONE, 0.0),
             "threaded": (THREADED, 0.7)}
    source = _Counts(tests)
    prior = NoisePrior(0.0015, 8)
    plan = AdaptivePlan(SequentialPlan(40, 0.05), COUNTS, first_round=6, round_pairs=4,
                        priors={INSTRUCTIONS_METRIC: {t: prior for t in tests}})
    outcome = until_decided(list(tests), source, plan)
    verdicts = {r.test: r.verdict for r in outcome.report.rows}
    assert verdicts["changed"] == "REGRESSION" and verdicts["same"] == "NO CHANGE"
    assert source.asked["changed"] == source.asked["same"] == 3
    assert source.asked["threaded"] > 3
    assert outcome.design is not None and outcome.design.max_pairs == 6


def test_without_priors_a_count_takes_the_pairs_its_own_spread_needs() -> None:
    source = _Counts({"changed": (STANDALONE, 0.7), "same": (STANDALONE, 0.0)})
    plan = AdaptivePlan(SequentialPlan(40, 0.05), COUNTS, first_round=6, round_pairs=4)
    outcome = until_decided(list(source.tests), source, plan)
    assert {r.test: r.verdict for r in outcome.report.rows} == \
        {"changed": "REGRESSION", "same": "NO CHANGE"}
    assert source.asked == {"changed": MIN_PAIRS, "same": MIN_PAIRS}


def test_a_timed_metric_keeps_the_plans_design() -> None:
    plan = AdaptivePlan(SequentialPlan(40, 0.05), CompareOptions(), first_round=6)
    assert for_metric(plan, THROUGHPUT_METRIC) is plan
    assert for_metric(plan, None) is plan


def test_spending_over_forty_pairs_keeps_agreeing_counts_unknown() -> None:
    # why a deterministic metric's design spans 6 pairs (common.metrics): +0.7 % at a 0.1 %
    # pair spread, 6 pairs without a prior and 3 with one
    pairs = [(1000.0, 1007.0 * (1 + d / 100)) for d in (0.1, -0.1, 0.15, -0.05, 0.0, -0.1)]
    prior = {"get": NoisePrior(0.0015, 8)}
    for n, priors in ((6, None), (3, prior)):
        judged = {most: compare_sequential({"get": pairs[:n]}, {"get": [n]},
                                           SequentialPlan(most, 0.05), COUNTS, priors=priors)
                  for most in (40, 6)}
        assert judged[40].rows[0].verdict == "UNKNOWN"
        assert judged[6].rows[0].verdict == "REGRESSION"


class _SeedSpread:
    """Per test a change in %: counts that spread ~0.3 % run to run, as hash seeds make
    them (TTL's command path per op in four head runs: 2,664 / 2,658 / 2,651 / 2,675)."""

    DEVIATIONS = (0.3, -0.4, 0.1, 0.5, -0.2, -0.3, 0.4, 0.0)

    def __init__(self, tests: dict[str, float], topology: str = STANDALONE) -> None:
        self.tests, self.asked = tests, {t: 0 for t in tests}
        self.topology = topology
        self.runs: list[ABRun] = []

    def __call__(self, tests: list[str], first: int, count: int,
                 deadline: float | None) -> dict[str, list[tuple[float, float]]]:
        dev = self.DEVIATIONS
        out = {}
        for test in tests:
            out[test] = [(1000.0 * (1 + dev[(i + 3) % 8] / 100),
                          1000.0 * (1 + dev[i % 8] / 100) * (1 + self.tests[test] / 100))
                         for i in range(first, first + count)]
            self.asked[test] += count
            self.runs += _runs({test: self.topology}, out[test], first)
        return out


def test_a_count_more_pairs_cannot_decide_stops_and_says_why() -> None:
    # +0.3 % under a 0.3 % spread: the rest of 6 pairs without spread, at today's estimate
    # or at no change, leave it UNKNOWN, so it stops at 5 (at 4, with the shipped 0.3 % count
    # prior pooled in, 2 more pairs could still have decided it); the others get the pairs that decide them,
    # and every verdict is the one the full design gives (UNKNOWN at 6 pairs for +0.3 %)
    changes = {"same": 0.0, "small": 0.3, "mid": 1.5, "big": -30.0}
    source = _SeedSpread(changes)
    plan = AdaptivePlan(SequentialPlan(6, 0.05), COUNTS, first_round=3, round_pairs=1)
    outcome = until_decided(list(changes), source, plan)
    verdicts = {r.test: r.verdict for r in outcome.report.rows}
    assert verdicts == {"same": "NO CHANGE", "small": "UNKNOWN", "mid": "REGRESSION",
                        "big": "IMPROVEMENT"}
    # +1.5 % at a 0.3 % spread is decided by its first 3 pairs: the count prior the catalogue
    # ships (common.metrics.COUNT_PRIOR_SD) stands in for an A/A this host never ran
    assert source.asked["small"] == 5 and source.asked["mid"] == 3
    assert outcome.progress["small"].stop_reason == \
        "more pairs cannot decide it (not even 6 without spread)"
    row = {r.test: r for r in outcome.report.rows}["small"]
    assert "more pairs cannot decide it" in row.reason
    # a timed metric keeps its pairs: its estimate still moves by more than its floor
    timed = AdaptivePlan(SequentialPlan(6, 0.05), CompareOptions(metric=THROUGHPUT_METRIC),
                         first_round=3, round_pairs=1)
    source = _SeedSpread({"small": 0.3})
    outcome = until_decided(["small"], source, timed)
    assert source.asked["small"] > 3
    assert outcome.progress["small"].stop_reason == "decided (NO CHANGE)"


def test_a_count_near_its_floor_or_moved_by_its_host_keeps_its_pairs() -> None:
    # +0.45 % under a 0.5 % floor: today's estimate and no change, continued without spread,
    # stay UNKNOWN after 3 pairs, but one standard error farther from 0 could decide it, so it
    # is not stopped there (the full design's verdict, UNKNOWN, after the pairs it takes)
    plan = AdaptivePlan(SequentialPlan(6, 0.05), COUNTS, first_round=3, round_pairs=1)
    source = _SeedSpread({"near": 0.45})
    outcome = until_decided(["near"], source, plan)
    assert source.asked["near"] > 3
    assert outcome.report.rows[0].verdict == "UNKNOWN"
    # a threaded count is host-dependent: its estimate still moves, never stopped as futile
    source = _SeedSpread({"small": 0.3}, topology=THREADED)
    outcome = until_decided(["small"], source, plan)
    assert "more pairs cannot decide" not in outcome.progress["small"].stop_reason
    assert source.asked["small"] == 6
