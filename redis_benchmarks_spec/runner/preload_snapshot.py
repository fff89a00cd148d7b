"""A counted run's dataset loaded from a snapshot of its preload, written once per build.

A counted run (a profiler's fixed request count: the server under callgrind) starts its
server under valgrind, and the preload then writes every key through it: memtier's 1M-key
preload took 25-27 s a run under valgrind, 10 s natively, and 2.7 s to load as an RDB under
valgrind (docs/lab.md). The counts are taken only over the client's fixed requests, so the
dataset need not be written by the counted server: here it is written once, by a plain
server of the same binary and arguments (the deployment's scratch node), saved, and kept
under a key of the binary, its arguments, the suite's dataset configuration and the preload
tool's version; every counted run of that build then starts from the RDB.

A loaded dataset is not a written one to the byte (no fragmentation left by the writes, the
dictionaries sized once), so the result document says the dataset was loaded
(``setup.dataset.preload_snapshot``) and a stored base written the old way is not paired with
a loaded head (``runner.ab_stored.mismatch``). Suites whose dataset a snapshot would not keep
write it themselves, and the reason is logged: keys with a TTL (a later load drops them once
expired), an AOF server (it loads the AOF, not the RDB), RDB and BGSAVE suites (the save is
what they measure), credentials, replicas and clusters.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import logging
import os
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import IO, TYPE_CHECKING

import redis

from redis_benchmarks_spec.runner.dataset import CachedDataset, DatasetError, check_rdb
from redis_benchmarks_spec.runner.preload import KeyspaceMismatch, keyspace_size, run_init_commands
from redis_benchmarks_spec.suites.dbconfig import DbConfig
from redis_benchmarks_spec.suites.topology import Topology

if TYPE_CHECKING:
    from redis_benchmarks_spec.runner.deployment import Deployment
    from redis_benchmarks_spec.runner.node import Node

log = logging.getLogger(__name__)

FORMAT = 1  # bump when what goes into the key changes meaning
# init commands whose effect an RDB does not keep: they run again on the loading server
RERUN = frozenset({"ACL", "CLIENT", "CONFIG", "DEBUG", "SCRIPT"})
# the store keeps at most this much (oldest used first out); one 1M-key snapshot is ~27 MB
LIMIT_BYTES = 2 << 30
NOTHING = "nothing to preload"


@dataclass(frozen=True)
class SnapshotRequest:
    """What a snapshot is of: the server binary and arguments, the suite's dataset, the tool."""

    binary: str
    args: list[str]
    db: DbConfig
    tool_version: str

    def key(self) -> str:
        """The snapshot's name: a digest of everything that decides its content."""
        real = os.path.realpath(shutil.which(self.binary) or self.binary)
        st = os.stat(real)
        db = self.db
        preload = db.preload_tool
        doc = {"format": FORMAT, "binary": [real, st.st_size, st.st_mtime_ns],
               "args": self.args, "init_commands": db.init_commands, "init_lua": db.init_lua,
               "preload": [preload.tool, preload.arguments] if preload else None,
               "tool_version": self.tool_version, "keyspacelen": db.keyspacelen}
        return hashlib.sha256(json.dumps(doc, sort_keys=True).encode()).hexdigest()[:32]


def not_snapshotted(db: DbConfig, topology: Topology, args: list[str], launcher: str) -> str:
    """Why this counted run writes its dataset itself ('' when a snapshot may hold it)."""
    if not (db.preload_tool or db.init_lua):
        return NOTHING
    reasons = [
        (topology.node_count != 1 or topology.is_cluster,
         f"{topology.name}: replicas and clusters get their dataset their own way"),
        (launcher != "process", f"the {launcher} launcher's server files are not this host's"),
        (bool(db.dataset), "the suite starts from its own RDB"),
        (db.rdb_checks is not None or db.wait_for_bgsave, "the suite measures a save"),
        (db.auth is not None or db.auth_at_start is not None, "the suite sets credentials"),
        (_appendonly(args), "an AOF server loads its AOF, not an RDB"),
    ]
    return next((why for hit, why in reasons if hit), "")


def _appendonly(args: list[str]) -> bool:
    return any(a.lstrip("-").lower() == "appendonly" and i + 1 < len(args)
               and args[i + 1].strip("'\"").lower() == "yes" for i, a in enumerate(args))


class SnapshotStore:
    """Snapshots by key in one folder: ``<key>.rdb`` beside ``<key>.json`` (its record, or
    the reason the preload is never snapshotted). Written by rename, so two agents of one host
    making the same snapshot both end with a whole file."""

    def __init__(self, root: Path, limit_bytes: int = LIMIT_BYTES) -> None:
        self.root, self.limit_bytes = root, limit_bytes

    def find(self, key: str) -> CachedDataset | None:
        meta, rdb = self._meta(key), self.root / f"{key}.rdb"
        record = _read_json(meta)
        try:
            if not record or "sha256" not in record or rdb.stat().st_size != record.get("size"):
                return None
            os.utime(rdb)  # used: the last out when the store is pruned
        except FileNotFoundError:  # never made, or pruned by a neighbour just now
            return None
        return CachedDataset(f"preload snapshot {key}", rdb, str(record["sha256"]),
                             int(str(record["size"])))

    def refusal(self, key: str) -> str:
        """The recorded reason this preload is never snapshotted ('' when none)."""
        return str((_read_json(self._meta(key)) or {}).get("refused", ""))

    def refuse(self, key: str, reason: str) -> None:
        self._write_json(key, {"refused": reason})

    def keep(self, key: str, saved: Path, preload_s: float | None) -> CachedDataset:
        """Copy a server's saved RDB in as ``key``'s snapshot (checked, hashed, renamed)."""
        check_rdb(saved, f"snapshot of {key}")
        self.root.mkdir(parents=True, exist_ok=True)
        digest = hashlib.sha256()
        with saved.open("rb") as src, self._temp(key) as dst:
            while chunk := src.read(1 << 20):
                digest.update(chunk)
                dst.write(chunk)
        tmp = Path(dst.name)
        size = tmp.stat().st_size
        os.replace(tmp, self.root / f"{key}.rdb")
        self._write_json(key, {"sha256": digest.hexdigest(), "size": size,
                               "preload_s": preload_s, "made": time.time()})
        self._prune()
        found = self.find(key)
        if found is None:
            raise DatasetError(f"preload snapshot {key}: not readable after it was written")
        return found

    def _meta(self, key: str) -> Path:
        return self.root / f"{key}.json"

    def _write_json(self, key: str, doc: dict[str, object]) -> None:
        self.root.mkdir(parents=True, exist_ok=True)
        with self._temp(key) as dst:
            dst.write(json.dumps(doc).encode())
        os.replace(dst.name, self._meta(key))

    def _temp(self, key: str) -> IO[bytes]:
        """A file of its own for one write in progress: a name no other process or thread of
        this host picks (two count lanes of one agent may write one key at once), and one
        neither ``*.rdb`` nor ``*.json``, so a pruning neighbour never takes it for a
        snapshot."""
        # the caller closes it (``with``); it outlives this function on purpose
        temp = tempfile.NamedTemporaryFile(dir=self.root, prefix=f".{key}.",  # noqa: SIM115
                                           suffix=".part", delete=False)
        os.fchmod(temp.fileno(), 0o644)  # as open() would have made it: a dataset, no secret
        return temp

    def _prune(self) -> None:
        """Oldest used first out until the store is under its limit. Other agents of the
        host write, use and prune the same folder meanwhile: a snapshot gone between the
        listing and its ``stat`` is theirs to have removed, not an error of this run."""
        sizes = []
        for rdb in self.root.glob("[!.]*.rdb"):
            with contextlib.suppress(FileNotFoundError):
                st = rdb.stat()
                sizes.append((st.st_mtime, st.st_size, rdb))
        total = 0
        for _, size, rdb in sorted(sizes, key=lambda t: t[0], reverse=True):
            total += size
            if total > self.limit_bytes:
                rdb.unlink(missing_ok=True)
                self._meta(rdb.stem).unlink(missing_ok=True)


def _read_json(path: Path) -> dict[str, object] | None:
    try:
        doc = json.loads(path.read_text())
    except (OSError, ValueError):
        return None
    return doc if isinstance(doc, dict) else None


def save(client: redis.Redis, store: SnapshotStore, key: str,
         preload_s: float | None) -> CachedDataset | None:
    """SAVE the prepared scratch server and keep its RDB as ``key``; None (and the reason
    recorded) when the dataset has keys with a TTL: a load after they expire drops them."""
    expiring = sum(int(v.get("expires", 0)) for k, v in client.info("keyspace").items()
                   if k.startswith("db") and isinstance(v, dict))
    if expiring:
        store.refuse(key, f"the preload leaves {expiring} keys with a TTL")
        return None
    client.execute_command("SAVE")
    folder = str(client.config_get("dir").get("dir") or "")
    name = str(client.config_get("dbfilename").get("dbfilename") or "")
    saved = Path(folder) / name
    if not folder or not name or not saved.is_file():
        raise DatasetError(f"preload snapshot {key}: the server saved no file at {saved}")
    return store.keep(key, saved, preload_s)


Maker = Callable[["SnapshotStore", str], "CachedDataset | None"]


def find_or_make(test: str, request: SnapshotRequest, topology: Topology, launcher: str,
                 store: SnapshotStore, maker: Maker) -> CachedDataset | None:
    """The snapshot this counted run loads (made by ``maker`` when the store has none);
    None, with the reason logged, when the run writes its preload itself."""
    why = not_snapshotted(request.db, topology, request.args, launcher)
    key = "" if why else request.key()
    found = store.find(key) if key else None
    if key and found is None and not store.refusal(key):
        found = maker(store, key)
    if found is None and why != NOTHING:
        log.info("%s: the counted run writes its preload (%s)", test,
                 why or store.refusal(key))
    return found


def make(deployment: Deployment, cpus: list[int], write: Callable[[Node], float | None],
         store: SnapshotStore, key: str) -> CachedDataset | None:
    """The dataset written by ``write`` on the deployment's scratch node (a plain server of
    the same binary and arguments, on the servers' CPUs), saved and kept as ``key``."""
    scratch = deployment.start_scratch(cpus)
    try:
        return save(scratch.client(), store, key, write(scratch))
    finally:
        deployment.stop_scratch()


def prepare_loaded(client: redis.Redis, db: DbConfig) -> None:
    """On a server that loaded the snapshot: the init commands an RDB does not keep
    (``SCRIPT LOAD``, ``CONFIG SET``), then the keyspace check."""
    run_init_commands(client, [c for c in db.init_commands if c and c[0].upper() in RERUN])
    if db.keyspacelen is not None:
        actual = keyspace_size(client)
        if actual != db.keyspacelen:
            raise KeyspaceMismatch(db.keyspacelen, actual)


def store_for(dataset_cache: Path) -> SnapshotStore:
    """The host's store, beside the fetched datasets."""
    return SnapshotStore(dataset_cache / "preload-snapshots")

