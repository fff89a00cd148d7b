"""History stays clean: A/B sessions go to results/ab/, every result document says which
side and which extra server arguments it ran with, and a push refuses them."""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink.store import find_result_files, push_results_dir
from redis_benchmarks_spec.results.document import SESSION_AB, RunResult
from tests.cli import rbs_in_process, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    series_of_test,
)

SUITE = """version: 0.4
name: ab-set
tested-groups: [string]
tested-commands: [set]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -n 2000 -t set
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def test_ab_results_are_apart_labelled_and_refused_by_push(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, client: redis.Redis) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "ab-set", SUITE)
    monkeypatch.chdir(tmp_path)
    server = shutil.which("redis-server")
    assert server
    code = rbs_in_process(["run", "--suites-dir", str(suites), "--baseline-server", server,
                           "--comparison-server", server, "--comparison-server-args",
                           "--appendonly yes --appendfsync always", "--repetitions", "1",
                           "--version-tag", "7.0.15", "--no-datasink"])
    assert code == 0
    files = find_result_files(tmp_path / "results")
    # one pair, or two when a pair disturbed by a neighbour was replaced (--max-repetitions 2x)
    assert len(files) in (2, 4) and all("results/ab/" in str(f) for f in files)
    sides = [RunResult.read(f).context.ab_side for f in files]
    assert sorted(sides) == sorted(["baseline", "comparison"] * (len(files) // 2))
    docs = {RunResult.read(f).context.ab_side: RunResult.read(f) for f in files}
    assert all(d.context.session_kind == SESSION_AB for d in docs.values())
    assert docs["comparison"].context.extra_server_args == [
        "--appendonly", "yes", "--appendfsync", "always"]
    assert docs["baseline"].context.extra_server_args == []
    # what docs/comparing.md tells people to push: nothing of the A/B session lands in history
    report = push_results_dir(client, tmp_path / "results")
    assert report.pushed == [] and len(report.skipped) == len(files), report
    reasons = " | ".join(report.skipped.values())
    assert "side comparison, extra server args: --appendonly yes --appendfsync always" in reasons
    assert series_of_test(client, "ab-set") == []
