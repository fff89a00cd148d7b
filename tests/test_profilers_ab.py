"""Interleaved A/B with --profilers instructions, for real: one binary, the comparison side
does more work per command (Redis 7's per-command latency histogram, ``latency-tracking``,
switched off on the baseline), 5 pairs under callgrind."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from tests.cli import rbs, write_suite

SUITE = """
version: 0.4
name: instr-ab-set
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [set]
redis-topologies: [oss-standalone]
priority: 1
clientconfig:
  tool: redis-benchmark
  arguments: -t set -n 1000000 -r 100 -c 10 -d 100
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


@pytest.mark.slow
def test_instructions_ab_flags_the_extra_work_and_names_it(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "instr-ab-set", SUITE)
    server = shutil.which("redis-server") or "redis-server"
    done = rbs("run", "--suites-dir", str(suites), "--profilers", "instructions",
               "--instructions-method", "callgrind", "--profile-requests", "5000",
               # 5 pairs: the command path's count repeats to ~0.1 %, and a pair that drew an
               # unlucky hash seed widens the t interval (analysis/paired.py)
               "--repetitions", "5", "--baseline-server", server, "--comparison-server", server,
               "--baseline-server-args", "--latency-tracking no", "--results-dir",
               str(tmp_path / "results"), "--no-datasink", "--format", "json", timeout=1200)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = list((tmp_path / "results").rglob("profiles-ab.json"))
    data = json.loads(found.read_text())
    (row,) = data["instructions"]["rows"]
    assert row["metric"] == "instructions_per_op" and row["n_baseline"] == 5
    assert row["verdict"] == "REGRESSION", row
    # the JSON on stdout carries the same instruction verdict as the table and the file
    stdout = done.stdout
    printed = json.loads(stdout[stdout.index("{"):stdout.rindex("}") + 1])
    # its throughput was taken under callgrind: not judged, instructions are the verdict
    assert printed["options"]["metric"] == "instructions_per_op"
    assert printed["rows"] == data["instructions"]["rows"]
    assert printed["instrumented"] == ["ALL_STATS.Totals.Ops/sec"]
    assert done.returncode == 0  # a timed metric under callgrind left BUSY does not fail
    assert row["comparison_median"] > row["baseline_median"]
    movers = [m["function"] for m in data["movers"]["instr-ab-set"][:5]]
    # the histogram update Redis does per command when latency-tracking is on
    assert {"updateCommandLatencyHistogram", "hdr_record_value",
            "hdr_record_values"} & set(movers), movers
    # the instruction verdict in what the user sees
    assert "instructions per op" in done.stderr and "REGRESSION" in done.stderr


@pytest.mark.slow
def test_ab_with_perf_record_draws_a_differential_flame_graph(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "instr-ab-set", SUITE.replace("-n 1000000", "-n 200000"))
    server = shutil.which("redis-server") or "redis-server"
    done = rbs("run", "--suites-dir", str(suites), "--profilers", "perf-record",
               "--repetitions", "1", "--baseline-server", server, "--comparison-server", server,
               "--results-dir", str(tmp_path / "results"), "--no-datasink", timeout=600)
    assert done.returncode == 0, done.stderr[-3000:]
    (found,) = list((tmp_path / "results").rglob("profiles-ab.json"))
    data = json.loads(found.read_text())
    assert data["instructions"] is None  # not asked for
    svg = Path(data["diff_flamegraphs"]["instr-ab-set"])
    text = svg.read_text()
    assert "<svg" in text and ("processCommand" in text or "readQueryFromClient" in text)
    # both sides' merged stacks are kept beside it
    assert {p.name for p in svg.parent.glob("*.folded")} >= {
        "instr-ab-set.baseline.folded", "instr-ab-set.comparison.folded"}
