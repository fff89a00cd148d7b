"""Counted runs under callgrind load their preload from a snapshot written once, for real:
redis-server under valgrind, the preload written by a plain redis-server of the same binary,
redis-benchmark's fixed requests (runner/preload_snapshot.py)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import PRELOAD_SNAPSHOT, RunResult
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions
from redis_benchmarks_spec.telemetry.profilers.instructions import METRIC
from redis_benchmarks_spec.telemetry.window import WindowOptions
from tests.cli import write_suite

# SCRIPT LOAD is not kept by an RDB: a loaded server that did not load it again would answer
# every EVALSHA with NOSCRIPT, and the run fails on the server's error replies
SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
  check:
    keyspacelen: 1000
  init_commands:
    - 'SCRIPT LOAD "return redis.call(''GET'', KEYS[1])"'
  preload_tool:
    tool: redis-cli
    arguments: 'EVAL "for i=0,999 do redis.call(''SET'', string.format(''key:%012d'', i), string.rep(''x'', 100){ttl}) end return 1" 0'
tested-groups: [scripting]
tested-commands: [evalsha]
redis-topologies: [oss-standalone]
priority: 1
clientconfig:
  tool: redis-benchmark
  arguments: '-c 5 -n 1000 -r 1000 EVALSHA d3c21d0c2b9ca22f82737626a27bcaf5d288f99f 1 key:__rand_int__'
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def _counted(tmp_path: Path, name: str, results: str, write: bool = False,
             ttl: str = "") -> RunResult:
    suites = tmp_path / "suites"
    write_suite(suites, name, SUITE.format(name=name, ttl=ttl))
    options = ProfilerOptions(names=("instructions",), requests=500,
                              instructions_method="callgrind", write_preloads=write)
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / results,
                           dataset_cache=tmp_path / "cache",
                           window=WindowOptions(profilers=options))
    done = run_suites(config, load_catalog(suites).suites)
    assert len(done) == 1
    result = done[0]
    assert result.ok, (result.reason, result.log_tail)
    return RunResult.read(tmp_path / results / name / "oss-standalone" / "result.json")


def _store(tmp_path: Path) -> Path:
    return tmp_path / "cache" / "preload-snapshots"


def test_counted_runs_load_one_snapshot_of_their_preload(tmp_path: Path) -> None:
    first = _counted(tmp_path, "evalsha-loaded", "one")
    second = _counted(tmp_path, "evalsha-loaded", "two")
    rdbs = list(_store(tmp_path).glob("*.rdb"))
    assert len(rdbs) == 1, rdbs  # made by the first run, loaded by both
    made = json.loads(rdbs[0].with_suffix(".json").read_text())
    for doc in (first, second):
        record = doc.dataset[PRELOAD_SNAPSHOT]
        assert (record["sha256"], record["size"]) == (made["sha256"], rdbs[0].stat().st_size)
        assert "--dbfilename" in doc.server_args
        # the script came back (no NOSCRIPT): every fixed request ran EVALSHA
        assert doc.commandstats_delta["evalsha"]["calls"] == 500
    assert made["preload_s"] is not None and made["preload_s"] > 0
    # the counted servers were killed once their dump was read (nothing left to write): their
    # vgdb FIFOs were in their own folder, removed with it, none left in /tmp
    pids = [p for doc in (first, second) for n in doc.deployment.nodes for p in n.pids]
    assert pids and not [f for f in Path("/tmp").glob("vgdb-pipe-*")
                         if any(f"-{pid}-" in f.name for pid in pids)]
    written = _counted(tmp_path, "evalsha-loaded", "three", write=True)
    assert PRELOAD_SNAPSHOT not in written.dataset
    # the loaded dataset is measured like the written one: the same per-op count
    assert first.metrics[METRIC] == pytest.approx(written.metrics[METRIC], rel=0.05)
    assert second.metrics[METRIC] == pytest.approx(written.metrics[METRIC], rel=0.05)


def test_a_preload_with_ttls_is_written_by_every_run(tmp_path: Path) -> None:
    doc = _counted(tmp_path, "evalsha-ttl", "one", ttl=", ''EX'', 3600")
    assert PRELOAD_SNAPSHOT not in doc.dataset
    assert not list(_store(tmp_path).glob("*.rdb"))
    (refused,) = _store(tmp_path).glob("*.json")
    assert "1000 keys with a TTL" in json.loads(refused.read_text())["refused"]
    again = _counted(tmp_path, "evalsha-ttl", "two", ttl=", ''EX'', 3600")
    assert PRELOAD_SNAPSHOT not in again.dataset  # the refusal is remembered, not retried
    assert doc.commandstats_delta["evalsha"]["calls"] == 500
