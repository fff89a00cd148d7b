"""rbs run end to end against real redis-server and redis-benchmark processes."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import psutil
import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import (
    SCHEMA_VERSION,
    STATUS_FAILED,
    STATUS_OK,
    STATUS_SKIPPED,
    RunResult,
)
from redis_benchmarks_spec.runner.cpus import CpuAllocator, device_interrupts, placement
from redis_benchmarks_spec.runner.server_cpu import SERVER_CPU_METRIC
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import RBS, rbs, write_suite
from tests.procs import communicate_or_stacks, descendants

SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
{dbextra}
tested-groups: [string]
tested-commands: [{command}]
redis-topologies: [oss-standalone]
priority: 1
clientconfig:
  tool: redis-benchmark
  arguments: {args}
  resources:
    requests:
      cpus: "1"
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
      - $."ALL STATS".Totals."Percentile Latencies"."p50.00"
      - $."ALL STATS".Totals."Percentile Latencies"."p99.00"
      - $."ALL STATS".Totals."No Such Field"
"""
PRELOAD_1000 = """  preload_tool:
    tool: redis-cli
    arguments: EVAL "for i=0,999 do redis.call('SET', string.format('key:%012d', i), 'v') end return 1" 0
  check:
    keyspacelen: {keys}
"""


def suite(directory: Path, name: str, args: str, command: str, dbextra: str = "") -> None:
    write_suite(directory, name,
        SUITE.format(name=name, args=args, command=command, dbextra=dbextra))


def run(directory: Path, results: Path, test_time: int | None = None) -> list[RunResult]:
    config = SessionConfig(tools=ToolPaths(), results_dir=results, test_time=test_time)
    return run_suites(config, load_catalog(directory).suites)


def by_name(results: list[RunResult]) -> dict[str, RunResult]:
    return {r.test_name: r for r in results}


def test_ok_run_records_everything(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    # 100,000 GETs (~1.5 s): a run of 20,000 (~0.3 s) on a loaded machine ended before the
    # CPU sampler's first 0.25 s tick, and a client already reaped leaves no last sample
    suite(suites, "get", "-c 20 -n 100000 -r 1000 GET key:__rand_int__", "get",
          PRELOAD_1000.format(keys=1000))
    results = run(suites, tmp_path / "out")
    r = results[0]
    assert r.status == STATUS_OK, r.reason
    assert r.result is not None and r.result.totals.ops_per_sec > 0
    assert r.metrics["ALL_STATS.Totals.Ops/sec"] == r.result.totals.ops_per_sec
    assert r.metrics["ALL_STATS.Totals.Percentile_Latencies.p50.00"] > 0
    assert r.missing_metrics == ['$."ALL STATS".Totals."No Such Field"']
    assert r.redis_version == "7.0.15"
    assert r.tool_version.startswith("redis-benchmark 7.0")
    assert r.preload_duration_s is not None and r.preload_duration_s >= 0
    # the server really did the work: 100000 GETs in commandstats
    assert r.commandstats_delta["get"]["calls"] == 100000
    assert r.info_delta["keyspace_hits"] == 100000
    # the server's own CPU time over the commands it processed (runner.server_cpu)
    cpu_s = r.info_delta["used_cpu_user"] + r.info_delta["used_cpu_sys"]
    assert r.metrics[SERVER_CPU_METRIC] == pytest.approx(
        cpu_s * 1e6 / r.info_delta["total_commands_processed"])
    assert 0 < r.metrics[SERVER_CPU_METRIC] < 1e4
    assert set(r.cpus) == {"server", "client"}
    if len(os.sched_getaffinity(0)) >= 2:
        assert not set(r.cpus["server"]) & set(r.cpus["client"])
    assert r.cpu["client"].samples > 0 and r.cpu["server"].samples > 0
    doc = json.loads((tmp_path / "out" / "get" / "oss-standalone" / "result.json").read_text())
    assert doc["schema_version"] == SCHEMA_VERSION and doc["status"] == "ok"
    assert Path(doc["paths"]["server_log"]).exists()
    assert RunResult.read(tmp_path / "out" / "get" / "oss-standalone" / "result.json").metrics \
        == r.metrics


def test_failures_are_reported_and_the_run_goes_on(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    suite(suites, "a-mismatch", "-n 100 -r 1000 GET key:__rand_int__", "get",
          PRELOAD_1000.format(keys=999))
    suite(suites, "b-wrongtype", "-n 1000 HSET key:000000000001 f v", "hset",
          PRELOAD_1000.format(keys=1000))
    suite(suites, "c-badconfig", "-n 100 -t set", "set",
          "    no-such-option: 1\n")
    suite(suites, "d-fine", "-n 2000 -t set", "set")
    results = by_name(run(suites, tmp_path / "out"))
    assert results["a-mismatch"].status == STATUS_FAILED
    assert "expected 999 keys" in results["a-mismatch"].reason
    assert "found 1000" in results["a-mismatch"].reason
    assert results["b-wrongtype"].status == STATUS_FAILED
    assert "error replies" in results["b-wrongtype"].reason
    assert "WRONGTYPE" in results["b-wrongtype"].reason
    assert results["c-badconfig"].status == STATUS_FAILED
    assert "did not answer PING" in results["c-badconfig"].reason
    assert "no-such-option" in results["c-badconfig"].reason  # the log tail says why
    assert results["d-fine"].status == STATUS_OK


def test_missing_tool_is_skipped_with_reason(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "m", "name: m\ntested-commands: [get]\nclientconfig:\n"
                             "  tool: memtier_benchmark\n  arguments: --test-time 1\n")
    suite(suites, "s", "-n 1000 -t set", "set")
    # a path that is not there stands for a missing tool, whether or not one is on PATH
    config = SessionConfig(tools=ToolPaths(memtier="/nonexistent/memtier_benchmark"),
                           results_dir=tmp_path / "out")
    results = by_name(run_suites(config, load_catalog(suites).suites))
    assert results["m"].status == STATUS_SKIPPED
    assert "memtier_benchmark not found" in results["m"].reason
    assert "/nonexistent/memtier_benchmark" in results["m"].reason
    assert results["s"].status == STATUS_OK


def test_test_time_maps_onto_requests(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    suite(suites, "set", "-c 10 -n 100000000 -t set", "set")
    r = run(suites, tmp_path / "out", test_time=2)[0]
    assert r.status == STATUS_OK, r.reason
    n = int(r.argv[0][r.argv[0].index("-n") + 1])
    assert 1000 < n < 100_000_000  # sized from the warm-up rate, far below the suite's -n
    assert r.tool_duration_s is not None and 0.5 < r.tool_duration_s < 8.0
    # the warm-up ran before the INFO snapshot: the deltas cover the measured run only
    assert r.commandstats_delta["set"]["calls"] == n
    assert Path(r.paths["client_0_output"]).with_suffix(".warmup.out").exists()


def _quiet(cpus: list[int]) -> CpuAllocator:
    """An allocator whose CPUs take no device interrupts, one physical core each."""
    return CpuAllocator(cpus, where=placement(cpus, {}, {c: ("0", str(c)) for c in cpus}))


def test_cpu_allocator_disjoint_and_warning() -> None:
    plan = _quiet([0, 1, 2, 3]).plan(1, 2)
    # CPU 0 is handed out last: server on 1, client on 2 and 3
    assert plan.server == [1] and plan.client == [2, 3] and plan.disjoint and not plan.warning
    small = _quiet([0, 1]).plan(2, 1)
    assert small.warning and "share cores" in small.warning
    single = _quiet([0]).plan(1, 1)
    assert single.server == single.client == [0] and not single.disjoint


def test_placement_avoids_cpu0_interrupt_cpus_and_hyperthread_siblings() -> None:
    text = ("           CPU0       CPU1       CPU2       CPU3\n"
            " 24:       5000          0          0        10  IO-APIC  ACPI\n"
            " 36:          0          3     900000          0  PCI-MSIX virtio1-input.0\n"
            "LOC:     231410     232844     230000     230001  Local timer interrupts\n")
    irqs = device_interrupts(text)
    assert irqs == {0: 5000, 1: 3, 2: 900000, 3: 10}
    # CPUs 1 and 3 are two threads of one core; 0 and 2 the other core's
    cores = {0: ("0", "0"), 2: ("0", "0"), 1: ("0", "1"), 3: ("0", "1")}
    where = placement([0, 1, 2, 3], irqs, cores)
    assert where.order[0] == 1 and where.order[-1] == 0 and "handed out last" in where.why
    plan = CpuAllocator([0, 1, 2, 3], where=where).plan(1, 1)
    # the client is not the server's sibling (3) when another core is free
    assert plan.server == [1] and plan.client == [2]
    # the same allocator gives the same cores every time (every run of a session)
    assert CpuAllocator([0, 1, 2, 3], where=where).plan(1, 1) == plan
    # on a 2-CPU guest the server never gets CPU 0
    two = CpuAllocator([0, 1], where=placement([0, 1], {0: 10, 1: 10}, {})).plan(1, 1)
    assert two.server == [1] and two.client == [0]


def _our_children(pid: int) -> list[str]:
    return [n for _, n, _ in descendants(pid)]


@pytest.mark.parametrize("sig", [signal.SIGINT, signal.SIGTERM])
def test_interrupt_leaves_no_process_behind(tmp_path: Path, sig: signal.Signals) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    for name in ("a", "b", "c"):
        suite(suites, name, "-c 10 -n 50000000 -t set", "set")
    proc = subprocess.Popen([RBS, "run", "--suites-dir", str(suites), "--results-dir",
                             str(tmp_path / "out"), "--no-datasink"],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 30
    seen: list[str] = []
    while time.monotonic() < deadline and "redis-benchmark" not in seen:
        seen = _our_children(proc.pid)
        time.sleep(0.2)
    assert "redis-benchmark" in seen and "redis-server" in seen, seen
    descendants = psutil.Process(proc.pid).children(recursive=True)
    proc.send_signal(sig)
    out = communicate_or_stacks(proc, 60)
    assert proc.returncode == 130, out
    assert "interrupted" in out
    _, alive = psutil.wait_procs(descendants, timeout=10)
    assert alive == [], [p.pid for p in alive]


def test_cli_run_prints_table_and_exit_code(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    suite(suites, "ok-set", "-n 5000 -t set", "set")
    out = rbs("run", "--suites-dir", str(suites), "--results-dir",
              str(tmp_path / "out"), "--no-datasink", timeout=120)
    assert out.returncode == 0, out.stdout + out.stderr
    assert "ok-set" in out.stdout and "ops/sec" in out.stdout
    summaries = list((tmp_path / "out").glob("*/summary.csv"))
    assert len(summaries) == 1
    assert "ok-set" in summaries[0].read_text()
    dry = rbs("run", "--suites-dir", str(suites), "--dry-run", timeout=60)
    assert dry.returncode == 0 and "-n 5000 -t set" in dry.stdout
    suite(suites, "zz-fail", "-n 1000 -t set", "set", "    no-such-option: 1\n")
    bad = rbs("run", "--suites-dir", str(suites), "--results-dir",
              str(tmp_path / "out"), "--no-datasink", timeout=120)
    assert bad.returncode == 1
    assert "zz-fail" in bad.stdout and "did not answer PING" in bad.stdout


if __name__ == "__main__":
    sys.exit(pytest.main([__file__]))


def test_passwords_are_redacted_from_stored_argv() -> None:
    from redis_benchmarks_spec.common.credentials import redact_argv
    assert redact_argv(["rb", "-a", "secret", "-n", "1"]) == ["rb", "-a", "***", "-n", "1"]
    assert redact_argv(["m", "--authenticate=u:p", "-c", "1"]) == [
        "m", "--authenticate=***", "-c", "1"]


class _StopThenFail:
    """The real process launcher, whose stop() stops the server and then reports a failure
    (as a Docker engine that errors on ``rm`` would)."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner = inner
        self.stopped_pids: list[int] = []

    def start(self, spec):  # type: ignore[no-untyped-def]
        return self.inner.start(spec)

    def stop(self, handle) -> None:  # type: ignore[no-untyped-def]
        self.inner.stop(handle)
        self.stopped_pids.extend(handle.pids)
        raise RuntimeError("engine said no")


def test_result_is_written_when_cleanup_fails(tmp_path: Path) -> None:
    from redis_benchmarks_spec.common.process import ProcessRegistry
    from redis_benchmarks_spec.runner.execute import run_test
    from redis_benchmarks_spec.runner.session import make_env
    from redis_benchmarks_spec.suites.topology import load_topologies

    suites = tmp_path / "suites"
    suites.mkdir()
    suite(suites, "ping", "-c 5 -n 2000 PING", "ping")
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "results")
    registry = ProcessRegistry()
    env = make_env(config, registry)
    failing = _StopThenFail(env.launcher)
    env.launcher = failing
    try:
        result = run_test(load_catalog(suites).suites[0], load_topologies()["oss-standalone"],
                          env)
    finally:
        registry.stop_all()
    assert result.status == STATUS_OK, result.reason
    port = result.deployment.nodes[0].port if result.deployment else 0
    assert result.cleanup_errors == [f"stop primary-0:{port}: RuntimeError: engine said no"]
    stored = RunResult.read(tmp_path / "results" / "ping" / "oss-standalone" / "result.json")
    assert stored.metrics["ALL_STATS.Totals.Ops/sec"] > 0
    assert stored.cleanup_errors == result.cleanup_errors
    assert failing.stopped_pids and not any(psutil.pid_exists(p) and
                                            psutil.Process(p).status() != "zombie"
                                            for p in failing.stopped_pids)
