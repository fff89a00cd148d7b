"""Foreign load: another process on the test's pinned CPUs flags the run ``disturbed``, and
an A/B leaves the disturbed run's pair out. Real redis-server and redis-benchmark, and a real
busy loop pinned to the client's CPU (started here, stopped by its pid)."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from dataclasses import replace
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import BUSY, IMPROVEMENT, CompareOptions
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.session_runs import pair_runs
from redis_benchmarks_spec.results.document import DISTURBED, STATUS_OK, CpuUsage, RunResult
from redis_benchmarks_spec.runner.ab import (
    BASELINE,
    COMPARISON,
    ABRun,
    disturbed_problems,
)
from redis_benchmarks_spec.telemetry.cpu import (
    FOREIGN,
    CpuSampler,
    SaturationThresholds,
    is_disturbed,
)
from tests.cli import rbs, write_suite

INSTRUCTIONS = "instructions_per_op"

SUITE = """
name: busy-get
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 10000000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _run(tmp_path: Path, out: str) -> RunResult:
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    write_suite(suites, "s", SUITE)
    proc = rbs("run", "--suites-dir", str(suites), "--results-dir",
               str(tmp_path / out), "--topology", "oss-standalone",
               "--test-time", "4", "--no-datasink")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return RunResult.read(next((tmp_path / out).rglob("result.json")))


def test_a_busy_loop_on_the_clients_cpu_flags_the_run(tmp_path: Path) -> None:
    quiet = _run(tmp_path, "quiet")
    assert quiet.status == STATUS_OK and FOREIGN in quiet.cpu
    assert DISTURBED not in quiet.flags, quiet.cpu[FOREIGN]
    client_cpu = quiet.cpus["client"][0]
    taskset = shutil.which("taskset") or "taskset"
    loop = subprocess.Popen([taskset, "-c", str(client_cpu), sys.executable, "-c",
                             "while True: pass"])
    try:
        busy = _run(tmp_path, "busy")
    finally:
        loop.kill()
        loop.wait(timeout=10)
    assert busy.cpus["client"] == quiet.cpus["client"]
    assert DISTURBED in busy.flags, busy.cpu
    assert busy.cpu[FOREIGN].mean_pct >= 10.0
    assert busy.cpu[FOREIGN].mean_pct > quiet.cpu[FOREIGN].mean_pct + 10.0
    # the document says so for a later report (rbs report leaves the pair out too)
    doc = json.loads(next((tmp_path / "busy").rglob("result.json")).read_text())
    assert DISTURBED in doc["flags"] and doc["cpu"][FOREIGN]["mean_pct"] >= 10.0


def _ab(rep: int, side: str, value: float, disturbed: bool = False) -> ABRun:
    result = RunResult("t", f"{rep}{side}", STATUS_OK,
                       metrics={"ALL_STATS.Totals.Ops/sec": value},
                       flags=[DISTURBED] if disturbed else [],
                       cpu={FOREIGN: CpuUsage(10, 55.0, 90.0, 2)} if disturbed else {})
    result.context.ab_side = side
    return ABRun(side, rep, result)


def test_an_ab_leaves_the_pair_of_a_disturbed_run_out_and_says_so() -> None:
    runs = [_ab(0, BASELINE, 100.0), _ab(0, COMPARISON, 97.0),
            _ab(1, COMPARISON, 96.0), _ab(1, BASELINE, 60.0, disturbed=True),
            _ab(2, BASELINE, 101.0), _ab(2, COMPARISON, 98.0)]
    sets = pair_runs(runs, "ALL_STATS.Totals.Ops/sec")
    assert {t: s.pairs for t, s in sets.items()} == {"t": [(100.0, 97.0), (101.0, 98.0)]}
    assert sets["t"].disturbed == 1 and sets["t"].repetitions == [0, 2]
    assert disturbed_problems([r.result for r in runs], "ALL_STATS.Totals.Ops/sec") == [
        ("t @ oss-standalone (baseline): disturbed (other processes used 55 % of a core on "
         "its CPUs); its pair is left out of ALL_STATS.Totals.Ops/sec")]


def _counted(rep: int, side: str, ops: float, instructions: float,
             disturbed: bool) -> ABRun:
    run = _ab(rep, side, ops, disturbed)
    run.result = replace(run.result, metrics={**run.result.metrics, INSTRUCTIONS: instructions})
    return run


def test_instruction_counts_keep_every_pair_and_a_busy_time_metric_says_busy() -> None:
    """Foreign load slows the server, it does not change what it executes: instruction pairs
    are all used. The same disturbed pairs of Ops/sec are counted and named: BUSY, not an
    empty table."""
    runs = []
    for rep in range(6):
        runs += [_counted(rep, BASELINE, 100.0 + rep, 5000.0 + rep, disturbed=rep < 5),
                 _counted(rep, COMPARISON, 99.0 + rep, 4085.0 + rep, disturbed=False)]
    assert disturbed_problems([r.result for r in runs], INSTRUCTIONS) == []
    report = judge(runs, Judging(CompareOptions(metric="ALL_STATS.Totals.Ops/sec")))
    row = report.rows[0]
    assert row.verdict == BUSY and row.n_disturbed == 5, row
    assert row.reason.startswith("BUSY: 5 of 6 pairs disturbed"), row.reason
    assert report.has_busy and report.summary[BUSY] == 1
    inst = report.instructions
    assert inst is not None and inst.rows[0].n_baseline == 6
    assert inst.rows[0].verdict == IMPROVEMENT and inst.rows[0].n_disturbed == 0


def test_foreign_load_is_measured_the_same_way_over_any_window_length() -> None:
    """A window shorter than one sampling interval is measured over its partial interval:
    a busy loop on the watched CPU flags a 0.15 s window as it flags a 1.5 s one."""
    taskset = shutil.which("taskset") or "taskset"
    # not a child of this process: the sampler counts this process's descendants as its own
    script = f"{taskset} -c 0 {sys.executable} -c 'while True: pass' >/dev/null 2>&1 & echo $!"
    started = subprocess.run(["sh", "-c", script],
                             capture_output=True, text=True, timeout=30, check=True)
    loop_pid = int(started.stdout.strip())
    try:
        got = []
        for length in (0.15, 1.5):
            sampler = CpuSampler()
            sampler.watch_cpus([0])
            sampler.start()
            time.sleep(length)
            sampler.stop()
            got.append(sampler.usage(FOREIGN, 1))
    finally:
        os.kill(loop_pid, signal.SIGKILL)
    for usage in got:
        assert usage.samples >= 1 and usage.mean_pct >= 20.0, got
        assert is_disturbed(usage, SaturationThresholds()), got
