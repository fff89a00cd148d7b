"""Instruction-count tests side by side on disjoint cores (issue 40, item 3): the lanes a host
gives, the platform setting, the ETA, and a real A/B of two suites under callgrind in two
lanes of this 2-core VM (one CPU each: server and client share it, as a lane of one core)."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from redis_benchmarks_spec.agent.platform_config import PlatformConfigError, parse_budget
from redis_benchmarks_spec.agent.suite_cost import EtaPlan, eta_text
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.ab import (
    BASELINE,
    COMPARISON,
    ABConfig,
    ABTest,
    Side,
    ab_tests,
    run_ab_tests,
)
from redis_benchmarks_spec.runner.config import SessionConfig
from redis_benchmarks_spec.runner.count_lanes import lanes_of
from redis_benchmarks_spec.runner.cpus import placement
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions
from redis_benchmarks_spec.telemetry.window import WindowOptions
from tests.cli import write_suite


def _where(n: int, irq: dict[int, int] | None = None):  # type: ignore[no-untyped-def]
    return placement(list(range(n)), irq or {}, {c: ("0", str(c)) for c in range(n)})


def test_lanes_leave_cpu_0_and_interrupt_cpus_out_when_enough_remain() -> None:
    # 8 CPUs, CPU 3 takes the device interrupts: 1, 2, 4, 5, 6, 7 make three lanes of two,
    # CPU 1 (a few interrupts) last
    where = _where(8, {3: 1000, 1: 10})
    assert lanes_of(where, 2) == [[2, 4], [5, 6], [7, 1]]
    assert all(0 not in lane and 3 not in lane for lane in lanes_of(where, 2))
    assert len(lanes_of(where, 2, wanted=2)) == 2
    # a lane never shares a CPU with another
    cpus = [c for lane in lanes_of(_where(16), 3) for c in lane]
    assert len(cpus) == len(set(cpus)) and len(lanes_of(_where(16), 3)) == 5


def test_a_host_too_small_for_two_lanes_runs_one_test_after_another() -> None:
    assert lanes_of(_where(2), 2) == []  # this VM: one server + one client
    assert lanes_of(_where(3), 2) == []
    assert lanes_of(_where(8), 2, wanted=1) == []
    # short of quiet CPUs, CPU 0 is used rather than no lanes
    assert lanes_of(_where(4), 2) == [[1, 2], [3, 0]]


def test_the_platform_file_says_auto_a_number_or_fails_naming_the_key() -> None:
    assert parse_budget({}).count_lanes == 0
    assert parse_budget({"count_lanes": "auto"}).count_lanes == 0
    assert parse_budget({"count_lanes": 4}).count_lanes == 4
    for bad in (0, 300, "many", True):
        with pytest.raises((ValueError, TypeError, PlatformConfigError), match="count_lanes"):
            parse_budget({"count_lanes": bad})


def test_the_eta_shares_the_suites_out_over_the_lanes() -> None:
    costs = {f"s{i}": 10.0 for i in range(8)}
    one = eta_text(list(costs), costs, EtaPlan(3, 5, runs_per_pair=1))
    four = eta_text(list(costs), costs, EtaPlan(3, 5, runs_per_pair=1, lanes=4))
    assert "ETA about 4 min" in one and "at most 7 min" in one, one
    assert "ETA about 1 min" in four and "at most 2 min" in four and "in 4 lanes" in four, four
    # a lane is never faster than its costliest suite
    lopsided = eta_text(["a", "b"], {"a": 600.0, "b": 6.0}, EtaPlan(1, 1, runs_per_pair=1,
                                                                  lanes=2))
    assert "ETA about 10 min" in lopsided, lopsided


SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [{command}]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -t {command} -n 1000000 -c 10 -d 100
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def _config(tmp_path: Path, lanes: list[list[int]]) -> tuple[ABConfig, list[ABTest]]:
    suites_dir = tmp_path / "suites"
    for name, command in (("lane-set", "set"), ("lane-get", "get")):
        write_suite(suites_dir, name, SUITE.format(name=name, command=command))
    suites = load_catalog(suites_dir).suites
    server = shutil.which("redis-server") or "redis-server"
    counting = WindowOptions(profilers=ProfilerOptions(names=("instructions",), requests=2000,
                                                       instructions_method="callgrind"))
    session = SessionConfig(tools=ToolPaths(redis_server=server),
                            results_dir=tmp_path / "results", window=counting)
    config = ABConfig(session=session, baseline=Side(BASELINE, server),
                      comparison=Side(COMPARISON, server), repetitions=1, lanes=lanes)
    return config, ab_tests(session, suites)


@pytest.mark.slow
def test_two_count_tests_run_at_once_each_in_its_lane(tmp_path: Path) -> None:
    config, tests = _config(tmp_path, [[0], [1]])
    started: list[str] = []
    runs = run_ab_tests(config, tests, on_start=lambda side, rep, s: started.append(s.name))
    # every run, in the order of the tests (whichever lane finished first)
    assert [r.result.test_name for r in runs] == [t.suite.name for t in tests
                                                  for _ in (0, 1)]
    assert all(r.result.ok for r in runs), [r.result.reason for r in runs]
    assert all("instructions_per_op" in r.result.metrics for r in runs)
    assert sorted(started) == sorted(t.suite.name for t in tests for _ in (0, 1))
    lanes_used: dict[str, set[int]] = {}
    for run in runs:
        cpus = {c for role in run.result.cpus.values() for c in role}
        assert cpus in ({0}, {1}), run.result.cpus  # server and client on the lane's CPU
        assert "count lane" in run.result.cpu_placement, run.result.cpu_placement
        lanes_used.setdefault(run.result.test_name, set()).update(cpus)
    # each test kept its lane, and the two tests had different ones
    assert sorted(map(sorted, lanes_used.values())) == [[0], [1]], lanes_used
    # ... at the same time: each test's runs overlap the other's
    spans = {name: (min(r.result.start_ms for r in runs if r.result.test_name == name),
                    max(r.result.end_ms for r in runs if r.result.test_name == name))
             for name in lanes_used}
    (a0, a1), (b0, b1) = spans.values()
    assert a0 < b1 and b0 < a1, spans


@pytest.mark.slow
def test_a_stop_asked_in_one_lane_stops_the_others_and_is_raised(tmp_path: Path) -> None:
    config, tests = _config(tmp_path, [[0], [1]])

    class Stop(Exception):
        pass

    calls: list[str] = []

    def on_start(side: str, rep: int, suite) -> None:  # type: ignore[no-untyped-def]
        calls.append(side)
        if len(calls) == 2:
            raise Stop("asked to stop")

    with pytest.raises(Stop):
        run_ab_tests(config, tests, on_start=on_start)
    # the two lanes' first runs were asked for; no run started after the stop
    assert len(calls) <= 3, calls
