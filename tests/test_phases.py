"""The progress display learns each test's phase from the session (runner/phases.py)."""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import write_suite

SUITE = """version: 0.4
name: phase-set
tested-groups: [string]
tested-commands: [set]
redis-topologies: [oss-standalone]
dbconfig:
  preload_tool:
    tool: redis-benchmark
    arguments: -n 1000 -t set -r 100
clientconfig:
  tool: redis-benchmark
  arguments: -n 5000 -t set
"""


def test_phases_in_run_order(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "phase-set", SUITE)
    phases: list[str] = []
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "r", test_time=1,
                           on_phase=phases.append)
    (result,) = run_suites(config, load_catalog(suites).suites)
    assert result.ok, result.reason
    wanted = ["starting redis-server", "preparing the dataset", "preloading redis-benchmark",
              "warming up redis-benchmark", "running redis-benchmark",
              "reading redis-benchmark output", "stopping redis-server"]
    seen = iter(phases)  # each phase reported, in the order the run goes through them
    assert all(any(p == w for p in seen) for w in wanted), phases
