"""Latency at a fixed offered rate: memtier's --rate-limiting, offered vs achieved, saturation,
the coordinated-omission correction on a real stall, and the latency-throughput curve."""

from __future__ import annotations

import json
import shutil
import subprocess
import time
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen import pacing
from redis_benchmarks_spec.loadgen.memtier_json import parse_memtier_json
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.runner.sweep import SweepError, parse_sweep
from tests.cli import rbs, write_suite
from tests.conftest import RedisServer

ROOT = Path(__file__).resolve().parents[1]
SUITE = """
name: paced-get
tested-commands: [get]
dbconfig:
  check: {keyspacelen: 1000}
  preload_tool:
    tool: redis-cli
    arguments: 'EVAL "for i=1,1000 do redis.call(''SET'', ''memtier-''..i, ''xxxxxxxxxx'') end return 1" 0'
redis-topologies: [oss-standalone]
clientconfig:
  tool: memtier_benchmark
  arguments: --ratio 0:1 --key-minimum 1 --key-maximum 1000 -t 1 -c 4 --hide-histogram --test-time 2
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def memtier() -> str:
    found = shutil.which("memtier_benchmark") or ROOT / ".cache" / "tools" / "bin" / \
        "memtier_benchmark"
    assert Path(found).is_file(), "memtier_benchmark missing: run make test (setup builds it)"
    return str(found)


def _suites(tmp_path: Path, text: str = SUITE) -> Path:
    folder = tmp_path / "suites"
    write_suite(folder, "paced-get", text)
    return folder


def test_memtier_pacing_arithmetic_and_arguments() -> None:
    # memtier 2.3.0: ceil(R/50) requests every 1e6 // (R // ceil(R/50)) microseconds
    assert pacing.per_connection_offered(500) == 500.0
    assert pacing.per_connection_offered(130) == pytest.approx(3 * 1e6 / 23255)
    args = pacing.paced_arguments("-t 2 -c 5 --rate-limiting 7 --test-time 2", 1000)
    assert args == "-t 2 -c 5 --test-time 2 --rate-limiting=100"
    assert pacing.offered_rps(args.split()) == 1000.0
    assert pacing.connections(["--ratio", "1:1"]) == 200  # memtier's 4 x 50
    with pytest.raises(pacing.PacingError, match="less than 1 per connection"):
        pacing.paced_arguments("-t 1 -c 50", 10)


def test_rate_sweep_values_parse() -> None:
    assert parse_sweep("rate=10%,50%,120%").values == ("10%", "50%", "120%")
    assert parse_sweep("rate=5000,10000").values == ("5000", "10000")
    for bad in ("rate=10%,5000", "rate=50%,10%", "rate=0,10", "rate=abc,def"):
        with pytest.raises(SweepError):
            parse_sweep(bad)


def test_a_stall_shows_in_corrected_percentiles_only(tmp_path: Path) -> None:
    """4 connections at 250 requests/s each for 3 s; DEBUG SLEEP 0.5 at 1.5 s. memtier
    times the one request in flight per connection (4 of ~2,500 values: p99 does not see
    the stall); the correction adds the ~125 per connection it never sent."""
    redis_server = RedisServer(tmp_path, ["--enable-debug-command", "local"])
    client = redis_server.client()
    out = tmp_path / "memtier.json"
    argv = [memtier(), "-s", "127.0.0.1", "-p", str(redis_server.port), "--ratio", "0:1",
            "-t", "1", "-c", "4", "--hide-histogram", "--test-time", "3",
            "--rate-limiting=250", "--json-out-file", str(out)]
    proc = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        time.sleep(1.5)
        client.execute_command("DEBUG", "SLEEP", "0.5")
        assert proc.wait(timeout=60) == 0
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
        redis_server.stop()
    record = pacing.rate_record([argv], parse_memtier_json(out))
    assert record["offered_rps"] == 1000.0 and record["expected_interval_us"] == 4000.0
    measured, corrected = record["latency_ms_uncorrected"], record["latency_ms_corrected"]
    assert measured["p99.00"] < 100, measured  # the stall is 4 values of ~500 ms
    assert measured["p99.99"] > 400, measured
    assert corrected["p99.00"] > 300, corrected
    assert corrected["p90.00"] > 100, corrected
    # the stall cost the mean more than 5 % of the offered rate, in one second of three:
    # a stall, not saturation (the server kept up in every other second)
    assert record["achieved_rps"] < 0.95 * record["offered_rps"], record
    assert (record["short_seconds"], record["full_seconds"]) == (1, 3), record
    assert record["stalled"] and not record["saturated"]
    assert "short in 1 of 3 full seconds" in pacing.saturation_note(record)


def test_rate_records_offered_and_achieved(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path)),
              "--results-dir", str(tmp_path / "r"), "--rate", "2000", "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = json.loads(out.stdout[out.stdout.index("["):])
    assert row["offered_rps"] == 2000.0
    assert 0.8 * 2000 < row["achieved_rps"] <= 2000 * 1.05
    (path,) = find_result_files(tmp_path / "r")
    doc = RunResult.read(path)
    assert "--rate-limiting=500" in doc.argv[0]  # 2,000 over 4 connections
    assert doc.rate["connections"] == 4 and "p99.00" in doc.rate["latency_ms_corrected"]
    assert doc.metrics["offered_rps"] == 2000.0


def test_rate_refuses_a_tool_that_cannot_pace(tmp_path: Path) -> None:
    text = SUITE.replace("tool: memtier_benchmark", "tool: redis-benchmark").replace(
        "arguments: --ratio", "arguments: -n 100 -t get #")
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path, text)),
              "--rate", "1000", "--results-dir", str(tmp_path / "r"))
    assert out.returncode == 2
    assert "--rate 1000" in out.stderr and "redis-benchmark cannot pace" in out.stderr
    assert "Traceback" not in out.stderr


def test_rate_sweep_draws_the_curve_and_marks_saturation(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path)),
              "--results-dir", str(tmp_path / "r"), "--sweep", "rate=25%,400%")
    assert out.returncode == 0, out.stdout + out.stderr
    docs = {RunResult.read(p).sweep["value"]: RunResult.read(p)
            for p in find_result_files(tmp_path / "r")}
    assert set(docs) == {"max", "25%", "400%"}
    assert not docs["max"].rate  # the unpaced maximum
    top = docs["max"].result.totals.ops_per_sec  # type: ignore[union-attr]
    assert docs["25%"].rate["offered_rps"] == pytest.approx(0.25 * top, rel=0.05)
    assert not docs["25%"].rate["saturated"]
    assert docs["400%"].rate["saturated"] and "saturated" in docs["400%"].flags
    assert "latency at fixed rates" in out.stdout
    page = tmp_path / "report.html"
    (session,) = (tmp_path / "r").iterdir()
    report = rbs("report", str(session), "-o", str(page), timeout=120)
    assert report.returncode == 0, report.stderr
    html = page.read_text()
    assert 'data-plot="rate-curve"' in html
    assert 'data-saturated-from="400%"' in html
    assert "p99 corrected ms" in html


def test_a_percentage_too_low_for_the_connections_is_skipped_with_the_reason(
        tmp_path: Path) -> None:
    from redis_benchmarks_spec.loadgen.drivers import ToolPaths
    from redis_benchmarks_spec.results.tool_result import CommandResult, LatencySummary, ToolResult
    from redis_benchmarks_spec.runner.rate_sweep import run_percent_sweep
    from redis_benchmarks_spec.runner.session import SessionConfig
    from redis_benchmarks_spec.suites.catalog import load_catalog

    (suite,) = load_catalog(_suites(tmp_path)).suites  # 4 connections
    ran: list[tuple[str, list[str]]] = []

    def run(cfg: SessionConfig, suites: list) -> list[RunResult]:  # type: ignore[type-arg]
        ran.append((cfg.sweep["value"], [s.clientconfigs[0].arguments for s in suites]))
        if cfg.sweep["value"] != "max":
            return []
        return [RunResult(suite.name, "x", "ok", sweep=dict(cfg.sweep),
                          result=ToolResult("memtier_benchmark",
                                            CommandResult(20.0, LatencySummary())))]

    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "r")
    results = run_percent_sweep(config, [suite], ("10%", "100%"), run)
    # 10 % of 20/s is 2/s over 4 connections: below memtier's 1 per connection
    skipped = [r for r in results if r.status == "skipped"]
    assert [r.sweep["value"] for r in skipped] == ["10%"]
    assert "less than 1 per connection" in skipped[0].reason
    assert ran[-1][0] == "100%" and ran[-1][1][0].endswith("--rate-limiting=5")
