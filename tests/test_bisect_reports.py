"""`rbs bisect --local` that reports and keeps its word, on a small git history whose
"build" is a script (no compile): from the commit "Sync every write to the AOF (#11552)" on,
redis-server runs with ``appendfsync always`` (a real slowdown of SET). The bisection prints
a line per step and per pair with the running estimate, and its answer names the first bad
commit, its pull request and the size of the change. Budgets and a busy host: the search and
the A/B's pace over real runs."""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from redis_benchmarks_spec.bisection.search import (
    Budget,
    HostBusy,
    Measurement,
    search,
)
from redis_benchmarks_spec.cli import bisect as bisect_cli
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.ab import ABConfig, Pace, Side, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.bisect_fixtures import GIT_ENV
from tests.cli import rbs, write_suite

SUITE = """
version: 0.4
name: bisect-set
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 2000 -r 1000 -d 100 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
MAKEFILE = "all:\n\tmkdir -p src\n\tcp server.sh src/redis-server\n\tchmod +x src/redis-server\n"
SERVER = '#!/bin/sh\nexec {binary} "$@"{extra}\n'
COMMITS = [("redis as it is", ""), ("Describe the build (#11000)", None),
           ("Sync every write to the AOF (#11552)", " --appendonly yes --appendfsync always"),
           ("Tidy the notes (#11600)", None)]


def _git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **GIT_ENV}).stdout.strip()


def _history(root: Path) -> tuple[Path, list[str]]:
    """Four commits; a commit whose entry has no server change edits only a note."""
    repo = root / "src"
    repo.mkdir(parents=True)
    _git(repo, "init", "-q", "-b", "unstable")
    (repo / "Makefile").write_text(MAKEFILE)
    binary = shutil.which("redis-server") or "/usr/bin/redis-server"
    shas = []
    for i, (subject, extra) in enumerate(COMMITS):
        if extra is not None:
            (repo / "server.sh").write_text(SERVER.format(binary=binary, extra=extra))
        (repo / "NOTES").write_text(f"note {i}\n")
        _git(repo, "add", "-A")
        _git(repo, "commit", "-q", "-m", subject)
        shas.append(_git(repo, "rev-parse", "HEAD"))
    return repo, shas


@pytest.mark.timeout(900)
def test_bisect_reports_each_step_and_names_the_pull_request(tmp_path: Path) -> None:
    repo, shas = _history(tmp_path)
    suites = tmp_path / "suites"
    write_suite(suites, "bisect-set", SUITE)
    done = rbs("bisect", "--local", "--repo", str(repo), "--good", shas[0], "--bad", shas[-1],
               "--test", "bisect-set", "--suites-dir", str(suites), "--work-dir",
               str(tmp_path / "work"), "--repetitions", "3", "--metric", "throughput",
               "--format", "json", timeout=900)
    progress = done.stderr
    # a line per step (which commit) and per pair (values and the running estimate)
    assert "step 1: bad end" in progress and f"{shas[-1][:12]} pair 1/6:" in progress
    assert "running estimate" in progress and "building" in progress, progress
    if done.returncode == 4:  # other engineers' load left too few undisturbed pairs
        answer = json.loads(done.stdout)
        assert answer["busy"] and "BUSY" in answer["reason"] and answer["range_left"], answer
        return
    assert done.returncode == 0, done.stdout[-3000:] + progress[-3000:]
    answer = json.loads(done.stdout)
    assert answer["first_bad"] == shas[2], answer
    assert answer["pull_request"] == 11552 and "AOF" in answer["subject"]
    assert answer["change_pct"] < -2  # fsync on every SET: ops/sec down
    assert f"step 2: {shas[1][:12]}" in progress, progress


def _args(repo: Path) -> argparse.Namespace:
    return argparse.Namespace(repo=repo, format="table")


def test_the_answer_names_pr_and_size_or_the_range_left(tmp_path: Path) -> None:
    repo, shas = _history(tmp_path)

    class Step:
        metric = "instructions_per_op"

        def built(self) -> int:
            return 2

        def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
            return Measurement(-21.7 if shas.index(sha) >= 2 else 0.0,
                               "IMPROVEMENT" if sha == shas[-1] else "UNKNOWN", pairs)

    found = search([Step()], shas[0], shas[1:], Budget(max_builds=10))
    answer = bisect_cli._answer(_args(repo), found)
    assert (answer["first_bad"], answer["pull_request"]) == (shas[2], 11552)
    assert answer["change_pct"] == -21.7 and answer["direction"] == "IMPROVEMENT"
    line = bisect_cli._answer_line(answer, found)
    assert "PR #11552" in line and "-21.70% instructions_per_op" in line, line
    # the metric that decided the ends is the one every midpoint used
    assert {p.metric for p in found.probes} == {"instructions_per_op"}
    stopped = search([Step()], shas[0], shas[1:], Budget(max_builds=2))
    line = bisect_cli._answer_line(bisect_cli._answer(_args(repo), stopped), stopped)
    assert line.startswith("not found: budget spent; 3 commit(s) left"), line


def test_a_busy_host_is_its_own_outcome_not_a_usage_error(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    class Busy:
        metric = "ALL_STATS.Totals.Ops/sec"

        def built(self) -> int:
            return 1

        def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
            raise HostBusy(f"{sha[:12]}: BUSY: 12 of 12 pairs disturbed")

    outcome = search([Busy()], "0" * 40, ["1" * 40], Budget())
    assert outcome.busy and outcome.first_bad is None
    assert "12 of 12" in outcome.reason
    line = bisect_cli._answer_line(bisect_cli._answer(_args(tmp_path), outcome), outcome)
    assert line.startswith("host busy: at the bad end 111111111111: BUSY"), line
    # the command's exit code for it: 4, never 2 (a usage error)
    monkeypatch.setattr(bisect_cli.local, "bisect", lambda plan, say: outcome)
    monkeypatch.setattr(bisect_cli, "_local_plan", lambda args: None)
    args = argparse.Namespace(local=True, format="table", repo=tmp_path)
    assert bisect_cli.cmd_bisect(args) == 4


def test_a_probe_that_cannot_finish_in_the_budget_is_not_started() -> None:
    class Slow:
        metric = "instructions_per_op"

        def __init__(self) -> None:
            self.measured: list[str] = []

        def built(self) -> int:
            return 2

        def pair_seconds(self) -> float:
            return 120.0  # measured so far

        def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
            self.measured.append(sha)
            return Measurement(30.0, "REGRESSION", pairs)

    commits = [f"{i:040x}" for i in range(1, 8)]
    prober = Slow()
    out = search([prober], "0" * 40, commits, Budget(time_budget_s=300, pairs=4))
    assert prober.measured == [commits[-1]]  # the bad end; 4 pairs of 120 s do not fit
    assert out.reason.startswith("budget: the next probe needs about 480 s"), out.reason
    assert out.range_left == ("0" * 40, commits[-1])


def test_no_pair_starts_that_would_end_after_the_deadline(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "bisect-set", SUITE)
    server = shutil.which("redis-server") or ""
    config = ABConfig(session=SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out"),
                      baseline=Side("baseline", server), comparison=Side("comparison", server),
                      repetitions=3, deadline=time.monotonic() + 60, pace=Pace([90.0]))
    assert run_ab(config, load_catalog(suites).suites) == []  # 90 s pairs, 60 s left
    config.pace = Pace()
    config.repetitions = 1
    runs = run_ab(config, load_catalog(suites).suites)  # no pace yet: one pair, then timed
    assert len(runs) == 2 and len(config.pace.seconds) == 1
