"""Which counted runs load a preload snapshot, what its key covers, how the store keeps it,
and that a stored base written the old way is not paired with a loaded head (pure logic)."""

from __future__ import annotations

import os
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.results.document import PRELOAD_SNAPSHOT, STATUS_OK, RunResult
from redis_benchmarks_spec.runner.ab_stored import mismatch
from redis_benchmarks_spec.runner.preload_snapshot import (
    SnapshotRequest,
    SnapshotStore,
    not_snapshotted,
)
from redis_benchmarks_spec.suites.auth import Credentials
from redis_benchmarks_spec.suites.dbconfig import DbConfig
from redis_benchmarks_spec.suites.toolconfig import ToolConfig
from redis_benchmarks_spec.suites.topology import CLUSTER, Topology

PRELOAD = ToolConfig("memtier_benchmark", "--ratio 1:0 -n allkeys")
STANDALONE = Topology("oss-standalone")


def test_only_a_plain_standalone_preload_is_snapshotted() -> None:
    db = DbConfig(preload_tool=PRELOAD)
    assert not_snapshotted(db, STANDALONE, ["--save", "''"], "process") == ""
    cases = {
        "nothing to preload": (DbConfig(), STANDALONE, [], "process"),
        "replicas and clusters": (db, Topology("oss-cluster-3", CLUSTER, primaries=3), [],
                                  "process"),
        "replicas and clusters ": (db, Topology("r1", replicas=1), [], "process"),
        "docker launcher": (db, STANDALONE, [], "docker"),
        "its own RDB": (DbConfig(preload_tool=PRELOAD, dataset="/data/x.rdb"), STANDALONE, [],
                        "process"),
        "measures a save": (DbConfig(preload_tool=PRELOAD, wait_for_bgsave=True), STANDALONE,
                            [], "process"),
        "credentials": (DbConfig(preload_tool=PRELOAD, auth=Credentials("pw")), STANDALONE, [],
                        "process"),
        "AOF": (db, STANDALONE, ["--appendonly", "yes"], "process"),
    }
    for words, (config, topology, args, launcher) in cases.items():
        why = not_snapshotted(config, topology, args, launcher)
        assert words.strip() in why, (words, why)
    assert not_snapshotted(db, STANDALONE, ["--appendonly", "no"], "process") == ""


def test_the_key_changes_with_the_binary_its_arguments_and_the_preload(tmp_path: Path) -> None:
    binary = tmp_path / "redis-server"
    binary.write_bytes(b"\x7fELF one")
    db = DbConfig(preload_tool=PRELOAD, keyspacelen=10)
    key = SnapshotRequest(str(binary), ["--save", "''"], db, "2.3.0").key()
    assert key == SnapshotRequest(str(binary), ["--save", "''"], db, "2.3.0").key()
    others = [
        SnapshotRequest(str(binary), ["--save", "''", "--hz", "100"], db, "2.3.0"),
        SnapshotRequest(str(binary), ["--save", "''"], db, "2.4.0"),
        SnapshotRequest(str(binary), ["--save", "''"],
                        DbConfig(preload_tool=ToolConfig("memtier_benchmark", "-n 10")), "2.3.0"),
        SnapshotRequest(str(binary), ["--save", "''"],
                        DbConfig(preload_tool=PRELOAD, init_commands=[["SET", "a", "b"]]),
                        "2.3.0"),
    ]
    assert key not in {o.key() for o in others}
    # a rebuilt binary (the kept tree rewrites it in place) is another snapshot
    stat = binary.stat()
    os.utime(binary, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert SnapshotRequest(str(binary), ["--save", "''"], db, "2.3.0").key() != key


def _rdb(path: Path, size: int) -> Path:
    path.write_bytes(b"REDIS0011" + b"x" * (size - 9))
    return path


def test_the_store_keeps_whole_files_and_drops_the_least_recently_used(tmp_path: Path) -> None:
    store = SnapshotStore(tmp_path / "store", limit_bytes=2500)
    first = store.keep("a" * 32, _rdb(tmp_path / "a.rdb", 1000), 1.5)
    assert first.size == 1000 and store.find("a" * 32) == first
    store.keep("b" * 32, _rdb(tmp_path / "b.rdb", 1000), None)
    os.utime(store.root / f"{'a' * 32}.rdb", (1, 1))  # the oldest used
    store.keep("c" * 32, _rdb(tmp_path / "c.rdb", 1000), None)
    assert store.find("a" * 32) is None
    assert store.find("b" * 32) is not None and store.find("c" * 32) is not None
    # a file cut short is not a snapshot
    with (store.root / f"{'b' * 32}.rdb").open("r+b") as fh:
        fh.truncate(500)
    assert store.find("b" * 32) is None
    store.refuse("d" * 32, "the preload leaves 3 keys with a TTL")
    assert store.find("d" * 32) is None
    assert store.refusal("d" * 32) == "the preload leaves 3 keys with a TTL"
    assert not list(store.root.glob(".*"))  # no temporary file left behind



def test_neighbours_writing_and_pruning_one_store_never_fail_each_other(tmp_path: Path) -> None:
    """The lab replay's base push failed a run with FileNotFoundError on a neighbour's
    temporary ``.<key>.<pid>.rdb``: pruning listed it as a snapshot, and it was renamed
    before its ``stat``. A pruned or in-progress file is not this run's error."""
    store = SnapshotStore(tmp_path / "store", limit_bytes=1_000_000)
    store.root.mkdir()
    # what a neighbour leaves in the listing: a write in progress, a snapshot gone since
    (store.root / f".{'e' * 32}.4242.part").write_bytes(b"REDIS0011")
    (store.root / f"{'f' * 32}.rdb").symlink_to(tmp_path / "pruned-by-a-neighbour")
    kept = store.keep("a" * 32, _rdb(tmp_path / "a.rdb", 1000), None)
    assert store.find("a" * 32) == kept
    assert kept.path.stat().st_mode & 0o777 == 0o644  # readable as before (no 0600 temp)
    assert store.find("f" * 32) is None
    # threads of one process (count lanes of one agent) keep the same key at once
    sources = [_rdb(tmp_path / f"s{i}.rdb", 200_000) for i in range(8)]
    with ThreadPoolExecutor(8) as pool:
        found = list(pool.map(lambda src: store.keep("b" * 32, src, None), sources))
    assert all(f.size == 200_000 for f in found)
    assert [p.name for p in store.root.glob(".*")] == [f".{'e' * 32}.4242.part"]

def _doc(loaded: bool) -> RunResult:
    dataset = {PRELOAD_SNAPSHOT: {"source": "preload snapshot k", "sha256": "0", "size": 9}} \
        if loaded else {}
    return RunResult("t", "r", STATUS_OK, tool="redis-benchmark", tool_version="7.2",
                     metrics={INSTRUCTIONS_METRIC: 1500.0}, dataset=dataset)


def test_a_base_written_the_old_way_is_not_paired_with_a_loaded_head() -> None:
    assert mismatch(_doc(True), [_doc(True)]) == ""
    assert mismatch(_doc(False), [_doc(False)]) == ""
    assert "this head loads a snapshot" in mismatch(_doc(True), [_doc(False)])
    assert "this head writes its preload" in mismatch(_doc(False), [_doc(True)])
