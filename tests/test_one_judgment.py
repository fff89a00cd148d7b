"""One judgment behind every verdict (issue 39): the ``--until-decided`` stop and the final
verdict are one computation, on the metric's own kind."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest

from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, NO_CHANGE, REGRESSION, UNKNOWN
from redis_benchmarks_spec.analysis.engine import judge_pairs, priors_for
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.verdict import HostNoise
from redis_benchmarks_spec.common.metrics import SERVER_CPU_METRIC, THROUGHPUT_METRIC
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.ab import ABConfig, Side
from redis_benchmarks_spec.runner.ab_session import ABSessionPlan, Rounds, adaptive_plan
from redis_benchmarks_spec.runner.adaptive import DECIDED, session_record, until_decided
from redis_benchmarks_spec.runner.metric_choice import AUTO, MetricChoice
from redis_benchmarks_spec.runner.session import SessionConfig

TESTS = ["set", "get", "incr"]


def _plan(tmp_path: Path) -> ABSessionPlan:
    config = ABConfig(session=SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out"),
                      baseline=Side("baseline", "redis-server"),
                      comparison=Side("comparison", "redis-server"), repetitions=6)
    # the host was calibrated for Ops/sec (10 s runs: tight), never for server CPU per op
    calibrated = HostNoise({t: 1.0 for t in TESTS}, {t: 0.02 for t in TESTS},
                           "calibrated on this host (Ops/sec)")
    return ABSessionPlan(config, [], metric=AUTO, host_noise={THROUGHPUT_METRIC: calibrated})


def _source(change: float, sd: float, choice: MetricChoice, seed: int):
    rng = np.random.default_rng(seed)

    def pairs(tests: list[str], first: int, count: int, deadline: float | None):
        # the first round shows a client-bound server: auto picks server CPU per op
        choice.metric, choice.why = SERVER_CPU_METRIC, "auto: the client was the bottleneck"
        return {t: [(10.0 * np.exp(rng.normal(0, sd)), 10.0 * np.exp(change + rng.normal(0, sd)))
                    for _ in range(count)] for t in tests}
    return pairs


def _session(tmp_path: Path, change: float, seed: int) -> tuple[dict[str, str], dict[str, str]]:
    """(stop reason, final verdict) per test of a simulated session (per-side CV 1.6 %)."""
    plan = _plan(tmp_path)
    choice = MetricChoice(AUTO)
    rounds = Rounds(SequentialPlan(30), round_pairs=4)
    adaptive = adaptive_plan(plan, rounds, choice)
    outcome = until_decided(TESTS, _source(change, 0.016, choice, seed), adaptive, choice=choice)
    record = session_record(adaptive, outcome, SERVER_CPU_METRIC)
    # the final verdict as run_session's engine.judge computes it from the session's pairs
    final = judge_pairs({t: p.pairs for t, p in outcome.progress.items()},
                        plan.options(SERVER_CPU_METRIC), None,
                        priors_for(plan.priors, SERVER_CPU_METRIC), record)
    verdicts = {r.test: r.verdict for r in final.rows}
    assert all("server CPU per op prior" in r.method or "server CPU" in final.options.floor_note
               for r in final.rows)
    assert "15" not in final.options.floor_note
    return {t: p.stop_reason for t, p in outcome.progress.items()}, verdicts


def _agree(stops: dict[str, str], verdicts: dict[str, str]) -> None:
    for test, stop in stops.items():
        if stop.startswith(DECIDED):
            assert stop == f"{DECIDED} ({verdicts[test]})", (test, stop, verdicts[test])
        else:
            assert verdicts[test] == UNKNOWN, (test, stop, verdicts[test])


@pytest.mark.parametrize("seed", [1, 2, 3])
def test_a_4_percent_server_cpu_slowdown_stops_decided_and_prints_it(tmp_path: Path,
                                                                       seed: int) -> None:
    stops, verdicts = _session(tmp_path, np.log(1.041), seed)
    _agree(stops, verdicts)
    assert set(verdicts.values()) == {REGRESSION}


@pytest.mark.parametrize("seed", [4, 5, 6])
def test_an_aa_stops_as_it_is_judged_and_never_decides_a_change(tmp_path: Path,
                                                                 seed: int) -> None:
    stops, verdicts = _session(tmp_path, 0.0, seed)
    _agree(stops, verdicts)
    assert not {REGRESSION, IMPROVEMENT} & set(verdicts.values())
    assert NO_CHANGE in verdicts.values() or UNKNOWN in verdicts.values()
