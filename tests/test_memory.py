"""Memory as a metric: INFO memory and MEMORY STATS after the preload and after the run, the
memory-only mode, and A/B verdicts on memory (real redis-servers throughout)."""

from __future__ import annotations

import json
import shutil
import time
from pathlib import Path

import pytest

from redis_benchmarks_spec.analysis.session_runs import deterministic
from redis_benchmarks_spec.analysis.verdict import metric_direction
from redis_benchmarks_spec.datasink.keys import series_ids
from redis_benchmarks_spec.results import memory
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.telemetry.memory import node_memory, quiet_period, read_memory
from tests.cli import rbs, write_suite

# 2,000 hashes of 8 fields of 8 bytes: listpacks under the default thresholds (128 entries,
# 64 bytes), real hash tables with hash-max-listpack-entries 4
HASHES = """
name: mem-hashes
tested-commands: [hget]
dbconfig:
  check: {keyspacelen: 2000}
  preload_tool:
    tool: redis-cli
    arguments: 'EVAL "for i=1,2000 do local k=''h:''..i for j=1,8 do redis.call(''HSET'', k, ''f''..j, ''vvvvvvvv'') end end return 1" 0'
redis-topologies: [{topology}]
clientconfig:
  tool: redis-benchmark
  arguments: -c 4 -n 2000 -r 2000 hget h:__rand_int__ f1
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _suites(tmp_path: Path, topology: str = "oss-standalone") -> Path:
    folder = tmp_path / "suites"
    write_suite(folder, "s", HASHES.replace("{topology}", topology))
    return folder


def _json(stdout: str) -> object:
    opener = min(i for i in (stdout.find("["), stdout.find("{")) if i >= 0)
    return json.loads(stdout[opener:])


def test_totals_add_primaries_and_per_key_is_dataset_over_keys() -> None:
    a = memory.node_figures({"used_memory": 1000, "used_memory_dataset": 600,
                             "allocator_allocated": 900, "allocator_active": 990,
                             "allocator_frag_ratio": 1.1}, {"keys.count": 3})
    assert a["bytes_per_key"] == 200.0 and a["keys"] == 3
    b = memory.node_figures({"used_memory": 3000, "used_memory_dataset": 1400,
                             "allocator_allocated": 2100, "allocator_active": 2110},
                            {"keys.count": 7, "dataset.bytes": 1400})
    both = memory.total([a, b])
    assert both["used_memory"] == 4000 and both["keys"] == 10
    assert both["bytes_per_key"] == 200.0
    assert both["allocator_frag_ratio"] == pytest.approx(3100 / 3000)
    assert memory.is_dataset_memory("used_memory")
    assert not memory.is_dataset_memory("used_memory.after_run")
    assert memory.is_memory_metric("bytes_per_key.after_run")
    # less memory, a shorter sync or fork is better; memory figures are deterministic
    for name in (*memory.MEMORY_METRICS, "used_memory.after_run", "latest_fork_usec",
                 "ALL_STATS.Totals.ReplicationFullSyncPreloadedSeconds"):
        assert metric_direction(name) == -1, name
    assert deterministic("used_memory") and deterministic("memory")
    assert not deterministic("used_memory.after_run")


def test_node_memory_reads_a_real_server_once_settled(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    for i in range(500):
        client.set(f"k{i}", "x" * 100)
    figures = node_memory(client)
    assert figures["keys"] == 500
    assert figures["used_memory"] > figures["used_memory_dataset"] > 500 * 100
    assert figures["bytes_per_key"] == figures["used_memory_dataset"] / 500
    assert "settled" not in figures  # an idle server's figures repeat at once


def test_node_memory_waits_for_the_allocator_after_a_preload(redis_server) -> None:  # type: ignore[no-untyped-def]
    """Right after a write burst the allocator's figures are the cron's old sample: what
    node_memory keeps must be what the server says a second later (five bursts). How long
    it waits is a figure for docs/memory.md, not a test's."""
    client = redis_server.client()
    waits = []
    for burst in range(5):
        # written through a connection closed before the read, as a preload tool exits
        # before the run reads memory (a writer still connected keeps its buffers)
        writer = redis_server.client()
        pipe = writer.pipeline(transaction=False)
        # 20,000 fields of one new hash a burst, not 20,000 keys: a keyspace that grows past
        # a power of two (65,536 keys in the fourth burst) finishes its rehash in the cron
        # and frees the old table (512 KiB) later still, which node_memory does not wait for
        # (docs/memory.md); a hash's own table is rehashed only as it is written
        for i in range(20000):
            pipe.hset(f"h{burst}", f"f{i}", "x" * 50)
        pipe.execute()
        writer.close()
        started = time.monotonic()
        figures = node_memory(client)
        waits.append(time.monotonic() - started)
        time.sleep(1.0)  # ten allocator samples later
        later = read_memory(client)
        assert "settled" not in figures, figures
        # a burst moves these by megabytes (a stale cron sample is that far off); what moves
        # after they settle is the allocator handing back what its caches held, 16 KiB seen
        # (a rerun on 2026-12-03): 64 KiB allowed beside the 0.2 %
        for name in ("allocator_allocated", "used_memory_overhead", "used_memory_dataset"):
            assert figures[name] == pytest.approx(later[name], rel=0.002, abs=64 * 1024), \
                (burst, name)
    assert min(waits) >= quiet_period(10.0), waits  # a refresh fell inside every window


def test_memory_only_measures_the_preload_without_the_load(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path)),
              "--results-dir", str(tmp_path / "r"), "--memory-only", "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    (row,) = _json(out.stdout)  # type: ignore[misc]
    assert row["status"] == "ok" and row["ops_per_sec"] is None
    for name in ("used_memory", "used_memory_dataset", "used_memory_overhead",
                 "allocator_frag_ratio", "bytes_per_key"):
        assert row[name] > 0, name
    (doc_path,) = find_result_files(tmp_path / "r")
    doc = RunResult.read(doc_path)
    assert doc.result is None and doc.tool_duration_s is None  # no client ran
    totals = doc.memory["after_preload"]["totals"]
    assert totals["keys"] == 2000
    assert doc.metrics["bytes_per_key"] == pytest.approx(totals["used_memory_dataset"] / 2000)
    assert "after_run" not in doc.memory
    # history: every memory figure is a series of its own
    assert {s.metric for s in series_ids(doc)} >= set(memory.MEMORY_METRICS)


def test_a_run_keeps_memory_after_preload_and_after_run(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path)),
              "--results-dir", str(tmp_path / "r"), "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    (doc_path,) = find_result_files(tmp_path / "r")
    doc = RunResult.read(doc_path)
    assert doc.metrics["ALL_STATS.Totals.Ops/sec"] > 0
    assert doc.metrics["used_memory"] == doc.memory["after_preload"]["totals"]["used_memory"]
    assert doc.metrics["used_memory.after_run"] == \
        doc.memory["after_run"]["totals"]["used_memory"]
    assert doc.memory["after_run"]["nodes"][0]["role"] == "primary"


def test_cluster_memory_is_per_shard_and_summed(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink",
              "--suites-dir", str(_suites(tmp_path, "oss-cluster-3-primaries")),
              "--results-dir", str(tmp_path / "r"), "--memory-only", "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    (doc_path,) = find_result_files(tmp_path / "r")
    snap = RunResult.read(doc_path).memory["after_preload"]
    assert len(snap["nodes"]) == 3
    keys = [n["keys"] for n in snap["nodes"]]
    assert sum(keys) == 2000 and all(k > 300 for k in keys)  # an even slot split
    assert snap["totals"]["used_memory"] == sum(n["used_memory"] for n in snap["nodes"])


def _ab(tmp_path: Path, comparison_args: str, *extra: str,
        repetitions: int = 5) -> dict:  # type: ignore[type-arg]
    server = shutil.which("redis-server") or "redis-server"
    out = rbs("run", "--no-datasink", "--suites-dir", str(_suites(tmp_path)),
              "--results-dir", str(tmp_path / "r"), "--memory-only",
              "--baseline-server", server, "--comparison-server", server,
              "--comparison-server-args", comparison_args, "--repetitions", str(repetitions),
              "--format", "json", *(extra or ("--no-noise-prior",)))
    assert out.returncode == 0, out.stdout + out.stderr
    report = _json(out.stdout)
    assert isinstance(report, dict)
    return {r["metric"]: r for r in report["rows"]}


def test_memory_ab_of_the_same_server_flags_nothing(tmp_path: Path) -> None:
    book = tmp_path / "noise.json"
    rows = _ab(tmp_path, "", "--noise-file", str(book))
    assert set(rows) == set(memory.MEMORY_METRICS)
    # an A/A records each figure's spread in entries of its own
    recorded = {e["metric"] for e in json.loads(book.read_text())["entries"]}
    assert recorded == set(memory.MEMORY_METRICS)
    assert {r["verdict"] for r in rows.values()} <= {"NO CHANGE", "UNKNOWN"}, rows
    assert rows["used_memory"]["verdict"] == "NO CHANGE"


def test_memory_ab_flags_a_config_that_takes_more_memory(tmp_path: Path) -> None:
    page = tmp_path / "report.html"
    rows = _ab(tmp_path, "--hash-max-listpack-entries 4", "--html", str(page),
               "--no-noise-prior")
    for name in ("used_memory", "used_memory_dataset", "bytes_per_key"):
        row = rows[name]
        assert row["verdict"] == "REGRESSION", row
        assert row["change_pct"] > 20 and row["ci_low_pct"] > 0, row
    html = page.read_text()
    assert 'id="memory-figures"' in html and "mem-hashes: used_memory" in html


def test_three_pairs_decide_a_memory_change_and_leave_an_aa_alone(tmp_path: Path) -> None:
    """Memory after the preload repeats exactly: 3 pairs that agree decide (issue 39), where
    the rank interval had no 95 % interval below 6 pairs ("too few points (n=3)")."""
    rows = _ab(tmp_path / "ab", "--hash-max-listpack-entries 4", repetitions=3)
    for name in ("used_memory", "bytes_per_key"):
        assert rows[name]["verdict"] == "REGRESSION", rows[name]
        assert rows[name]["change_pct"] > 20 and rows[name]["ci_low_pct"] > 0, rows[name]
    same = _ab(tmp_path / "aa", "", repetitions=3)
    assert {r["verdict"] for r in same.values()} <= {"NO CHANGE", "UNKNOWN"}, same


def test_replica_topology_times_a_full_sync_of_the_preloaded_dataset(tmp_path: Path) -> None:
    out = rbs("run", "--no-datasink",
              "--suites-dir", str(_suites(tmp_path, "oss-standalone-01-replicas")),
              "--results-dir", str(tmp_path / "r"), "--format", "json")
    assert out.returncode == 0, out.stdout + out.stderr
    (doc_path,) = find_result_files(tmp_path / "r")
    doc = RunResult.read(doc_path)
    assert doc.deployment is not None and len(doc.deployment.preloaded_sync_s) == 1
    synced = doc.metrics["ALL_STATS.Totals.ReplicationFullSyncPreloadedSeconds"]
    assert synced == doc.deployment.preloaded_sync_s[0] > 0
    # the primary forked for that sync: its fork time is kept, and both go to history
    assert doc.metrics["latest_fork_usec"] > 0
    assert {"latest_fork_usec", "ALL_STATS.Totals.ReplicationFullSyncPreloadedSeconds"} <= \
        {s.metric for s in series_ids(doc)}
    # the replica's memory is listed, the totals are the primary's
    nodes = doc.memory["after_preload"]["nodes"]
    assert [n["role"] for n in nodes] == ["primary", "replica"]
    assert doc.memory["after_preload"]["totals"]["keys"] == 2000 == nodes[1]["keys"]
