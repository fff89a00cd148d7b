"""`rbs run --sweep`: arguments rewritten per value, results labelled, datasink series per
value (non-swept keys unchanged), the knee named; real redis-benchmark against redis-server."""

from __future__ import annotations

import dataclasses
import json
import shlex
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.sweep import CurvePoint, find_knee
from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.runner.sweep import SweepError, parse_sweep, swept_arguments
from tests.cli import rbs, write_suite
from tests.datasink_fixtures import (  # noqa: F401
    client_fixture,
    datasink_fixture,
    make_result,
)

SUITE = """
name: sw-get
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 50 -n 4000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def test_parse_sweep_and_its_errors() -> None:
    sweep = parse_sweep("clients=1,8,64")
    assert (sweep.param, sweep.values) == ("clients", (1, 8, 64))
    assert parse_sweep("data-size=32,1024").param == "datasize"
    for bad, why in (("clients", "PARAM="), ("speed=1,2", "unknown parameter"),
                     ("clients=8,1", "increase"), ("clients=4", "at least 2"),
                     ("clients=0,4", "each value must be between 1"),
                     ("clients=1,,8", "empty value"), ("clients=1,8,", "empty value")):
        with pytest.raises(SweepError, match=why):
            parse_sweep(bad)


def test_swept_arguments_replace_every_spelling() -> None:
    assert swept_arguments("-c 50 -n 100 -t get", "redis-benchmark", "clients", 8) == \
        "-c 8 -n 100 -t get"
    assert swept_arguments("-t get", "redis-benchmark", "pipeline", 16) == "-P 16 -t get"
    memtier = swept_arguments("--clients 50 --threads=4 --ratio 1:10", "memtier_benchmark",
                              "threads", 2)
    assert memtier == "--clients 50 -t 2 --ratio 1:10"
    assert swept_arguments("--data-size 32", "memtier_benchmark", "datasize", 1024) == \
        "-d 1024"
    # two spellings of one flag: one setting, where the first was
    assert swept_arguments("-c 5 -n 9 -c 7 GET k", "redis-benchmark", "clients", 3) == \
        "-c 3 -n 9 GET k"


def test_swept_value_never_lands_after_the_redis_benchmark_command() -> None:
    """redis-benchmark reads everything after the command as its arguments: ``GET key -c 8``
    is a GET with three arguments, and the server answers every request with an error."""
    for args in ("-c 50 -n 2000000 -r 1000 GET key:__rand_int__",
                 "-n 2000000 -r 1000 GET key:__rand_int__"):
        argv = shlex.split(swept_arguments(args, "redis-benchmark", "clients", 8))
        assert argv[-2:] == ["GET", "key:__rand_int__"]
        assert argv[argv.index("-c") + 1] == "8"


def _point(value: float, ops: float, p99: float) -> CurvePoint:
    return CurvePoint(value, ops, {"p50.00": p99 / 3, "p99.00": p99})


def test_knee_is_where_throughput_stops_and_latency_grows() -> None:
    curve = [_point(1, 10_000, 0.1), _point(8, 60_000, 0.2), _point(64, 100_000, 1.0),
             _point(512, 102_000, 8.0), _point(4096, 98_000, 70.0)]
    knee = find_knee(curve)
    assert knee.value == 64 and knee.index == 2
    assert "p99 rises from 1 ms here to 8 ms at the next value" in knee.reason
    still_growing = [_point(1, 10_000, 0.1), _point(8, 60_000, 0.2), _point(64, 90_000, 0.3)]
    assert find_knee(still_growing).value is None
    assert "no knee" in find_knee(still_growing).reason
    # a plateau where latency does not grow is not a knee
    flat_latency = [_point(1, 10_000, 1.0), _point(8, 10_100, 1.0), _point(64, 10_000, 1.0)]
    assert find_knee(flat_latency).value is None


def test_swept_series_get_their_own_key_and_labels(client: redis.Redis) -> None:
    plain = make_result(0)
    swept = make_result(1)
    swept = dataclasses.replace(swept, sweep={"param": "clients", "value": "64"},
                                run_id=swept.run_id + "-swept")
    assert keys.series_test_name(plain) == plain.test_name  # non-swept keys unchanged
    assert not push_results(client, [plain, swept]).failed
    names = client.keys("ci.benchmarks.redis/by.branch/*Ops/sec")
    assert sorted(n.decode().split("/")[5] for n in names) == [
        plain.test_name, f"{plain.test_name}.clients-64"]
    found = client.execute_command("TS.QUERYINDEX", f"sweep_of={plain.test_name}",
                                   "sweep_value=64")
    assert len(found) == 4  # 2 metrics x the branch and version sides (the dashboards')
    assert all(b".clients-64/" in k for k in found)
    # a by.hash series carries by/hash/metric/platform only: its key names the swept value
    hashed = client.execute_command("TS.QUERYINDEX", "hash=a1b2c3d4e5f6", "by=hash")
    assert sum(b".clients-64/" in k for k in hashed) == 2


def test_real_sweep_of_clients(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE)
    out = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "out"),
              "--no-datasink", "--sweep", "clients=1,8,64", timeout=600)
    assert out.returncode == 0, out.stdout + out.stderr
    docs = sorted((RunResult.read(p) for p in find_result_files(tmp_path / "out")),
                  key=lambda d: int(d.sweep["value"]))
    assert [d.sweep for d in docs] == [{"param": "clients", "value": v} for v in ["1", "8", "64"]]
    for doc in docs:
        argv = doc.argv[0]
        assert argv[argv.index("-c") + 1] == doc.sweep["value"] and argv.count("-c") == 1
    curves = json.loads(next((tmp_path / "out").rglob("sweep.json")).read_text())
    (curve,) = curves
    assert [p["value"] for p in curve["points"]] == [1, 8, 64]
    assert all(p["ops_per_sec"] > 0 and "p50.00" in p["latency_ms"] for p in curve["points"])
    assert "knee" in out.stdout and curve["knee"]["reason"] in " ".join(out.stdout.split())
    # the table's columns are the percentiles redis-benchmark reports (p95, never p99.9)
    assert "p95.00 ms" in out.stdout and "p99.90 ms" not in out.stdout, out.stdout
    # rbs report draws the curve and names the knee
    session = next((tmp_path / "out").rglob("sweep.json")).parent
    page = tmp_path / "r.html"
    rep = rbs("report", str(session), "--output", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = page.read_text()
    assert '<section id="sweeps">' in text and 'data-plot="sweep"' in text
    knee = curve["knee"]["value"]
    assert f'data-knee="{"" if knee is None else f"{knee:g}"}"' in text


def test_a_knee_after_which_throughput_falls_says_so_in_plain_numbers() -> None:
    curve = [_point(1, 10_000, 0.1), _point(8, 60_000, 0.2), _point(64, 100_000, 1.0),
             _point(512, 89_170, 8.0), _point(4096, 80_000, 1500.0)]
    knee = find_knee(curve)
    assert knee.value == 64
    assert "no larger value is faster: the best of them is 10.8% slower than this one" \
        in knee.reason, knee.reason
    assert "grows at most -" not in knee.reason and "e+" not in knee.reason
