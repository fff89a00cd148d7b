"""The metric catalogue (issue 39): every metric's nature is declared once and read from there."""

from __future__ import annotations

import ast
from pathlib import Path

import pytest

from redis_benchmarks_spec.analysis.arrival import INSTRUCTIONS, TIMED, kind_of
from redis_benchmarks_spec.analysis.session_runs import deterministic
from redis_benchmarks_spec.analysis.verdict import (
    CompareOptions,
    default_noise_floor,
    metric_direction,
)
from redis_benchmarks_spec.common import metrics
from redis_benchmarks_spec.common.metrics import metric
from redis_benchmarks_spec.notify.pr_summary import _effect
from redis_benchmarks_spec.results.memory import MEMORY_METRICS, is_dataset_memory

PACKAGE = Path(__file__).resolve().parent.parent / "redis_benchmarks_spec"
CATALOGUE = PACKAGE / "common" / "metrics.py"


@pytest.mark.parametrize(("name", "kind", "higher", "det"), [
    ("ALL_STATS.Totals.Ops/sec", metrics.THROUGHPUT, True, False),
    ("instructions_per_op", metrics.COUNT, False, True),
    ("instructions_per_call.SET", metrics.COUNT, False, True),
    ("server_cpu_usec_per_op", metrics.SERVER_CPU, False, False),
    ("ALL_STATS.Totals.Percentile_Latencies.p99.00", metrics.LATENCY, False, False),
    ("used_memory", metrics.MEMORY, False, True),
    ("bytes_per_key", metrics.MEMORY, False, True),
    ("bytes_per_key.after_run", metrics.MEMORY, False, False),
])
def test_each_kind_is_read_from_the_catalogue(name: str, kind: str, higher: bool,
                                              det: bool) -> None:
    m = metric(name)
    assert (m.kind, m.higher_is_better, m.deterministic) == (kind, higher, det)
    # every reader agrees with the entry: the engine, the watch, the verdict's direction
    assert deterministic(name) is det
    assert kind_of(name) == (INSTRUCTIONS if det else TIMED)
    assert metric_direction(name) == (1 if higher else -1)
    assert default_noise_floor(name) == m.floor_pct
    assert m.words


def test_memory_was_timed_in_the_watch_and_is_deterministic_everywhere_now() -> None:
    assert all(is_dataset_memory(n) and kind_of(n) == INSTRUCTIONS for n in MEMORY_METRICS)


def test_each_kind_has_its_own_prior_and_floor() -> None:
    cpu, ops = metric("server_cpu_usec_per_op"), metric("ALL_STATS.Totals.Ops/sec")
    assert cpu.prior_sd < ops.prior_sd and cpu.floor_pct < ops.floor_pct
    # a count ships a prior of its own, wider than the spread its pairs show (0.2 %)
    count = metric("instructions_per_op")
    assert count.deterministic and 0.002 < count.prior_sd < 0.01
    # the uncalibrated options of a server CPU session assume its kind's spread, and say so
    options = CompareOptions(metric="server_cpu_usec_per_op").with_host(None)
    assert options.default_spread == cpu.prior_sd
    assert "server CPU per op prior" in options.floor_note
    assert "15 %" not in options.floor_note


def test_words_come_from_the_catalogue() -> None:
    from redis_benchmarks_spec.analysis.compare import Comparison
    row = Comparison(test="t", metric="server_cpu_usec_per_op", verdict="REGRESSION", n_baseline=3, n_comparison=3,
                     change_pct=4.0, ci_low_pct=2.0, ci_high_pct=6.0)
    assert "server CPU time per operation" in _effect("p", row)


def _string_constants(path: Path) -> set[str]:
    tree = ast.parse(path.read_text())
    docstrings = {id(n.body[0].value) for n in ast.walk(tree)
                  if isinstance(n, (ast.Module, ast.FunctionDef, ast.ClassDef))
                  and n.body and isinstance(n.body[0], ast.Expr)}
    return {n.value for n in ast.walk(tree) if isinstance(n, ast.Constant)
            and isinstance(n.value, str) and id(n) not in docstrings}


def test_metric_names_are_written_in_one_module() -> None:
    names = {metrics.THROUGHPUT_METRIC, metrics.INSTRUCTIONS_METRIC, metrics.SERVER_CPU_METRIC,
             *metrics.MEMORY_METRICS}
    # telemetry.info keeps INFO's own field names (what the server reports), not metrics
    allowed = {PACKAGE / "common" / "metrics.py", PACKAGE / "telemetry" / "info.py",
               PACKAGE / "runner" / "node_stats.py", PACKAGE / "cli" / "display.py"}
    found = {f"{p.relative_to(PACKAGE)}: {s}" for p in PACKAGE.rglob("*.py") if p not in allowed
             for s in _string_constants(p) & names}
    assert not found
    assert not [p for p in PACKAGE.rglob("*.py") if "METRIC_WORDS" in p.read_text()]
