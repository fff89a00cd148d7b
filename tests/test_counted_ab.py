"""Issue 63, item 1: an ``rbs run`` A/B that counts instructions counts them as the lab does:
the lab's bounded request count (``COUNTED_REQUESTS``, one constant for ``rbs run``, ``rbs
bisect --local`` and the lab's agents), a snapshot of the preload, and the pairs the count's
kind decides from (3: counts ship a prior), not the 10 pairs of a timed A/B.

The plans are read from ``--dry-run`` as a user reads them; the counted session is a real
one (redis-server under callgrind, the real client tool), its documents read back.
"""

from __future__ import annotations

import argparse
import json
import shutil
from pathlib import Path

import pytest

from redis_benchmarks_spec.cli.lab import add_lab_options
from redis_benchmarks_spec.results.document import PRELOAD_SNAPSHOT, RunResult, find_result_files
from redis_benchmarks_spec.runner.adaptive import deterministic_rounds
from redis_benchmarks_spec.telemetry.profilers.base import COUNTED_REQUESTS, ProfilerOptions
from tests.cli import rbs

SMEMBERS = "redis-benchmark-1Kkeys-set-smembers-100"
SERVER = shutil.which("redis-server") or "/usr/bin/redis-server"


def _plan(*extra: str) -> str:
    done = rbs("run", "--baseline-server", SERVER, "--comparison-server", SERVER,
               "--test", SMEMBERS, "--dry-run", *extra, timeout=120)
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_a_counted_ab_runs_the_pairs_a_count_decides_from() -> None:
    # the pairs of the count's kind, as --until-decided's first round takes them
    pairs, _ = deterministic_rounds("instructions_per_op", 10, 10, priors=True)
    assert pairs == 3
    counted = _plan("--profilers", "instructions")
    assert f"x {pairs} repetitions x 2 sides (A/B) = {2 * pairs} run(s)" in counted, counted
    assert "up to" not in counted  # a count keeps every pair: none is re-run
    # a timed A/B keeps its 10 pairs, and a given --repetitions is kept
    assert "x 10 repetitions x 2 sides (A/B) = 20 run(s); up to 40" in _plan()
    assert "x 5 repetitions x 2 sides (A/B) = 10 run(s)" in \
        _plan("--profilers", "instructions", "--repetitions", "5")
    document = json.loads(_plan("--profilers", "instructions", "--format", "json"))
    assert (document["repetitions"], document["runs"], document["max_runs"]) == (3, 6, 6)


def test_every_counting_command_defaults_to_the_labs_request_count() -> None:
    assert ProfilerOptions().requests == COUNTED_REQUESTS == 3_000
    up = argparse.ArgumentParser(prog="rbs lab replay")
    add_lab_options(up)
    agent_args = up.parse_args([]).agent_args
    assert f"--profile-requests {COUNTED_REQUESTS}" in agent_args
    done = rbs("run", "--help", timeout=60)
    assert done.returncode == 0, done.stderr
    assert f"default {COUNTED_REQUESTS:,}, the lab's" in " ".join(done.stdout.split())


@pytest.mark.slow
def test_a_counted_ab_sends_the_labs_requests_from_a_snapshot(tmp_path: Path) -> None:
    done = rbs("run", "--baseline-server", SERVER, "--comparison-server", SERVER,
               "--test", SMEMBERS, "--profilers", "instructions",
               "--instructions-method", "callgrind", "--no-datasink", "--no-noise-prior",
               "--results-dir", str(tmp_path / "results"), "--format", "json", timeout=900)
    assert done.returncode == 0, done.stderr[-3000:]
    docs = [RunResult.read(p) for p in find_result_files(tmp_path / "results")]
    assert len(docs) == 6, [d.run_id for d in docs]  # 3 pairs, both sides
    for doc in docs:
        counted = doc.profiles["instructions"].data
        assert counted["requests"] == COUNTED_REQUESTS, counted
        assert COUNTED_REQUESTS <= counted["ops"] < 2 * COUNTED_REQUESTS, counted
        assert doc.dataset.get(PRELOAD_SNAPSHOT), doc.dataset  # loaded, not written
        assert doc.metrics["instructions_per_op"] > 0
    report = json.loads(done.stdout)
    counted_report = report.get("instructions") or report  # the decided metric leads
    rows = [r for r in counted_report["rows"] if r["test"] == SMEMBERS]
    assert [(r["metric"], r["n_baseline"]) for r in rows] == [("instructions_per_op", 3)]
    assert rows[0]["verdict"] == "NO CHANGE", rows  # one binary on both sides
    # six counted runs of ~3 s and one snapshot a side, not 20 runs of ~45 s: the time is a
    # benchmark's (benchmarks/first_ab.py), not a test's; the request count above is the cause
