"""Our suite collection in test-suites/: it loads and lints clean, covers what it promises, and
every redis-benchmark suite really runs against a real redis-server: exact preload (DBSIZE ==
keyspacelen), the suite's own command line accepted by redis-benchmark, no error replies, reads
that hit the preloaded keys (no keyspace misses), writes that create keys."""

from __future__ import annotations

import csv
import io
import subprocess
import time
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.suites.commands import redis_benchmark_command
from redis_benchmarks_spec.suites.problems import ERROR
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.validate import lint_catalog

SUITES_DIR = Path(__file__).resolve().parents[1] / "test-suites"
REDIS_SERVER = "/usr/bin/redis-server"
REDIS_BENCHMARK = "/usr/bin/redis-benchmark"
QUICK_REQUESTS = "2000"

GROUPS = {"string", "hash", "list", "set", "sorted-set", "stream", "bitmap", "hyperloglog",
          "geo", "generic", "scripting", "transactions", "connection"}
REQUIRED_COMMANDS = {
    "get", "set", "incr", "mset", "append", "getrange", "hset", "hget", "hgetall", "lpush",
    "rpush", "lpop", "lrange", "lindex", "sadd", "sismember", "smembers", "zadd", "zrange",
    "zrangebyscore", "zincrby", "zscore", "xadd", "xrange", "setbit", "getbit", "bitcount",
    "pfadd", "pfcount", "geoadd", "geosearch", "geodist", "exists", "expire", "del", "ttl",
    "eval", "evalsha", "ping", "multi", "exec",
}
REQUIRED_SUITES = {
    "redis-benchmark-1Kkeys-string-get-100B", "redis-benchmark-string-set-100B",
    "redis-benchmark-100Kkeys-hash-hget-100B", "redis-benchmark-list-lpush-100B",
    "redis-benchmark-100Kkeys-zset-zrangebyscore", "redis-benchmark-ping-inline",
}
FORBIDDEN_ARGS = {"-h", "-p", "--csv", "-q", "--threads"}


def _redis_benchmark_suites() -> list[Suite]:
    return [s for s in load_catalog(SUITES_DIR).suites if s.tools == ["redis-benchmark"]]


def test_collection_loads_and_lints_clean() -> None:
    catalog = load_catalog(SUITES_DIR)
    assert [str(p) for p in catalog.errors] == []
    assert [str(p) for p in lint_catalog(SUITES_DIR) if p.severity == ERROR] == []
    rb = [s for s in catalog.suites if s.tools == ["redis-benchmark"]]
    assert len(rb) >= 40
    assert REQUIRED_SUITES <= {s.name for s in rb}
    assert GROUPS <= {g for s in catalog.suites for g in s.tested_groups}
    covered = {c for s in catalog.suites for c in s.tested_commands}
    assert REQUIRED_COMMANDS <= covered, REQUIRED_COMMANDS - covered
    memtier = [s for s in catalog.suites if s.tools == ["memtier_benchmark"]]
    assert 3 <= len(memtier)
    assert any("multi" in s.tested_commands for s in memtier)


# the topologies our suites run on beside oss-standalone (README of test-suites/)
OUR_TOPOLOGIES = {"oss-standalone", "oss-standalone-02-io-threads", "oss-standalone-04-io-threads",
                  "oss-standalone-01-replicas", "oss-cluster-3-primaries"}


def test_collection_conventions() -> None:
    pipelines: set[str] = set()
    payloads: set[str] = set()
    for suite in load_catalog(SUITES_DIR).suites:
        assert suite.path.name == f"{suite.name}.yml"
        assert suite.topologies[0] == "oss-standalone"
        assert set(suite.topologies) <= OUR_TOPOLOGIES, suite.name
        if "oss-cluster-3-primaries" in suite.topologies:
            # redis-benchmark routes only its built-in tests' {tag} keys in cluster mode
            assert " -t " in suite.clientconfigs[0].arguments, suite.name
        assert suite.priority in range(1, 6), suite.name
        assert suite.dbconfig.configuration_parameters.get("save") == '""', suite.name
        assert "$.\"ALL STATS\".Totals.\"Ops/sec\"" in suite.exporter.metrics
        assert suite.exporter.break_by == ["version", "commit"]
        assert set(suite.tested_groups) <= GROUPS, suite.name
        assert suite.build_variants == ["gcc:12.2.0-amd64-debian-bookworm-default", "dockerhub"]
        if suite.tools != ["redis-benchmark"]:
            continue
        client = suite.clientconfigs[0]
        assert client.run_image == "redis:7.0.15", suite.name
        assert client.resources == {"requests": {"cpus": "1", "memory": "2g"}}, suite.name
        argv = client.argv()
        assert not FORBIDDEN_ARGS & set(argv), suite.name
        assert argv[argv.index("-c") + 1] == "50", suite.name
        assert "-n" in argv, suite.name
        pipelines.add(argv[argv.index("-P") + 1] if "-P" in argv else "1")
        for size in ("10B", "100B", "1000B"):
            if f"-{size}" in suite.name:
                payloads.add(size)
        # a suite that reads data has an exact preload and a keyspace check
        if suite.dbconfig.preload_tool:
            assert suite.dbconfig.keyspacelen, suite.name
            assert suite.dbconfig.preload_tool.tool == "redis-cli", suite.name
    assert {"1", "10", "100"} <= pipelines
    assert payloads == {"10B", "100B", "1000B"}


def _quick_argv(suite: Suite) -> list[str]:
    argv = suite.clientconfigs[0].argv()
    i = argv.index("-n")
    return argv[:i + 1] + [QUICK_REQUESTS] + argv[i + 2:]


def _probe_argv(suite: Suite) -> list[str]:
    """The suite's command with ``__rand_int__`` at the top of its range: ``-r`` minus one,
    12 digits, as redis-benchmark writes it."""
    argv = suite.clientconfigs[0].argv()
    assert "-r" in argv, f"{suite.name}: a read suite needs -r to hit the preloaded keys"
    top = f"{int(argv[argv.index('-r') + 1]) - 1:012d}"
    return [arg.replace("__rand_int__", top) for arg in redis_benchmark_command(argv)]


def _is_hit(reply: object) -> bool:
    """A reply that found data: not nil, 0, empty, or a list holding a nil."""
    if isinstance(reply, list):
        return bool(reply) and None not in reply
    return reply not in (None, 0, b"")


def _start_server(suite: Suite, workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    port = free_port()
    log = (workdir / "redis.log").open("wb")
    proc = subprocess.Popen(
        [REDIS_SERVER, "--port", str(port), "--bind", "127.0.0.1", "--dir", str(workdir),
         "--save", "", *suite.dbconfig.server_args()],
        cwd=workdir, stdout=log, stderr=subprocess.STDOUT)
    log.close()
    deadline = time.monotonic() + 10
    while True:
        try:
            if redis.Redis(port=port, socket_timeout=1).ping():
                return proc, port
        except redis.ConnectionError:
            pass
        if proc.poll() is not None or time.monotonic() > deadline:
            _stop(proc)
            raise AssertionError(f"redis-server did not start: {(workdir / 'redis.log').read_text()}")
        time.sleep(0.02)


def _stop(proc: subprocess.Popen[bytes]) -> None:
    if proc.poll() is None:
        proc.terminate()
        try:
            proc.wait(timeout=5)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(timeout=5)


@pytest.mark.parametrize("suite", _redis_benchmark_suites(), ids=lambda s: s.name)
def test_redis_benchmark_suite_runs(suite: Suite, tmp_path: Path) -> None:
    proc, port = _start_server(suite, tmp_path)
    try:
        client = redis.Redis(port=port, socket_timeout=30)
        for command in suite.dbconfig.init_commands:
            client.execute_command(*command)
        preload = suite.dbconfig.preload_tool
        if preload:
            client.execute_command(*preload.argv())
        if suite.dbconfig.keyspacelen is not None:
            assert client.dbsize() == suite.dbconfig.keyspacelen
        if preload:
            # the highest key (and member) redis-benchmark will pick exists: the preload covers
            # the whole -r range, members included (SISMEMBER, ZSCORE...)
            probe = _probe_argv(suite)
            assert _is_hit(client.execute_command(*probe)), probe
        before = client.info("stats")
        run = subprocess.run(
            [REDIS_BENCHMARK, "-h", "127.0.0.1", "-p", str(port), "--csv", *_quick_argv(suite)],
            capture_output=True, text=True, timeout=60, cwd=tmp_path, check=False)
        assert run.returncode == 0, run.stderr
        rows = list(csv.DictReader(io.StringIO(run.stdout)))
        assert rows, run.stdout + run.stderr
        assert all(float(row["rps"]) > 0 for row in rows), rows
        after = client.info("stats")
        assert after["total_error_replies"] == before["total_error_replies"]
        if preload:
            # __rand_int__ keys in [0, -r) all exist: a wrong -r or key name shows up as misses
            assert after["keyspace_misses"] == before["keyspace_misses"], suite.name
        elif suite.dbconfig.keyspacelen == 0:
            assert client.dbsize() > 0, f"{suite.name}: a write suite created no key"
    finally:
        _stop(proc)
