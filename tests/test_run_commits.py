"""Issue 45, item 1: ``rbs run --baseline-commit A --comparison-commit B --source REPO``.

Commit names are checked before git sees them; the merge base with ``unstable`` is A's
default; both commits of a real pull request of the vendored Redis history (#11552,
GEODIST, also benchmarks/real_prs.py's and tests/test_redis_history.py's) are built with
the builder's compile step, kept in ``.cache/commit-builds`` (``$RBS_TEST_CACHE/commit-builds``)
by commit and flags (a CI run builds them once), and A/B'd with each side filed under its commit.
"""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from benchmarks import redis_history as history
from redis_benchmarks_spec.builder.commit_builds import (
    CommitBuildError,
    CommitBuilds,
    commit_ref_problem,
)
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.runner.ab_files import write_sides
from tests.cli import rbs, rbs_in_process
from tests.report_fixtures import BASE_SHA, COMP_SHA, write_side

#: PR #11552 (Speedup GEODIST): its merge commit and its parent
MERGE = "61c85a2b2081dffaf45eb8c6b7754b8d9a80c60d"
PARENT = "155acef51ac7826ed294a4b61d891f1c7a9a40ac"
BUILDS = history.cache_root() / "commit-builds"  # $RBS_TEST_CACHE when given
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
TEST = "redis-benchmark-1Kkeys-geo-geodist"


@pytest.mark.parametrize("name", ["61c85a2b", MERGE, "HEAD", "HEAD~1", "unstable", "v7.2.4",
                                  "feature/geo-speedup", f"{MERGE}^", "unstable~2^2"])
def test_commit_names_people_type_are_taken(name: str) -> None:
    assert commit_ref_problem(name) is None


@pytest.mark.parametrize("name", ["", "-q", "--upload-pack=x", "x;rm -rf /", "$(id)",
                                  "a b", "a..b", "HEAD@{1}", "'q'", "~1"])
def test_commit_names_that_could_be_read_as_more_are_refused(name: str) -> None:
    assert commit_ref_problem(name) is not None


def test_a_bad_commit_name_is_refused_before_git(tmp_path: Path) -> None:
    done = rbs("run", "--test", TEST, "--comparison-commit", "x;id", "--source", str(tmp_path),
               "--dry-run", timeout=60)
    assert done.returncode == 2 and "--comparison-commit 'x;id': not a commit name" \
        in done.stderr, done.stderr
    missing = rbs("run", "--test", TEST, "--comparison-commit", "HEAD", "--dry-run",
                  timeout=60)
    assert missing.returncode == 2 and "--source" in missing.stderr, missing.stderr


@pytest.fixture(name="repo", scope="module")
def repo_fixture() -> Path:
    try:
        return history.bare_repo()
    except history.HistoryError as exc:
        pytest.skip(str(exc))


def test_commits_resolve_and_the_baseline_defaults_to_the_merge_base(repo: Path) -> None:
    builds = CommitBuilds(repo, load_variants()[VARIANT], BUILDS)
    assert builds.resolve(MERGE[:10]) == MERGE
    assert builds.resolve(f"{MERGE}^") == PARENT
    with pytest.raises(CommitBuildError, match="no such commit"):
        builds.resolve("0123456789abcdef")
    dry = rbs("run", "--test", TEST, "--comparison-commit", MERGE[:12], "--base-branch",
              "unstable", "--source", str(repo), "--build-dir", str(BUILDS), "--dry-run",
              timeout=120)
    assert dry.returncode == 0, dry.stderr
    # on unstable already: its merge base is itself, and the run says how to A/B its change
    assert f"baseline: commit {MERGE[:12]} (merge base with unstable) Speedup GEODIST" \
        in dry.stderr, dry.stderr
    assert f"--baseline-commit {MERGE[:12]}^" in dry.stderr
    assert "x 2 sides (A/B) = 20 run(s)" in dry.stdout


def _git_of(results: Path, side: str) -> set[str | None]:
    docs = [RunResult.read(p) for p in find_result_files(results / side)]
    assert docs, f"no results under {results / side}"
    return {d.context.git.hash for d in docs}


@pytest.mark.slow
def test_two_commits_built_cached_and_compared(repo: Path, tmp_path: Path) -> None:
    argv = ["run", "--test", TEST, "--baseline-commit", f"{MERGE[:12]}^",
            "--comparison-commit", MERGE[:12], "--source", str(repo),
            "--build-dir", str(BUILDS), "--repetitions", "2", "--test-time", "1",
            "--no-datasink", "--format", "json"]
    first = rbs(*argv, "--results-dir", str(tmp_path / "one"), timeout=1800)
    assert first.returncode == 0, first.stderr[-3000:]
    for sha in (PARENT, MERGE):  # a progress line per side: built, or found in the cache
        assert f"{sha[:12]}: built in" in first.stderr or \
            f"{sha[:12]}: cached, no build" in first.stderr, first.stderr[-3000:]
    report = json.loads(first.stdout)
    header = report["context"]
    assert header["baseline"]["label"].startswith(f"commit {PARENT[:12]} ({MERGE[:12]}^) ")
    assert "Speedup GEODIST" in header["comparison"]["label"]
    assert header["baseline"]["commits"] == [PARENT]
    assert header["comparison"]["commits"] == [MERGE]
    session = next((tmp_path / "one").iterdir())
    assert _git_of(session, "baseline") == {PARENT}
    assert _git_of(session, "comparison") == {MERGE}
    assert "Speedup GEODIST" in (session / "sides.json").read_text()  # for later reports
    # the second time, both builds come from the cache: no compile at all
    again = rbs(*argv, "--results-dir", str(tmp_path / "two"), timeout=600)
    assert again.returncode == 0, again.stderr[-3000:]
    assert again.stderr.count("cached, no build") == 2 and "building" not in again.stderr
    binary = BUILDS / "bin"
    assert len([p for p in binary.iterdir() if p.name.startswith((PARENT, MERGE))]) >= 2
    version = subprocess.run([str(next(binary.glob(f"{MERGE}-*")) / "redis-server"),
                              "--version"], capture_output=True, text=True, timeout=30,
                             check=True)
    assert f"sha={MERGE[:8]}" in version.stdout


def _git(repo: Path, *args: str) -> str:
    env = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "HOME": str(repo.parent), "PATH": "/usr/bin:/bin"}
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=60, env=env).stdout.strip()


def test_a_clone_s_remote_branches_resolve_and_reach_the_work_tree(tmp_path: Path) -> None:
    """A developer's clone: unstable and the feature branch exist only as origin/...; the
    merge base is found through origin/unstable and the feature's commit is in the tree."""
    upstream = tmp_path / "upstream"
    upstream.mkdir()
    _git(upstream, "init", "-q", "-b", "unstable")
    (upstream / "a.txt").write_text("a\n")
    _git(upstream, "add", "a.txt")
    _git(upstream, "commit", "-q", "-m", "base commit")
    base = _git(upstream, "rev-parse", "HEAD")
    _git(upstream, "checkout", "-q", "-b", "feature")
    (upstream / "a.txt").write_text("b\n")
    _git(upstream, "commit", "-q", "-am", "the feature")
    feature = _git(upstream, "rev-parse", "HEAD")
    _git(upstream, "checkout", "-q", "unstable")
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--no-checkout", str(upstream), str(clone)],
                   check=True, timeout=60)
    _git(clone, "update-ref", "-d", "refs/heads/unstable")  # only origin/unstable is left
    builds = CommitBuilds(clone, load_variants()[VARIANT], tmp_path / "builds")
    assert builds.resolve("origin/feature") == feature
    tree = builds._tree()
    assert _git(tree, "cat-file", "-t", feature) == "commit"
    dry = rbs("run", "--test", TEST, "--comparison-commit", "origin/feature", "--source",
              str(clone), "--build-dir", str(tmp_path / "builds"), "--dry-run", timeout=120)
    assert dry.returncode == 0, dry.stderr
    assert f"baseline: commit {base[:12]} (merge base with unstable) base commit" in dry.stderr
    assert f"comparison: commit {feature[:12]} (origin/feature) the feature" in dry.stderr


def test_a_later_report_of_the_session_names_both_commits(tmp_path: Path) -> None:
    """The session writes its sides' names (sides.json); ``rbs report`` of the folder names
    both commits and their subjects as the run did."""
    root = tmp_path / "session"
    write_side(root / "baseline", BASE_SHA, "7.2.4", 1.0, runs=3)
    write_side(root / "comparison", COMP_SHA, "7.2.4", 0.9, runs=3)
    labels = (f"commit {BASE_SHA[:12]} (unstable) Improve TLS error handling. (#11563)",
              f"commit {COMP_SHA[:12]} Speedup GEODIST with fixedpoint_d2string (#11552)")
    write_sides(root, labels)
    page = tmp_path / "report.html"
    assert rbs_in_process(["report", str(root), "-o", str(page)]) == 0
    text = page.read_text()
    assert "Improve TLS error handling. (#11563)" in text
    assert "Speedup GEODIST with fixedpoint_d2string (#11552)" in text
