"""Server CPU time per command (runner.server_cpu): the arithmetic and its guards."""

from __future__ import annotations

import pytest

from redis_benchmarks_spec.analysis.verdict import metric_direction
from redis_benchmarks_spec.runner.server_cpu import (
    SERVER_CPU_METRIC,
    cpu_usec_per_op,
    server_cpu,
)


def test_cpu_time_over_commands_in_microseconds() -> None:
    delta = {"used_cpu_user": 0.25, "used_cpu_sys": 1.0, "total_commands_processed": 100_000.0}
    assert cpu_usec_per_op(delta) == pytest.approx(12.5)


@pytest.mark.parametrize("delta", [
    {"used_cpu_user": 0.2, "used_cpu_sys": 0.1, "total_commands_processed": 10.0},  # a BGSAVE
    {"used_cpu_sys": 1.0, "total_commands_processed": 100_000.0},  # no user time reported
    {"used_cpu_user": 0.0, "used_cpu_sys": 0.0, "total_commands_processed": 100_000.0},
])
def test_no_value_when_the_window_cannot_measure_it(delta: dict[str, float]) -> None:
    assert cpu_usec_per_op(delta) is None
    assert server_cpu(delta).values == {}


def test_stored_as_a_lower_is_better_metric() -> None:
    derived = server_cpu({
        "used_cpu_user": 0.5, "used_cpu_sys": 0.5, "total_commands_processed": 50_000.0})
    assert derived.values[SERVER_CPU_METRIC] == pytest.approx(20.0)
    assert metric_direction(SERVER_CPU_METRIC) == -1
