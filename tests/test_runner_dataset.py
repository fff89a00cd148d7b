"""The dataset keys at run time, against real redis-server and redis-benchmark processes.

Each test would fail if its key were parsed and then ignored: init_lua (keyspace check),
dataset (keyspace check, recorded checksum), rdb_checks (exactly one DEBUG RELOAD), wait_for_bgsave
(metrics only it adds), preload_tool.timeout (default is 600 s), the throughput floor keys.
"""

from __future__ import annotations

import hashlib
import http.server
import shutil
import threading
from collections.abc import Iterator
from functools import partial
from pathlib import Path

import pytest

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import STATUS_FAILED, STATUS_OK, RunResult
from redis_benchmarks_spec.runner import dataset as dataset_mod
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import write_suite
from tests.conftest import RedisServer

SUITE = """
version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
    enable-debug-command: 'yes'
{db}
tested-groups: [server]
tested-commands: [{command}]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: {args}
exporter:
  redistimeseries:
    metrics:
{metrics}
"""
OPS = '      - $."ALL STATS".Totals."Ops/sec"'
PRELOAD_100 = """  preload_tool:
    tool: redis-cli
    arguments: EVAL "for i=1,100 do redis.call('SET', 'k:' .. i, '12345678') end return 1" 0
  check:
    keyspacelen: 100
"""


def suite(directory: Path, name: str, args: str, db: str = "", command: str = "get",
          metrics: str = OPS) -> None:
    write_suite(directory, name,
        SUITE.format(name=name, db=db, args=args, command=command, metrics=metrics))


def run(tmp_path: Path, test_time: int | None = None) -> dict[str, RunResult]:
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "results",
                           test_time=test_time, dataset_cache=tmp_path / "cache")
    results = run_suites(config, load_catalog(tmp_path / "suites").suites)
    return {r.test_name: r for r in results}


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    path = tmp_path / "suites"
    path.mkdir()
    return path


@pytest.fixture
def rdb_file(tmp_path: Path) -> Path:
    """A real RDB: 5 keys SAVEd by a real redis-server."""
    workdir = tmp_path / "rdb-source"
    workdir.mkdir()
    server = RedisServer(workdir)
    try:
        client = server.client()
        for i in range(5):
            client.set(f"ds:{i}", f"value-{i}")
        client.save()
    finally:
        server.stop()
    return workdir / "dump.rdb"


@pytest.fixture
def http_dir(tmp_path: Path) -> Iterator[tuple[Path, str]]:
    """A local HTTP server (the standard library's) serving a folder."""
    root = tmp_path / "www"
    root.mkdir()
    handler = partial(http.server.SimpleHTTPRequestHandler, directory=str(root))
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield root, f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_init_lua_runs_before_the_keyspace_check(tmp_path: Path, suites: Path) -> None:
    lua = """  init_lua: |
    for k = 1, 8 do
      for m = 1, 50 do redis.call('SADD', 'st:' .. k, 'm:' .. m) end
    end
    return 1
  check:
    keyspacelen: 8
"""
    suite(suites, "lua", "-n 2000 -c 5 SCARD st:1", lua, "scard")
    suite(suites, "badlua", "-n 100 SCARD st:1", "  init_lua: return redis.call('NOPE')\n",
          "scard")
    results = run(tmp_path)
    assert results["lua"].status == STATUS_OK, results["lua"].reason
    assert results["lua"].dataset == {"init_lua_scripts": 1}
    assert results["badlua"].status == STATUS_FAILED
    assert results["badlua"].reason.startswith("dbconfig.init_lua[0] failed:")


def test_local_dataset_starts_the_server_with_the_rdb(tmp_path: Path, suites: Path,
                                                      rdb_file: Path) -> None:
    db = f"""  dataset: {rdb_file}
  dataset_name: five-keys
  preload_before_replica: true
  check:
    keyspacelen: 5
"""
    suite(suites, "rdb", "-n 2000 GET ds:1", db)
    result = run(tmp_path)["rdb"]
    assert result.status == STATUS_OK, result.reason
    digest = hashlib.sha256(rdb_file.read_bytes()).hexdigest()
    assert result.dataset == {"name": "five-keys", "preload_before_replica": True,
                              "rdb": {"source": str(rdb_file), "sha256": digest,
                                      "size": rdb_file.stat().st_size}}
    assert ["--dbfilename", "dump.rdb"] == result.server_args[-2:]
    assert (tmp_path / "cache" / "blobs" / f"{digest}.rdb").read_bytes() == rdb_file.read_bytes()


def test_http_dataset_is_fetched_once_and_checked(tmp_path: Path, rdb_file: Path,
                                                  http_dir: tuple[Path, str]) -> None:
    root, base = http_dir
    shutil.copyfile(rdb_file, root / "dump.rdb")
    (root / "page.html").write_text("<html>not found</html>")
    cache = tmp_path / "cache"
    first = dataset_mod.fetch(f"{base}/dump.rdb", cache)
    assert first.sha256 == hashlib.sha256(rdb_file.read_bytes()).hexdigest()
    assert first.size == rdb_file.stat().st_size
    (root / "dump.rdb").unlink()  # a second fetch must not need the server
    again = dataset_mod.fetch(f"{base}/dump.rdb", cache)
    assert again == first
    with pytest.raises(dataset_mod.DatasetError, match=r"dataset http://.*/gone.rdb: HTTP 404"):
        dataset_mod.fetch(f"{base}/gone.rdb", cache)
    with pytest.raises(dataset_mod.DatasetError, match="not an RDB file"):
        dataset_mod.fetch(f"{base}/page.html", cache)
    dead = f"http://127.0.0.1:{free_port()}/dump.rdb"
    with pytest.raises(dataset_mod.DatasetError) as err:
        dataset_mod.fetch(dead, cache, timeout_s=5)
    assert str(err.value).startswith(f"dataset {dead} is unreachable:")
    assert "\n" not in str(err.value)


def test_unreachable_dataset_fails_the_test_naming_the_url(tmp_path: Path,
                                                          suites: Path) -> None:
    url = f"http://127.0.0.1:{free_port()}/datasets/dump.rdb"
    suite(suites, "far", "-n 100 GET a", f"  dataset: {url}\n")
    result = run(tmp_path)["far"]
    assert result.status == STATUS_FAILED
    assert result.reason.startswith(f"dataset {url} is unreachable")


# enough keys that one DEBUG RELOAD takes milliseconds (redis-benchmark's clock resolution)
RDB_CHECKS = PRELOAD_100.replace("100", "50000") + """  skip_throughput_floor: true
  rdb_checks:
    operation: load
    keyspacelen: 50000
    value_size: {size}
    sample_keys: [k:1, k:50000]
"""


def test_rdb_checks_load(tmp_path: Path, suites: Path) -> None:
    reload = "-n {n} -c 1 DEBUG RELOAD NOSAVE NOFLUSH"
    latency = '      - $."ALL STATS".Totals."Latency"\n' + OPS
    suite(suites, "load", reload.format(n=1), RDB_CHECKS.format(size=8), "debug", latency)
    twice = RDB_CHECKS.format(size=8).replace("operation: load", "operation: save")
    suite(suites, "twice", "-n 2 -c 1 SAVE", twice, "save", latency)
    suite(suites, "size", reload.format(n=1), RDB_CHECKS.format(size=9), "debug", latency)
    results = run(tmp_path, test_time=3)
    ok = results["load"]
    assert ok.status == STATUS_OK, ok.reason
    assert ok.commandstats_delta["debug"]["calls"] == 1
    argv = ok.argv[0]
    assert argv[argv.index("-n") + 1] == "1"  # --test-time does not repeat the command
    assert ok.metrics["ALL_STATS.Totals.Latency"] > 0
    assert ok.dataset == {"rdb_checks": "load"}
    assert results["twice"].status == STATUS_FAILED
    assert "expected exactly one successful SAVE, commandstats say calls=2" in \
        results["twice"].reason
    assert results["twice"].metrics  # the measurement is kept with the failure
    assert results["size"].status == STATUS_FAILED
    assert "sample key 'k:1' before the run: 8 bytes, expected 9" in results["size"].reason


def test_wait_for_bgsave_adds_the_save_metrics(tmp_path: Path, suites: Path) -> None:
    db = PRELOAD_100 + "  wait_for_bgsave: true\n  skip_throughput_floor: true\n"
    metrics = ('      - $."ALL STATS".Totals.RdbLastBgsaveTimeSec\n'
               '      - $."ALL STATS".Totals.RdbLastForkUsec')
    suite(suites, "bgsave", "-n 1 -c 1 BGSAVE", db, "bgsave", metrics)
    result = run(tmp_path)["bgsave"]
    assert result.status == STATUS_OK, result.reason
    # the exporter's two, beside the memory and fork figures every run records (issue 33)
    assert {"ALL_STATS.Totals.RdbLastBgsaveTimeSec",
            "ALL_STATS.Totals.RdbLastForkUsec"} <= set(result.metrics)
    assert result.metrics["ALL_STATS.Totals.RdbLastForkUsec"] > 0


def test_preload_timeout_is_the_suites_own(tmp_path: Path, suites: Path) -> None:
    db = """  preload_tool:
    tool: redis-benchmark
    arguments: -n 100000000 -c 2 SET a b
    timeout: 1
"""
    suite(suites, "slowpreload", "-n 100 GET a", db)
    result = run(tmp_path)["slowpreload"]
    assert result.status == STATUS_FAILED
    assert "timed out after 1s" in result.reason


def test_throughput_floor_and_its_opt_out(tmp_path: Path, suites: Path) -> None:
    suite(suites, "slow", "-n 1 -c 1 DEBUG SLEEP 1.2", "", "debug")
    suite(suites, "slowbydesign", "-n 1 -c 1 DEBUG SLEEP 1.2",
          "  low-throughput-benchmark: 'yes'\n", "debug")
    results = run(tmp_path)
    slow = results["slow"]
    assert slow.status == STATUS_FAILED
    assert slow.reason.startswith("throughput 0.83 ops/sec is below the 1 ops/sec floor")
    assert slow.metrics["ALL_STATS.Totals.Ops/sec"] == pytest.approx(0.83, abs=0.05)
    assert results["slowbydesign"].status == STATUS_OK, results["slowbydesign"].reason


def test_failed_test_keeps_info_and_commandstats(tmp_path: Path, suites: Path) -> None:
    db = "  init_commands:\n    - SET k v\n"
    suite(suites, "wrongtype", "-n 500 -c 2 LPUSH k x", db, "lpush")
    result = run(tmp_path)["wrongtype"]
    assert result.status == STATUS_FAILED
    assert "error replies" in result.reason
    assert result.commandstats_delta["lpush"]["failed_calls"] >= 1
    assert result.info_delta["total_error_replies"] >= 1


def test_s3_dataset_through_a_local_s3_server(tmp_path: Path, rdb_file: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    """boto3 against moto's S3 server on a free port (S3 itself is out of reach here)."""
    import boto3
    from moto.server import ThreadedMotoServer

    port = free_port()
    server = ThreadedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    try:
        endpoint = f"http://127.0.0.1:{port}"
        for key, value in (("AWS_ENDPOINT_URL", endpoint), ("AWS_ACCESS_KEY_ID", "test"),
                           ("AWS_SECRET_ACCESS_KEY", "test"), ("AWS_DEFAULT_REGION", "us-east-2")):
            monkeypatch.setenv(key, value)
        s3 = boto3.client("s3")
        s3.create_bucket(Bucket="datasets",
                         CreateBucketConfiguration={"LocationConstraint": "us-east-2"})
        s3.upload_file(str(rdb_file), "datasets", "five/dump.rdb")
        cached = dataset_mod.fetch("s3://datasets/five/dump.rdb", tmp_path / "cache")
        assert cached.sha256 == hashlib.sha256(rdb_file.read_bytes()).hexdigest()
        with pytest.raises(dataset_mod.DatasetError,
                           match=r"^dataset s3://datasets/missing.rdb: (404|NoSuchKey)"):
            dataset_mod.fetch("s3://datasets/missing.rdb", tmp_path / "cache")
    finally:
        server.stop()


def test_a_dataset_source_must_be_a_finite_regular_file(tmp_path: Path, rdb_file: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    cache = tmp_path / "cache"
    with pytest.raises(dataset_mod.DatasetError, match="not a regular file"):
        dataset_mod.fetch("/dev/zero", cache)
    monkeypatch.setenv("RBS_MAX_DATASET_BYTES", str(rdb_file.stat().st_size - 1))
    with pytest.raises(dataset_mod.DatasetError, match="larger than"):
        dataset_mod.fetch(str(rdb_file), cache)
    assert not [p for p in cache.rglob("*") if p.is_file() and p.suffix != ".lock"]
    monkeypatch.setenv("RBS_MAX_DATASET_BYTES", str(rdb_file.stat().st_size))
    assert dataset_mod.fetch(str(rdb_file), cache).size == rdb_file.stat().st_size
