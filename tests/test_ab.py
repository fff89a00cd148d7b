"""Interleaved A/B mode: ABBA order, a fresh server per run, a paired report."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

from redis_benchmarks_spec.analysis.session_runs import pair_runs
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.ab import ABConfig, Side, order, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import rbs, write_suite

SUITE = """
name: ab-set
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 20000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def test_order_is_abba() -> None:
    assert [order(r) for r in range(4)] == [("baseline", "comparison"),
                                           ("comparison", "baseline")] * 2


def test_runs_alternate_with_fresh_servers_and_pair_by_repetition(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE)
    server = shutil.which("redis-server") or ""
    config = ABConfig(
        session=SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out"),
        baseline=Side("baseline", server),
        comparison=Side("comparison", server, ["--appendonly", "yes"]),
        repetitions=3)
    runs = run_ab(config, load_catalog(suites).suites)
    assert [(r.side, r.repetition) for r in runs] == [
        ("baseline", 0), ("comparison", 0), ("comparison", 1), ("baseline", 1),
        ("baseline", 2), ("comparison", 2)]
    assert all(r.result.ok for r in runs), [r.result.reason for r in runs]
    starts = [r.result.start_ms for r in runs]
    assert starts == sorted(starts)
    # each run had its own server: the comparison side really got its extra argument
    for r in runs:
        assert ("--appendonly" in r.result.server_args) == (r.side == "comparison")
        assert "Ready to accept connections" in Path(r.result.paths["server_log"]).read_text()
    assert len({r.result.run_id for r in runs}) == 6
    # every repetition pairs (a pair disturbed by other processes is counted, not used)
    sets = pair_runs(runs, "ALL_STATS.Totals.Ops/sec")
    assert sets["ab-set"].complete == 3


def test_cli_ab_prints_paired_report(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE)
    server = shutil.which("redis-server") or ""
    out = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "out"),
              "--baseline-server", server, "--comparison-server", server, "--repetitions", "2",
              "--format", "json", "--no-datasink")
    assert out.returncode == 0, out.stdout + out.stderr
    start = out.stdout.index("{")
    report = json.loads(out.stdout[start:out.stdout.rindex("}") + 1])
    row = report["rows"][0]
    assert row["test"] == "ab-set" and row["paired"] is True
    assert row["n_baseline"] + row["n_disturbed"] >= 2
    assert len(list((tmp_path / "out").glob("*/baseline/rep-01/ab-set"))) == 1
