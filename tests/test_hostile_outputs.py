"""Degenerate tool output is a failed test with a reason, never an OverflowError.

``redis-benchmark -n 1`` finishes within its millisecond clock and prints ``"inf"`` ops/sec
(recorded below from redis-benchmark 7.0.15); a warm-up that did the same once made
``--test-time`` size a run from ``inf`` (OverflowError) and abort ``rbs run`` and the agent.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen import redis_benchmark
from redis_benchmarks_spec.loadgen.base import Invocation
from redis_benchmarks_spec.loadgen.drivers import RedisBenchmarkDriver
from redis_benchmarks_spec.loadgen.result import (
    CommandResult,
    LatencySummary,
    ToolOutputError,
    ToolResult,
    check_measurable,
    drop_unmeasured_rates,
)

# real output of `redis-benchmark -p P -n 1 -c 1 -t set,get --csv` (7.0.15)
INF_CSV = """\
"test","rps","avg_latency_ms","min_latency_ms","p50_latency_ms","p95_latency_ms","p99_latency_ms","max_latency_ms"
"SET","inf","0.108","0.104","0.111","0.111","0.111","0.111"
"GET","inf","0.108","0.104","0.111","0.111","0.111","0.111"
"""
ZERO_CSV = INF_CSV.replace('"inf"', '"0.00"')


@pytest.mark.parametrize("text,word", [(INF_CSV, "inf"), (ZERO_CSV, "0.0"),
                                       (INF_CSV.replace('"inf"', '"nan"'), "nan")])
def test_driver_fails_a_run_that_measured_nothing(tmp_path: Path, text: str, word: str) -> None:
    out = tmp_path / "client.out"
    out.write_text(text)
    inv = Invocation(["redis-benchmark", "-n", "1"], out, None, 0.0)
    with pytest.raises(ToolOutputError, match=rf"ops/sec is {word}.*too short"):
        check_measurable(RedisBenchmarkDriver("redis-benchmark").parse(inv, 0), str(out))


def test_a_rate_that_is_not_the_metric_is_dropped_with_a_note(tmp_path: Path) -> None:
    """wait_for_bgsave runs ``-n 1 BGSAVE``: an inf rate must not fail it, nor be stored."""
    out = tmp_path / "client.out"
    out.write_text(INF_CSV)
    inv = Invocation(["redis-benchmark", "-n", "1"], out, None, 0.0)
    result = drop_unmeasured_rates(RedisBenchmarkDriver("redis-benchmark").parse(inv, 0))
    assert result.totals.ops_per_sec == 0.0
    assert {c.ops_per_sec for c in result.per_command.values()} == {0.0}
    assert "Infinity" not in json.dumps(result.to_dict())
    assert "Ops/sec" not in json.dumps(result.data)
    assert result.data["ALL STATS"]["Totals"]["Average Latency"] == 0.108
    assert any("SET, GET, Totals" in n and "wait_for_bgsave" in n for n in result.notes)


def test_one_unmeasured_command_drops_the_totals_rate_too(tmp_path: Path) -> None:
    out = tmp_path / "client.out"
    out.write_text(INF_CSV.replace('"GET","inf"', '"GET","5000.00"'))
    inv = Invocation(["redis-benchmark", "-n", "1"], out, None, 0.0)
    result = drop_unmeasured_rates(RedisBenchmarkDriver("redis-benchmark").parse(inv, 0))
    assert result.per_command["GET"].ops_per_sec == 5000.0
    assert result.per_command["SET"].ops_per_sec == result.totals.ops_per_sec == 0.0
    assert "Ops/sec" not in result.data["ALL STATS"]["Totals"]


def test_test_time_is_never_sized_from_an_infinite_warm_up() -> None:
    argv = ["-n", "1000000", "-t", "set"]
    assert redis_benchmark.requests_for_test_time(argv, 5, float("inf")) == 500_000
    assert redis_benchmark.requests_for_test_time(argv, 5, float("nan")) == 500_000
    assert redis_benchmark.requests_for_test_time(argv, 5, 0.0) == 500_000


def test_zero_duration_is_not_a_measurement() -> None:
    ok = CommandResult(1000.0, LatencySummary())
    result = ToolResult("memtier_benchmark", ok, {"Sets": ok}, duration_s=0.0)
    with pytest.raises(ToolOutputError, match="duration is 0.0s"):
        check_measurable(result, "m.json")
    assert check_measurable(ToolResult("memtier_benchmark", ok, {"Sets": ok}, duration_s=2.0),
                            "m.json").totals.ops_per_sec == 1000.0
