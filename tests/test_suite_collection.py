"""Our suite collection: it loads and lints clean, and every redis-benchmark suite really
runs (exact preload, keyspace check, no error replies) through the real runner."""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.spec.catalog import default_suites_dir, load_catalog
from redis_benchmarks_spec.spec.lint import lint_catalog
from redis_benchmarks_spec.spec.problems import ERROR

GROUPS = {"string", "hash", "list", "set", "sorted-set", "stream", "bitmap", "hyperloglog",
          "geo", "generic", "scripting", "connection"}
REQUIRED_COMMANDS = {"get", "set", "incr", "mset", "append", "getrange", "zadd", "zrange",
                     "zrangebyscore", "zincrby", "xadd", "xrange", "exists", "expire", "del",
                     "eval", "evalsha", "ping", "multi", "exec"}


def test_collection_loads_and_lints_clean() -> None:
    catalog = load_catalog(default_suites_dir())
    assert catalog.problems == []
    assert [p for p in lint_catalog(default_suites_dir()) if p.severity == ERROR] == []
    rb = [s for s in catalog.suites if s.tools == ["redis-benchmark"]]
    assert len(rb) >= 40
    assert GROUPS <= {g for s in rb for g in s.tested_groups}
    covered = {c for s in catalog.suites for c in s.tested_commands}
    assert REQUIRED_COMMANDS <= covered, REQUIRED_COMMANDS - covered
    pipelines = {a for s in rb for a in ("-P 10", "-P 100") if a in s.clientconfigs[0].arguments}
    assert pipelines == {"-P 10", "-P 100"}
    memtier = [s for s in catalog.suites if s.tools == ["memtier_benchmark"]]
    assert len(memtier) >= 3
    # every suite whose command reads data checks an exact keyspace after its preload
    for suite in rb:
        if suite.dbconfig.preload_tool:
            assert suite.dbconfig.keyspacelen, suite.name


def test_every_redis_benchmark_suite_runs(tmp_path: Path) -> None:
    suites = [s for s in load_catalog(default_suites_dir()).suites
              if s.tools == ["redis-benchmark"]]
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path, test_time=1)
    results = run_suites(config, suites)
    failed = {r.test_name: r.reason for r in results if not r.ok}
    assert failed == {}
    assert all(r.result and r.result.totals.ops_per_sec > 0 for r in results)
    assert all("ALL_STATS.Totals.Ops/sec" in r.metrics for r in results)
