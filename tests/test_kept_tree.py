"""A kept build tree is safe for every change: a commit that changes a bundled dependency
(or a Makefile, or the variant's settings) is built from a clean tree, so its binary carries
the new dependency; a commit that changes only code builds incrementally over the tree's
previous commit; the artifact's manifest says which, over what, and why.

A tiny Redis-shaped tree whose Makefile builds ``deps/`` once (only while
``.make-prerequisites`` is missing), exactly as Redis's does; a real broker; the real
builder with ``keep_trees``."""

from __future__ import annotations

import os
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.builder import artifacts, verify
from redis_benchmarks_spec.builder import kept_tree as kt
from redis_benchmarks_spec.builder.compile import unpack
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import BuildVariant, load_variants
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.lab import services
from redis_benchmarks_spec.lab.state import LabState, Service
from tests.pipeline_fixtures import TINY_TOOL_C, commit_all, git, tiny_variant_yaml

VARIANT = "gcc:test-kept"
TOP_MAKEFILE = "all:\n\t$(MAKE) -C src\n"
# Redis's shape: deps are built when .make-prerequisites is missing, and never again
SRC_MAKEFILE = """\
CC ?= cc
all: redis-server redis-cli redis-benchmark
.make-prerequisites:
\t$(MAKE) -C ../deps
\ttouch $@
%.o: %.c .make-prerequisites
\t$(CC) $(REDIS_CFLAGS) -c $< -o $@
redis-server: server.o
\t$(CC) server.o ../deps/jemalloc/libdep.a -o $@
redis-cli: tool.o
\t$(CC) tool.o -o $@
redis-benchmark: tool.o
\t$(CC) tool.o -o $@
"""
DEPS_MAKEFILE = """\
jemalloc/libdep.a: jemalloc/dep.c
\t$(CC) -c jemalloc/dep.c -o jemalloc/dep.o
\tar rcs jemalloc/libdep.a jemalloc/dep.o
"""
DEP_C = 'const char *dep_version(void) { return "jemalloc-VERSION"; }\n'
SERVER_C = """\
#include <stdio.h>
const char *dep_version(void);
int main(void) {
    /* COMMENT */
    printf("Redis server v=7.9.0 sha=00000000:0 malloc=%s bits=64 build=x\\n",
           dep_version());
    return 0;
}
"""


def set_dep(repo: Path, version: str) -> None:
    (repo / "deps" / "jemalloc" / "dep.c").write_text(DEP_C.replace("VERSION", version))
    (repo / "deps" / "jemalloc" / "VERSION").write_text(f"{version}-0-g0\n")


def repo_with_deps(root: Path) -> Path:
    (root / "src").mkdir(parents=True)
    (root / "deps" / "jemalloc").mkdir(parents=True)
    (root / "Makefile").write_text(TOP_MAKEFILE)
    (root / "src" / "Makefile").write_text(SRC_MAKEFILE)
    (root / "src" / "server.c").write_text(SERVER_C)
    (root / "src" / "tool.c").write_text(TINY_TOOL_C)
    (root / "deps" / "Makefile").write_text(DEPS_MAKEFILE)
    set_dep(root, "5.2.1")
    git(root, "init", "-q", "-b", "unstable")
    commit_all(root, "base: jemalloc 5.2.1")
    return root


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"k{uuid.uuid4().hex[:8]}")


def build_in_kept_tree(client: redis.Redis, names: StreamNames, repo: Path, sha: str,
                       tmp_path: Path, check_every: int = 0,
                       ) -> tuple[BuildEvent, dict[bytes, bytes], str]:
    """One request through the builder with kept trees; its event, manifest and the
    ``redis-server --version`` line of the artifact."""
    variants = tmp_path / "variants"
    variants.mkdir(exist_ok=True)
    (variants / "kept.yml").write_text(tiny_variant_yaml(VARIANT, ""))
    publish(client, names.build_requests, BuildRequest(
        org="redis", repo="redis", branch="unstable", sha=sha, commit_time_ms=1,
        source=SourceLocation(SOURCE_GIT, str(repo)), build_variants=[VARIANT]))
    builder = Builder(client, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants), block_ms=200,
        work_dir=tmp_path / "work", keep_trees=tmp_path / "trees", check_every=check_every))
    assert builder.run(max_requests=1) == 1
    rows: Any = client.xrange(names.builds)
    event = BuildEvent.decode(rows[-1][1], rows[-1][0].decode())
    assert event.sha == sha, client.xrange(names.build_failures)
    binaries = unpack(artifacts.fetch(client, event.artifact), tmp_path / "bin" / sha)
    line = subprocess.run([str(binaries["redis-server"]), "--version"], capture_output=True,
                          text=True, timeout=10, check=True).stdout
    return event, client.hgetall(event.artifact.location), line


def test_a_dependency_upgrade_is_built_clean_and_a_code_change_incrementally(  # type: ignore[no-untyped-def]
        redis_server, names, tmp_path) -> None:
    client = redis_server.client()
    repo = repo_with_deps(tmp_path / "origin")
    base = git(repo, "rev-parse", "HEAD")
    _, manifest, line = build_in_kept_tree(client, names, repo, base, tmp_path)
    assert "malloc=jemalloc-5.2.1" in line
    assert manifest[b"build_kind"] == b"clean" and b"no finished build" in \
        manifest[b"build_reason"]

    set_dep(repo, "5.3.0")
    upgrade = commit_all(repo, "Upgrade to jemalloc 5.3.0")
    _, manifest, line = build_in_kept_tree(client, names, repo, upgrade, tmp_path)
    # built over the base's tree, Redis's Makefile would have linked the old libdep.a
    assert "malloc=jemalloc-5.3.0" in line, line
    assert manifest[b"build_kind"] == b"clean" and manifest[b"built_over"] == b""
    assert b"deps/jemalloc/dep.c" in manifest[b"build_reason"], manifest[b"build_reason"]
    assert manifest[b"deps"] == b'{"jemalloc": "5.3.0"}'

    server_c = repo / "src" / "server.c"
    server_c.write_text(server_c.read_text().replace("COMMENT", "a code change"))
    code = commit_all(repo, "a code change")
    _, manifest, line = build_in_kept_tree(client, names, repo, code, tmp_path)
    assert "malloc=jemalloc-5.3.0" in line
    assert manifest[b"build_kind"] == b"incremental", manifest[b"build_reason"]
    assert manifest[b"built_over"] == upgrade.encode()
    log = (tmp_path / "trees" / VARIANT.replace(":", "_") / "build.log").read_text()
    assert "ar rcs" not in log and "server.c" in log  # deps kept, the code recompiled


def test_plan_settings_and_build_inputs(tmp_path: Path) -> None:
    repo = repo_with_deps(tmp_path / "origin")
    base = git(repo, "rev-parse", "HEAD")
    (repo / "README").write_text("docs\n")
    docs = commit_all(repo, "docs")
    (repo / "src" / "Makefile").write_text(SRC_MAKEFILE + "# tweak\n")
    makefile = commit_all(repo, "Makefile")
    settings = {"CC": "gcc", "REDIS_CFLAGS": ""}
    assert kt.plan(repo, None, base, settings).reason == "the tree holds no finished build"
    assert kt.plan(repo, kt.TreeState(base, settings), docs, settings) == \
        kt.TreePlan(True, base)
    over_make = kt.plan(repo, kt.TreeState(docs, settings), makefile, settings)
    assert not over_make.incremental and "src/Makefile" in over_make.reason
    flags = kt.plan(repo, kt.TreeState(base, settings), docs, {**settings, "REDIS_CFLAGS": "-O3"})
    assert not flags.incremental and "REDIS_CFLAGS" in flags.reason
    unknown = kt.plan(repo, kt.TreeState("0" * 40, settings), docs, settings)
    assert not unknown.incremental and "cannot diff" in unknown.reason


def test_state_is_recorded_beside_the_sandboxed_source(tmp_path: Path) -> None:
    """The record lives outside ``src/`` (the only folder the build may write), and a record
    the tree cannot vouch for reads as none."""
    state = kt.TreeState("a" * 40, {"CC": "gcc"})
    kt.save_state(tmp_path, state)
    assert kt.load_state(tmp_path) == state
    (tmp_path / kt.STATE_FILE).write_text("{not json")
    assert kt.load_state(tmp_path) is None
    assert "compiler_version" in kt.settings_of(BuildVariant(VARIANT))


STALE_SERVER_C = """\
#include <stdio.h>
const char *dep_version(void);
int stale_function(int x) { return x * 3 + 1; }
int main(void) {
    printf("Redis server v=7.9.0 sha=00000000:0 malloc=%s bits=64 build=%d\\n",
           dep_version(), stale_function(1));
    return 0;
}
"""


def _stale_object(tree: Path, tmp_path: Path) -> None:
    """An object file in the kept tree that make takes for up to date but is not what the
    source says (what a build over stale output links)."""
    stale = tmp_path / "stale.c"
    stale.write_text(STALE_SERVER_C)
    obj = tree / "src" / "src" / "server.o"
    subprocess.run(["cc", "-c", str(stale), "-o", str(obj)], check=True, timeout=60)
    os.utime(obj, (4_102_444_800, 4_102_444_800))  # 2100: newer than any checkout


def test_an_incremental_build_is_checked_against_a_clean_build(  # type: ignore[no-untyped-def]
        redis_server, names, tmp_path) -> None:
    """One incremental build in N (here every one) is compared function by function with a
    clean build of its commit: a match keeps it; a mismatch publishes the clean build,
    replaces the kept tree and is recorded for ``rbs lab status``."""
    client = redis_server.client()
    repo = repo_with_deps(tmp_path / "origin")
    tree = tmp_path / "trees" / VARIANT.replace(":", "_")
    build_in_kept_tree(client, names, repo, git(repo, "rev-parse", "HEAD"), tmp_path, 1)
    server_c = repo / "src" / "server.c"
    server_c.write_text(server_c.read_text().replace("COMMENT", "change one"))
    good = commit_all(repo, "change one")
    _, manifest, _ = build_in_kept_tree(client, names, repo, good, tmp_path, 1)
    assert manifest[b"build_kind"] == b"incremental"
    assert b"every function matches a clean build" in manifest[b"verification"]

    _stale_object(tree, tmp_path)
    server_c.write_text(server_c.read_text().replace("change one", "change two"))
    bad = commit_all(repo, "change two")
    _, manifest, line = build_in_kept_tree(client, names, repo, bad, tmp_path, 1)
    assert line.endswith("build=x\n"), line  # the clean build was published, not the stale
    assert manifest[b"build_kind"] == b"clean"
    assert b"differ from a clean build (main, stale_function)" in manifest[b"build_reason"]
    [ok, mismatch] = verify.read(tree)
    assert ok.matched and ok.sha == good and not mismatch.matched
    assert mismatch.sha == bad and mismatch.differing == ["main", "stale_function"]
    assert kt.load_state(tree).sha == bad  # type: ignore[union-attr]
    assert not (tree / "src" / "src" / "server.o").stat().st_mtime > 4e9  # the tree replaced
    lab = LabState(root=str(tmp_path), broker_url="", datasink_url="", api_url="",
                   github_url="", source="", prefix="", platforms={}, suites_dir="",
                   services=[Service("builder", 1, ["rbs", "builder", "--keep-trees",
                                                    str(tmp_path / "trees")], "")])
    status = services.kept_tree_checks(lab)
    assert status[-1].startswith(f"kept tree {tree.name}: last check MISMATCH {bad[:12]}"), status
    assert "stale_function" in status[-1] and "tree dropped" in status[-1]


def test_a_mismatch_names_the_builds_made_since_the_last_good_check(  # type: ignore[no-untyped-def]
        redis_server, names, tmp_path) -> None:
    """With one build in two checked, a stale object that entered before an unchecked build
    is caught at the next check, and the unchecked build is named as suspect."""
    client = redis_server.client()
    repo = repo_with_deps(tmp_path / "origin")
    tree = tmp_path / "trees" / VARIANT.replace(":", "_")
    build_in_kept_tree(client, names, repo, git(repo, "rev-parse", "HEAD"), tmp_path, 2)
    _stale_object(tree, tmp_path)
    server_c = repo / "src" / "server.c"
    shas = []
    for n in (1, 2):
        server_c.write_text(server_c.read_text().replace("COMMENT", f"COMMENT {n}"))
        shas.append(commit_all(repo, f"change {n}"))
        _, manifest, _ = build_in_kept_tree(client, names, repo, shas[-1], tmp_path, 2)
        if n == 1:  # unchecked: the stale object went out
            assert manifest[b"build_kind"] == b"incremental" and manifest[b"verification"] == b""
            assert kt.load_state(tree).unchecked == [shas[0]]  # type: ignore[union-attr]
    [mismatch] = verify.read(tree)
    assert not mismatch.matched and mismatch.sha == shas[1] and mismatch.suspect == [shas[0]]
    assert manifest[b"build_kind"] == b"clean" and shas[0][:12].encode() in \
        manifest[b"build_reason"]
    assert kt.load_state(tree).unchecked == []  # type: ignore[union-attr]


def test_a_copied_tree_stays_incremental(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """A kept tree copied or restored elsewhere (new inodes: its index's stat data no longer
    matches) rebuilds only what the next commit changes, not every file."""
    import shutil

    client = redis_server.client()
    repo = repo_with_deps(tmp_path / "origin")
    build_in_kept_tree(client, names, repo, git(repo, "rev-parse", "HEAD"), tmp_path)
    trees = tmp_path / "trees"
    shutil.copytree(trees, tmp_path / "copy", symlinks=True)
    shutil.rmtree(trees)
    (tmp_path / "copy").rename(trees)
    (repo / "src" / "tool.c").write_text("int main(void) { return 1; }\n")
    sha = commit_all(repo, "a change to the tools only")
    _, manifest, _ = build_in_kept_tree(client, names, repo, sha, tmp_path)
    assert manifest[b"build_kind"] == b"incremental"
    log = (trees / VARIANT.replace(":", "_") / "build.log").read_text()
    assert "tool.c" in log and "server.c" not in log, log
