"""Foreign load: another process on the test's pinned CPUs flags the run ``disturbed``, and
an A/B leaves the disturbed run's pair out. Real redis-server and redis-benchmark, and a real
busy loop pinned to the client's CPU (started here, stopped by its pid)."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys
from pathlib import Path

from redis_benchmarks_spec.results.document import DISTURBED, STATUS_OK, CpuUsage, RunResult
from redis_benchmarks_spec.runner.ab import (
    BASELINE,
    COMPARISON,
    ABRun,
    disturbed_problems,
    paired_samples,
)
from redis_benchmarks_spec.telemetry.cpu import FOREIGN

RBS = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")
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
    (suites / "s.yml").write_text(SUITE)
    proc = subprocess.run([RBS, "run", "--suites-dir", str(suites), "--results-dir",
                           str(tmp_path / out), "--topology", "oss-standalone",
                           "--test-time", "4", "--no-datasink"],
                          capture_output=True, text=True, timeout=300, check=False)
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
    assert paired_samples(runs, "ALL_STATS.Totals.Ops/sec") == {
        "t": [(100.0, 97.0), (101.0, 98.0)]}
    assert disturbed_problems([r.result for r in runs]) == [
        ("t @ oss-standalone (baseline): disturbed (other processes used 55 % of a core on "
         "its CPUs); its pair is left out")]
