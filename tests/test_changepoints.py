"""Change points: synthetic series with known steps and noise, and a real datasink filled by
real redis-benchmark runs whose server gains `appendfsync always` half-way."""

from __future__ import annotations

import json
import shutil
from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest
import redis

from redis_benchmarks_spec.analysis.changepoints import (
    ChangePointOptions,
    since_last_change,
    steps,
)
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import rbs_in_process, write_suite
from tests.datasink_fixtures import client_fixture, datasink_fixture  # noqa: F401

METRIC = "ALL_STATS.Totals.Ops/sec"


def _series(rng: np.random.Generator, levels: list[tuple[int, float]], cv: float) -> list[float]:
    return np.concatenate([level * 1e5 * rng.lognormal(0, cv, n)
                           for n, level in levels]).tolist()


def test_known_steps_found_at_their_index_with_covering_intervals() -> None:
    """-20 % at 40 and +25 % at 80 on 10-15 % CV noise, 20 series."""
    found_both = covered = 0
    for seed in range(20):
        rng = np.random.default_rng(seed)
        values = _series(rng, [(40, 1.0), (40, 0.8), (40, 1.0)], 0.10 + 0.05 * (seed % 2))
        got = steps(values)
        near = {s.index: s for s in got if min(abs(s.index - 40), abs(s.index - 80)) <= 2}
        if len(near) == 2:
            found_both += 1
            first, second = sorted(near.values(), key=lambda s: s.index)
            covered += (first.ci_low_pct or 0) <= -20 <= (first.ci_high_pct or 0)
            covered += (second.ci_low_pct or 0) <= 25 <= (second.ci_high_pct or 0)
            assert first.p_value < 1e-4 and second.p_value < 1e-4
    assert found_both >= 16
    assert covered >= 0.85 * 2 * found_both


def test_flat_series_have_no_change_point() -> None:
    flagged = sum(bool(steps(_series(np.random.default_rng(100 + s), [(80, 1.0)], 0.12)))
                  for s in range(40))
    assert flagged <= 1


def test_since_last_change_and_magnitude_filter() -> None:
    rng = np.random.default_rng(5)
    values = _series(rng, [(30, 1.0), (20, 0.5)], 0.05)
    assert since_last_change(values) == 30
    assert since_last_change(values[:30]) == 0
    assert steps(values, ChangePointOptions(min_magnitude_pct=60.0)) == []


# --- a real datasink filled by real runs -----------------------------------------------------
# One client: every SET of the fsync side waits for its own fsync, so the step is ~-70 %
# (27-40k ops/sec before, 8-12k after, here), wider than this VM's stalls, which halved
# runs of 10 clients (-30 % step) in CI: the step was found a commit early, then not at all.
# 5,000 requests: runs of 2,000 took 0.07 s on the side without fsync, so one stall of
# 0.1-0.3 s put a run on the other side's level, and with it Otava's t test of the split
# above 1e-4 (CI found no step once); a 0.17 s run keeps such a stall within its level

SUITE = """
name: cp-{command}
tested-commands: [{command}]
clientconfig:
  tool: redis-benchmark
  arguments: -c 1 -n 5000 -t {command}
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
RUNS_PER_SIDE = 8


def _sha(i: int) -> str:
    # never all zeros: that is "built from no commit" (a local build), which has no hash series
    return f"{i + 1:02x}" * 20


def _real_history(tmp_path: Path, client: redis.Redis) -> list[float]:
    """16 commits of unstable: SET with appendfsync always from commit 8 on (one test: a
    second, unchanged one cost 16 more runs alone on the machine and was asserted on nowhere)."""
    suites_dir = tmp_path / "suites"
    suites_dir.mkdir()
    for command in ("set",):
        write_suite(suites_dir, command, SUITE.format(command=command))
    suites = {s.name: s for s in load_catalog(suites_dir).suites}
    base = SessionConfig(tools=ToolPaths(redis_server=shutil.which("redis-server")),
                         results_dir=tmp_path / "out")
    results: list[RunResult] = []
    for i in range(2 * RUNS_PER_SIDE):
        git = GitInfo(org="redis", repo="redis", branch="unstable", hash=_sha(i))
        context = RunContext(triggering_env="ci", platform="local-2core", git=git)
        slow = ["--appendonly", "yes", "--appendfsync", "always"] if i >= RUNS_PER_SIDE else []
        cfg = replace(base, context=context, server_args=slow,
                      results_dir=tmp_path / "out" / f"{i:02d}")
        results += run_suites(cfg, [suites["cp-set"]])
    assert all(r.ok for r in results), [r.reason for r in results if not r.ok]
    assert not push_results(client, results).failed
    return [r.metrics[METRIC] for r in results]


def _step_indices(values: list[float]) -> set[int]:
    """Where the step may be found: at the commit that gained fsync, or one commit off when the
    run on that side of it landed on the other side's level (a stalled run without fsync, or a
    fast one with it; CI saw the step at 7 once). Which it was is read from the runs."""
    before, after = values[:RUNS_PER_SIDE], values[RUNS_PER_SIDE:]
    middle = (float(np.median(before)) + float(np.median(after))) / 2
    allowed = {RUNS_PER_SIDE}
    if before[-1] < middle:
        allowed.add(RUNS_PER_SIDE - 1)
    if after[0] > middle:
        allowed.add(RUNS_PER_SIDE + 1)
    return allowed


@pytest.mark.slow
def test_changepoints_on_real_runs_and_compare_baseline_window(
        tmp_path: Path, client: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    values = _real_history(tmp_path, client)
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    assert rbs_in_process(["changepoints", "--branch", "unstable", "--datasink", url,
                           "--format", "json"]) == 0
    data = json.loads(capsys.readouterr().out)
    series = {s["test"]: s for s in data["series"]}
    set_steps = series["cp-set"]["steps"]
    assert set_steps, (data, values)
    step = max(set_steps, key=lambda s: abs(s["change_pct"]))  # fsync always: ~-90 %
    at = step["index"]
    assert at in _step_indices(values), (at, values)
    assert step["before"]["commit"] == _sha(at - 1)
    assert step["after"]["commit"] == _sha(at)
    assert step["change_pct"] < -20 and step["worse"]
    if step["ci_low_pct"] is None or step["ci_high_pct"] is None:
        # a noise step found right after the real one leaves a segment too short for a 95 %
        # Mann-Whitney interval (seen once in CI); the interval is then reported missing
        assert min(step["n_before"], step["n_after"]) <= 3, step
    else:
        assert step["ci_low_pct"] <= step["change_pct"] <= step["ci_high_pct"] < 0
    assert step["p_value"] < 1e-4

    # the table names the commits
    assert rbs_in_process(["changepoints", "--branch", "unstable", "--test", "cp-set",
                           "--datasink", url]) == 0
    table = capsys.readouterr().out
    assert _sha(at - 1)[:8] in table and _sha(at)[:8] in table

    # compare against the branch: the baseline is the window after the last change point,
    # the step's own or, when the fsync side's stalls made a second step after it (CI saw
    # one at 11 once: 5 points), that one's; the same steps `changepoints` printed
    last = max(s["index"] for s in set_steps)
    assert last >= at
    assert rbs_in_process(["compare", "--baseline-branch", "unstable",
                           "--comparison-hash", _sha(2 * RUNS_PER_SIDE - 1), "--datasink", url,
                           "--tests-regexp", "cp-set", "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    row = report["rows"][0]
    assert row["n_baseline"] == 2 * RUNS_PER_SIDE - last, (set_steps, values)
    assert any(f"the {2 * RUNS_PER_SIDE - last} points after the change point" in p
               for p in report["problems"])
    assert rbs_in_process(["compare", "--baseline-branch", "unstable", "--baseline-window", "all",
                           "--comparison-hash", _sha(0), "--datasink", url, "--tests-regexp",
                           "cp-set", "--format", "json"]) == 0
    assert json.loads(capsys.readouterr().out)["rows"][0]["n_baseline"] == 2 * RUNS_PER_SIDE


def test_changepoints_usage_errors(capsys: pytest.CaptureFixture[str]) -> None:
    assert rbs_in_process(["changepoints", "--branch", "unstable", "--test", "set("]) == 2
    assert "--test" in capsys.readouterr().err
    assert rbs_in_process(["changepoints", "--branch", "unstable", "--max-pvalue", "2"]) == 2
    assert "--max-pvalue" in capsys.readouterr().err
