"""Issue 63, item 1: a build of ``rbs run --comparison-commit`` (and ``rbs bisect --local``)
says what make is doing while it runs and how long it took, and a nearby commit builds over
the kept work tree, as honestly as the lab's builder: a commit that changes ``deps/`` builds
from clean and links the new library, a code change recompiles one object file.

A tiny Redis-shaped repository whose Makefile builds ``deps/`` once, as Redis's does
(``tests/test_kept_tree.py``), built for real by the builder's compile step in its sandbox.
"""

from __future__ import annotations

import argparse
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from redis_benchmarks_spec.builder import kept_tree
from redis_benchmarks_spec.builder.commit_builds import CommitBuilds
from redis_benchmarks_spec.builder.make_progress import HEARTBEAT_S, MakePhase
from redis_benchmarks_spec.builder.variants import BuildVariant, load_variants
from redis_benchmarks_spec.cli.run_commits import CommitPlan, CommitSide, build_commits
from tests.pipeline_fixtures import commit_all, tiny_variant_yaml
from tests.test_kept_tree import SERVER_C, SRC_MAKEFILE, repo_with_deps, set_dep

VARIANT = "gcc:test-commit-builds"
# deps/ takes a while (as jemalloc's does), so the build outlives a heartbeat
SLOW_DEPS_MAKEFILE = """\
jemalloc/libdep.a: jemalloc/dep.c
\tsleep {seconds}
\t$(CC) -c jemalloc/dep.c -o jemalloc/dep.o
\tar rcs jemalloc/libdep.a jemalloc/dep.o
"""
# and the link is followed by a pause, so the watch sees it
SLOW_LINK = "\t$(CC) server.o ../deps/jemalloc/libdep.a -o $@\n"


@pytest.fixture(name="variant")
def variant_fixture(tmp_path: Path) -> BuildVariant:
    folder = tmp_path / "variants"
    folder.mkdir()
    (folder / "v.yml").write_text(tiny_variant_yaml(VARIANT, "-O1"))
    return load_variants(folder)[VARIANT]


def _version(binary: Path) -> str:
    return subprocess.run([str(binary), "--version"], capture_output=True, text=True,
                          timeout=10, check=True).stdout


def _compiled(log: Path) -> list[str]:
    """The source files the build log shows compiled."""
    phase = MakePhase(log.parent)
    names = []
    for line in log.read_text().splitlines():
        before = phase.compiled
        phase.feed(line + "\n")
        if phase.compiled > before:
            names.append(phase.last)
    return names


def test_a_code_change_builds_over_the_tree_and_a_deps_change_from_clean(
        tmp_path: Path, variant: BuildVariant) -> None:
    repo = repo_with_deps(tmp_path / "repo")
    base = commit_all(repo, "base")
    (repo / "src" / "server.c").write_text(SERVER_C.replace("COMMENT", "a code change"))
    code = commit_all(repo, "a code change")
    set_dep(repo, "5.3.0")
    upgrade = commit_all(repo, "jemalloc 5.3.0")
    builds = CommitBuilds(repo, variant, tmp_path / "builds")

    first = builds.server(base)
    assert (first.kind, first.reason) == (kept_tree.CLEAN, "the tree holds no finished build")
    assert "malloc=jemalloc-5.2.1" in _version(first.binary)

    # one object file and a link, over the base's tree
    nearby = builds.server(code)
    assert (nearby.kind, nearby.built_over) == (kept_tree.INCREMENTAL, base)
    assert nearby.how() == f"incremental over {base[:12]}"
    assert _compiled(builds.log_path(code)) == ["server.c"]

    # Redis's Makefile would link the old library over that tree: the rule builds it clean
    upgraded = builds.server(upgrade)
    assert upgraded.kind == kept_tree.CLEAN
    assert "the change touches build inputs: deps/jemalloc/" in upgraded.reason
    assert "malloc=jemalloc-5.3.0" in _version(upgraded.binary)
    assert "dep.c" in _compiled(builds.log_path(upgrade))
    # each artifact is its commit: the earlier binaries are untouched
    assert "malloc=jemalloc-5.2.1" in _version(nearby.binary)
    assert builds.server(code).cached


def test_a_build_that_did_not_finish_is_followed_by_a_clean_one(
        tmp_path: Path, variant: BuildVariant) -> None:
    repo = repo_with_deps(tmp_path / "repo")
    base = commit_all(repo, "base")
    (repo / "src" / "server.c").write_text(SERVER_C.replace("COMMENT", "next"))
    code = commit_all(repo, "next")
    builds = CommitBuilds(repo, variant, tmp_path / "builds")
    builds.server(base)
    (builds.directory / kept_tree.MARKER).write_text(code)  # as a killed build leaves it
    again = builds.server(code)
    assert again.kind == kept_tree.CLEAN
    assert again.reason == "the tree's last build did not finish"
    assert "dep.c" in _compiled(builds.log_path(code))
    assert not (builds.directory / kept_tree.MARKER).exists()


def _plan(builds: CommitBuilds, base: str, head: str) -> CommitPlan:
    return CommitPlan(builds, CommitSide("baseline", base[:12], base, "base"),
                      CommitSide("comparison", head[:12], head, "head"))


def test_each_build_says_it_starts_what_make_does_and_how_long_it_took(
        tmp_path: Path, variant: BuildVariant) -> None:
    repo = repo_with_deps(tmp_path / "repo")
    seconds = int(HEARTBEAT_S) + 2
    (repo / "deps" / "Makefile").write_text(SLOW_DEPS_MAKEFILE.format(seconds=seconds))
    (repo / "src" / "Makefile").write_text(SRC_MAKEFILE.replace(SLOW_LINK,
                                                                SLOW_LINK + "\tsleep 3\n"))
    base = commit_all(repo, "base, slow deps")
    (repo / "src" / "server.c").write_text(SERVER_C.replace("COMMENT", "head"))
    head = commit_all(repo, "head")
    builds = CommitBuilds(repo, variant, tmp_path / "builds")
    console = Console(record=True, width=100)
    args = argparse.Namespace()
    build_commits(console, args, _plan(builds, base, head))
    text = console.export_text()
    lines = text.splitlines()
    assert f"building baseline {base[:12]} (base)" in text
    assert f"building comparison {head[:12]} (head)" in text
    # while make ran: its phase (deps, then the link), with the seconds since it started
    progress = [line for line in lines if line.startswith(f"  baseline {base[:12]}: ")]
    assert any(" s, deps: " in line for line in progress), text
    assert any(": linking " in line and "redis-server" in line for line in progress), text
    elapsed = [int(line.split(": ")[1].split(" s,")[0]) for line in progress]
    assert elapsed == sorted(elapsed) and max(elapsed) >= seconds - 1, text
    # a heartbeat: no silence of much more than HEARTBEAT_S while make runs
    gaps = [b - a for a, b in zip([0, *elapsed], elapsed)]
    assert max(gaps) <= HEARTBEAT_S + 1, text
    done = next(line for line in lines if line.startswith(f"baseline {base[:12]}: built in"))
    took = int(done.split("built in ")[1].split(" s")[0])
    assert seconds <= took <= seconds + 33
    assert "(clean: the tree holds no finished build)" in done
    assert f"comparison {head[:12]}: built in" in text
    assert f"(incremental over {base[:12]})" in text
    assert args.baseline_server.endswith("/redis-server")
    # again: both cached, nothing built, nothing to follow
    console = Console(record=True, width=100)
    build_commits(console, argparse.Namespace(), _plan(builds, base, head))
    again = console.export_text()
    assert again.count("cached, no build") == 2 and "building" not in again


def test_the_phase_of_a_real_make_log_of_redis() -> None:
    # lines as Redis's make writes them with V=1 (deps, configure, src, the link)
    root = Path("/b/tree")
    phase = MakePhase(root)
    log = (
        "make[1]: Entering directory '/b/tree/src'\n"
        "make[2]: Entering directory '/b/tree/deps'\n"
        "make[3]: Entering directory '/b/tree/deps/jemalloc'\n"
        "checking for xsltproc... false\n")
    phase.feed(log[:37])  # a line cut anywhere
    phase.feed(log[37:])
    assert phase.describe() == "deps/jemalloc: configure"
    phase.feed("gcc -std=gnu11 -Wall -O3 -c -o src/arena.o src/arena.c\n")
    assert phase.describe() == "deps/jemalloc: 1 file(s) compiled (last arena.c)"
    phase.feed("make[3]: Leaving directory '/b/tree/deps/jemalloc'\n"
               "make[2]: Leaving directory '/b/tree/deps'\n"
               "cc -pedantic -DREDIS_STATIC='' -std=c11 -O2 -MMD -o t_set.o -c t_set.c\n")
    assert phase.describe() == "src: 2 file(s) compiled (last t_set.c)"
    phase.feed("cc -g -ggdb -rdynamic -o redis-server adlist.o t_set.o ../deps/lua/src/liblua.a"
               " -lm -ldl\n")
    assert phase.describe() == "src: linking redis-server"
    phase.feed("cc -g -ggdb -rdynamic -o redis-cli anet.o redis-cli.o -lm\n")
    assert phase.describe() == "src: linking redis-server, redis-cli"  # side by side


# Redis's own top Makefile: every target is made in src/
REDIS_TOP_MAKEFILE = "default: all\n\n.DEFAULT:\n\tcd src && $(MAKE) $@\n"


def test_a_redis_tree_builds_the_server_alone(tmp_path: Path, variant: BuildVariant) -> None:
    # redis-cli and redis-benchmark are links of their own (-flto: tens of seconds each on
    # 2 cores) that the A/B never runs; another tree builds its default target
    plain = repo_with_deps(tmp_path / "plain")
    plain_sha = commit_all(plain, "a tree of another shape")
    builds = CommitBuilds(plain, variant, tmp_path / "plain-builds")
    builds.server(plain_sha)
    assert (builds.tree / "src" / "redis-cli").is_file()

    repo = repo_with_deps(tmp_path / "repo")
    (repo / "Makefile").write_text(REDIS_TOP_MAKEFILE)
    (repo / "src" / "Makefile").write_text("REDIS_SERVER_NAME=redis-server$(PROG_SUFFIX)\n" +
                                           SRC_MAKEFILE)
    sha = commit_all(repo, "Redis's Makefiles")
    builds = CommitBuilds(repo, variant, tmp_path / "builds")
    built = builds.server(sha)
    assert "malloc=jemalloc-5.2.1" in _version(built.binary)
    assert not (builds.tree / "src" / "redis-cli").exists()
    assert not (builds.tree / "src" / "redis-benchmark").exists()
    assert builds.log_path(sha).read_text().splitlines()[0].endswith(" redis-server")
