"""``--metric auto``: which metric an A/B decides on, from what limited its first runs.

The CPU figures are the ones measured on this VM (client 90-98 % of its core, server 69-89 %
of one, docs/statistics.md); a real session's choice is checked in test_adaptive_run.py.
"""

from __future__ import annotations

from dataclasses import replace

from redis_benchmarks_spec.results.document import (
    DISTURBED,
    STATUS_FAILED,
    STATUS_OK,
    CpuUsage,
    RunResult,
)
from redis_benchmarks_spec.runner.ab import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.runner.metric_choice import (
    AUTO,
    THROUGHPUT_METRIC,
    MetricChoice,
    choose_metric,
    client_limited,
)
from redis_benchmarks_spec.runner.server_cpu import SERVER_CPU_METRIC
from redis_benchmarks_spec.telemetry.cpu import SaturationThresholds

THRESHOLDS = SaturationThresholds()


def _run(client_pct: float, server_pct: float, rep: int = 0, side: str = BASELINE,
         status: str = STATUS_OK, server_cpu: bool = True, server_cores: int = 1,
         test: str = "t") -> ABRun:
    metrics = {THROUGHPUT_METRIC: 100_000.0}
    if server_cpu:
        metrics[SERVER_CPU_METRIC] = 4.2
    result = RunResult(test, f"r{rep}{side}", status, metrics=metrics,
                       cpu={"client": CpuUsage(20, client_pct, client_pct, 1),
                            "server": CpuUsage(20, server_pct, server_pct, server_cores)})
    return ABRun(side, rep, result)


def _round(client_pct: float, server_pct: float, n: int = 3, **kw: object) -> list[ABRun]:
    return [_run(client_pct, server_pct, rep, side, **kw)  # type: ignore[arg-type]
            for rep in range(n) for side in (BASELINE, COMPARISON)]


def test_a_saturated_client_with_an_idle_server_core_picks_server_cpu() -> None:
    metric, why = choose_metric(_round(96.0, 80.0), THRESHOLDS)
    assert metric == SERVER_CPU_METRIC
    assert "(6 runs;" in why and "Ops/sec measured the client" in why


def test_a_comparison_server_pushed_past_the_headroom_does_not_steer_the_choice() -> None:
    """A slower server uses more of its core: judged on the baseline only, or the very
    change under test would move the session to the metric that cannot see it."""
    runs = [r for r in _round(96.0, 85.0) if r.side == BASELINE] + \
        [r for r in _round(95.0, 93.0) if r.side == COMPARISON]
    assert choose_metric(runs, THRESHOLDS)[0] == SERVER_CPU_METRIC


def test_topologies_of_one_suite_are_judged_apart() -> None:
    """Client-bound in every run of one topology, in 1 of 3 per side of the other: by name
    alone that is 4 of 6 per side, a majority."""
    def runs(topology: str, client: float) -> list[ABRun]:
        out = _round(client, 80.0, test="s")
        for r in out:
            r.result.context.topology = topology
        return out
    bound = runs("oss-standalone", 96.0)
    other = runs("oss-standalone-02-io-threads", 50.0)
    for run in other[:2]:  # 1 of 3 runs bound on each side: by name, 4 of 6 on each
        run.result = replace(run.result, cpu=bound[0].result.cpu)
    metric, why = choose_metric(bound + other, THRESHOLDS)
    assert metric == THROUGHPUT_METRIC
    assert "runs of s @ oss-standalone-02-io-threads" in why


def test_one_side_slowed_off_cpu_keeps_the_session_on_ops_per_sec() -> None:
    """GET client-bound on both sides, SET with appendfsync always on B: the client waits."""
    get = _round(96.0, 80.0, test="get")
    set_a = [r for r in _round(96.0, 80.0, test="set") if r.side == BASELINE]
    set_b = [r for r in _round(30.0, 25.0, test="set") if r.side == COMPARISON]
    metric, why = choose_metric(get + set_a + set_b, THRESHOLDS)
    assert metric == THROUGHPUT_METRIC  # 9 of 12 runs limited: a session majority is not enough
    assert "only 0 of 3 comparison runs of set" in why


def test_a_saturated_server_or_an_idle_client_keeps_ops_per_sec() -> None:
    assert choose_metric(_round(96.0, 99.0), THRESHOLDS)[0] == THROUGHPUT_METRIC
    # appendfsync always: the server waits off-CPU, the client waits for it
    metric, why = choose_metric(_round(35.0, 30.0), THRESHOLDS)
    assert metric == THROUGHPUT_METRIC and "only 0 of 3 baseline runs of t" in why


def test_the_server_share_is_per_core_it_was_given() -> None:
    # io-threads: 250 % of one core over 4 cores is 62 % of each
    assert client_limited(_run(95.0, 250.0, server_cores=4).result, THRESHOLDS)
    assert not client_limited(_run(95.0, 250.0, server_cores=2).result, THRESHOLDS)


def test_a_majority_of_ok_runs_decides_and_failed_runs_do_not_count() -> None:
    runs = _round(96.0, 80.0, n=2) + [_run(50.0, 40.0, r, s) for r in (2, 3)
                                      for s in (BASELINE, COMPARISON)]
    assert choose_metric(runs, THRESHOLDS)[0] == THROUGHPUT_METRIC  # 2 of 4: not a majority
    runs += [_run(96.0, 80.0, 4, s) for s in (BASELINE, COMPARISON)]
    assert choose_metric(runs, THRESHOLDS)[0] == SERVER_CPU_METRIC  # 3 of 5
    failed = _round(50.0, 40.0, n=3, status=STATUS_FAILED)
    assert choose_metric(_round(96.0, 80.0, n=1) + failed, THRESHOLDS)[0] == SERVER_CPU_METRIC
    assert choose_metric(failed, THRESHOLDS)[0] == THROUGHPUT_METRIC


def test_without_server_cpu_in_every_run_it_stays_on_ops_per_sec() -> None:
    runs = _round(96.0, 80.0) + [_run(96.0, 80.0, 9, server_cpu=False)]
    metric, why = choose_metric(runs, THRESHOLDS)
    assert metric == THROUGHPUT_METRIC and "have no server_cpu_usec_per_op" in why


def test_no_cpu_samples_is_not_client_limited() -> None:
    run = _run(96.0, 80.0)
    run.result = replace(run.result, cpu={**run.result.cpu, "client": CpuUsage(0, 0.0, 0.0, 1)})
    assert not client_limited(run.result, THRESHOLDS)


def test_the_choice_is_made_once_from_the_first_runs_it_sees() -> None:
    choice = MetricChoice(AUTO)
    assert choice.metric is None
    assert choice.resolve(_round(96.0, 80.0)) == SERVER_CPU_METRIC
    assert choice.resolve(_round(30.0, 99.0)) == SERVER_CPU_METRIC  # later rounds cannot steer
    asked = MetricChoice(THROUGHPUT_METRIC)
    assert asked.resolve(_round(96.0, 80.0)) == THROUGHPUT_METRIC and asked.why == ""


def test_runs_left_out_are_counted_in_the_reason() -> None:
    """'0 of 1 baseline runs' when 6 ran: the 5 disturbed ones are said, not hidden."""
    runs = [_run(50.0, 40.0, 0, side) for side in (BASELINE, COMPARISON)]
    for rep in range(1, 6):
        for side in (BASELINE, COMPARISON):
            run = _run(96.0, 80.0, rep, side)
            run.result = replace(run.result, flags=[*run.result.flags, DISTURBED])
            runs.append(run)
    runs.append(_run(96.0, 80.0, 6, BASELINE, status=STATUS_FAILED))
    metric, why = choose_metric(runs, THRESHOLDS)
    assert metric == THROUGHPUT_METRIC
    assert ("only 0 of 1 baseline runs of t (and 6 more left out: 5 disturbed by other "
            "processes, 1 failed)") in why, why
