"""Real history through a kept build tree: the jemalloc 5.3.0 upgrade (0897c8af, its pull
request's base d659c734) built by the builder over the base's kept tree answers ``INFO
memory`` with ``mem_allocator:jemalloc-5.3.0`` (before the kept tree knew build inputs it
answered jemalloc-5.2.1), and its artifact says it was built clean and why.

The builds are the default build variant's at ``make OPTIMIZATION=-O0 CFLAGS=-O0``
(:data:`QUICK`): what the kept tree rebuilds and which jemalloc the binary runs do not depend
on the optimisation level, and without ``-O3``'s link-time optimisation a clean build takes
about a third of the CPU (issue 41: this test's clean head build was the suite's largest
single CPU cost). ``CFLAGS`` is what Redis's deps/Makefile hands jemalloc's configure, which
adds its own ``-O3 -funroll-loops`` only when it is given none: 70 of a clean build's 220
compiles were jemalloc's at -O3. The
base's built tree is kept in ``.cache/kept-tree-history/<variant>/`` (or ``$RBS_TEST_CACHE``'s)
(the first run builds it); every run builds the head over a copy of it. The decision
for the hiredis update (e8c5b66e) and a code-only commit is checked on the real diffs
without building."""

from __future__ import annotations

import shutil
import subprocess
import time
import uuid
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest
import redis

from benchmarks import redis_history as history
from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.builder import kept_tree as kt
from redis_benchmarks_spec.builder.change import build_inputs
from redis_benchmarks_spec.builder.compile import unpack
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames

BASE = "d659c734569be4ed32a270bac2527ccf35418c43"  # parent of the jemalloc 5.3.0 upgrade
HEAD = "0897c8afedc210db5f827bed9d225f24011245eb"  # Upgrade to jemalloc 5.3.0
HIREDIS = "e8c5b66e"  # Update to latest hiredis (#10297)
DEFAULT = "gcc:12.2.0-amd64-debian-bookworm-default"
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-o0"
#: the default variant without optimisation, jemalloc's included (module doc)
_DEFAULT = load_variants()[DEFAULT]
QUICK = replace(_DEFAULT, id=VARIANT,
                env={**_DEFAULT.env, "OPTIMIZATION": "-O0", "CFLAGS": "-O0"})
TREE_NAME = VARIANT.replace(":", "_")
SNAPSHOT = history.CACHE.parent / "kept-tree-history" / TREE_NAME / BASE


def _builder(client: redis.Redis, names: StreamNames, tmp_path: Path) -> Builder:
    return Builder(client, BuilderConfig(
        names=names, consumer="kept", variants={VARIANT: QUICK}, block_ms=200,
        work_dir=tmp_path / "work", keep_trees=tmp_path / "trees", build_timeout_s=1500))


def _build(client: redis.Redis, names: StreamNames, tmp_path: Path, sha: str) -> BuildEvent:
    publish(client, names.build_requests, BuildRequest(
        org="redis", repo="redis", branch="unstable", sha=sha, commit_time_ms=1,
        source=SourceLocation(SOURCE_GIT, str(history.bare_repo())), build_variants=[VARIANT]))
    assert _builder(client, names, tmp_path).run(max_requests=1) == 1
    rows: Any = client.xrange(names.builds)
    assert rows, client.xrange(names.build_failures)
    event = BuildEvent.decode(rows[-1][1], rows[-1][0].decode())
    assert event.sha == sha
    return event


def _kept_base(client: redis.Redis, names: StreamNames, tmp_path: Path) -> None:
    """The base's built tree in ``tmp_path/trees``: copied from the cache, or built (and
    then cached)."""
    tree = tmp_path / "trees" / TREE_NAME
    with history.locked(SNAPSHOT.with_name(f"{BASE}.lock")):
        if not (SNAPSHOT / kt.STATE_FILE).is_file():
            _build(client, names, tmp_path, BASE)
            partial = SNAPSHOT.with_name(f"{BASE}.partial-{uuid.uuid4().hex[:6]}")
            shutil.copytree(tree, partial, symlinks=True)
            shutil.rmtree(SNAPSHOT, ignore_errors=True)
            partial.rename(SNAPSHOT)
            return
        shutil.copytree(SNAPSHOT, tree, symlinks=True)


def _mem_allocator(binary: Path, workdir: Path) -> tuple[str, str]:
    port = free_port()
    proc = subprocess.Popen([str(binary), "--port", str(port), "--bind", "127.0.0.1",
                             "--save", "", "--dir", str(workdir)],
                            stdout=(workdir / "redis.log").open("ab"), stderr=subprocess.STDOUT)
    try:
        client = redis.Redis(port=port, socket_timeout=10)

        def pings() -> bool:
            try:
                return bool(client.ping())
            except redis.ConnectionError:
                return False

        assert wait_for(pings, timeout=10), (workdir / "redis.log").read_text()
        return str(client.info("memory")["mem_allocator"]), str(client.info("server")[
            "redis_git_sha1"])
    finally:
        proc.terminate()
        proc.wait(timeout=10)


@pytest.mark.slow
@pytest.mark.timeout(2400)  # two full builds on a loaded 2-core VM the first time
def test_jemalloc_upgrade_over_the_base_tree_runs_the_new_jemalloc(redis_server,  # type: ignore[no-untyped-def]
                                                                   tmp_path) -> None:
    client = redis_server.client()
    names = StreamNames.with_prefix(f"h{uuid.uuid4().hex[:8]}")
    _kept_base(client, names, tmp_path)
    assert kt.load_state(tmp_path / "trees" / TREE_NAME).sha == BASE  # type: ignore[union-attr]
    start = time.monotonic()
    event = _build(client, names, tmp_path, HEAD)
    seconds = time.monotonic() - start
    manifest = client.hgetall(event.artifact.location)
    assert manifest[b"build_kind"] == b"clean", manifest
    assert b"deps/jemalloc/" in manifest[b"build_reason"]
    assert b'"jemalloc": "5.3.0"' in manifest[b"deps"]
    binaries = unpack(artifacts.fetch(client, event.artifact), tmp_path / "bin")
    allocator, git_sha1 = _mem_allocator(binaries["redis-server"], tmp_path)
    assert allocator == "jemalloc-5.3.0"
    assert git_sha1.zfill(8) == HEAD[:8]
    print(f"head built clean over the base's kept tree in {seconds:.0f} s")


def test_the_real_dependency_updates_are_build_input_changes() -> None:
    repo = history.bare_repo()
    settings = {"CC": "gcc"}
    hiredis = history.full_sha(repo, HIREDIS)
    before = history.full_sha(repo, hiredis + "^")
    found = kt.plan(repo, kt.TreeState(before, settings), hiredis, settings)
    assert not found.incremental and "deps/hiredis/" in found.reason
    found = kt.plan(repo, kt.TreeState(BASE, settings), HEAD, settings)
    assert not found.incremental and "deps/jemalloc/" in found.reason
    # the hiredis update's own parent: a code-only change (no build input) stays incremental
    parent_of_parent = history.full_sha(repo, before + "^")
    assert not build_inputs(kt.changed_files(repo, parent_of_parent, before))
    assert kt.plan(repo, kt.TreeState(parent_of_parent, settings), before, settings) == \
        kt.TreePlan(True, parent_of_parent)
