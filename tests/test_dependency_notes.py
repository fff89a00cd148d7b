"""The PR comment and the alerts name a dependency change as ``rbs compare`` does: each
side's binary is read from its stored runs (inputs/side_binaries.py) and worded by the one
function ``results.binary.change_notes`` ("dependency changed: jemalloc 5.2.1 → 5.3.0").

The binary record is the one the agent writes: ``results.binary.from_info`` over the INFO of
a real redis-server (tests/conftest.py ``redis_server``) and an artifact's dependency list.
Its allocator's version is then **edited** per side (jemalloc 5.2.1 on the base, 5.3.0 on
the head), as the jemalloc upgrade's two binaries would report it: the installed server is
one binary. The runs are pushed to the session's real redis-stack datasink; the alert goes
through the real confirmer to the lab's GitHub stand-in and a local webhook receiver."""

from __future__ import annotations

import dataclasses
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig
from redis_benchmarks_spec.analysis.report import markdown_header
from redis_benchmarks_spec.datasink import keys, suspect_marks
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.notify.watch_confirm import step
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results import binary
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    METRICS,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.test_watch_agent import sha
from tests.test_watch_alert import LabReruns, context, result, targets_fixture  # noqa: F401

NOTE = "dependency changed: jemalloc 5.2.1 → 5.3.0"
ARTIFACT_DEPS = {"hiredis": "1.0.3", "lua": "5.1.5"}


@pytest.fixture(name="served")
def served_fixture(redis_server: Any) -> binary.ServerBinary:
    """The binary record of the real redis-server, as the agent records it."""
    info = redis_server.client().info("all")
    found = binary.from_info(info, ARTIFACT_DEPS)
    assert found.redis_version and found.redis_build_id and found.mem_allocator
    return found


def _built_with(served: binary.ServerBinary, jemalloc: str) -> binary.ServerBinary:
    """``served`` as a binary built with ``jemalloc`` would report it (edited, see above)."""
    return dataclasses.replace(served, mem_allocator=f"jemalloc-{jemalloc}",
                               dependencies={**served.dependencies, "jemalloc": jemalloc})


def _pr(client: redis.Redis, head_jemalloc: str,
        served: binary.ServerBinary) -> pr_compare.PlatformComparison:
    """A pull request whose base commit ran 3 times with jemalloc 5.2.1 and head 3 times
    with ``head_jemalloc``, compared as the lab's PR comment compares them."""
    base, head = "b" * 40, "f" * 40
    runs = [dataclasses.replace(make_result(n, hash=base), binary=_built_with(served, "5.2.1"))
            for n in range(3)]
    runs += [dataclasses.replace(make_result(10 + n, branch="feature", hash=head, version=None),
                                 binary=_built_with(served, head_jemalloc)) for n in range(3)]
    assert push_results(client, runs).pushed
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis",
                       branch="feature", sha=head, commit_time_ms=0,
                       build_variant=BUILD_VARIANT, built_at_ms=runs[3].start_ms - 1,
                       artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                       redis_version="7.0.15")
    info = PrInfo("redis", "redis", 1, head, "feature", "unstable", base)
    return pr_compare.compare_platform(client, event, "icelake-2s", info,
                                       pr_compare.PrCompareOptions(metric=METRICS[0]))


def test_the_pr_comment_names_the_dependency_the_sides_ran_at_different_versions(
        client: redis.Redis, served: binary.ServerBinary) -> None:
    found = _pr(client, "5.3.0", served)
    ctx = found.report.context
    assert ctx is not None and found.baseline_label == f"hash {'b' * 40}"
    assert ctx.baseline.dependencies["jemalloc"] == "5.2.1"
    assert ctx.comparison.dependencies == {**ARTIFACT_DEPS, "jemalloc": "5.3.0"}
    assert ctx.dependency_changes == ["jemalloc 5.2.1 → 5.3.0"]
    # the header both forms of the comment render (notify/pr_body.py, pr_compact.py)
    assert f"> {NOTE}" in markdown_header(ctx)


def test_the_pr_comment_says_nothing_when_the_dependencies_agree(
        client: redis.Redis, served: binary.ServerBinary) -> None:
    ctx = _pr(client, "5.2.1", served).report.context
    assert ctx is not None and ctx.dependency_changes == []
    assert "dependency changed" not in markdown_header(ctx)


class BinaryReruns(LabReruns):
    """The confirmer's re-runs, each run recording the binary of its commit."""

    def __init__(self, client: redis.Redis, levels: dict[str, float], profiles: Path,
                 binaries: dict[str, binary.ServerBinary]) -> None:
        super().__init__(client, levels, profiles)
        self.binaries = binaries

    def request(self, commit: str, tests: list[str], platforms: list[str]) -> str:
        again = sum(1 for c, _t, _p in self.asked if c == commit)
        self.asked.append((commit, tests, platforms))
        n = int(commit, 16) - 1
        for k, platform in enumerate(platforms):
            for test in tests:
                r = result(100 + 1000 * again + 10 * n + k, self.levels[commit], platform,
                           test, self.profiles, commit)
                clean = dataclasses.replace(r.context, build={"build_kind": "clean"})
                push_results(self.client, [dataclasses.replace(
                    r, binary=self.binaries[commit], context=clean)])
        return f"{commit}@0-1"


def _with_binary(r: RunResult, served: binary.ServerBinary, step_at: int) -> RunResult:
    n = int(r.context.git.hash or "0", 16) - 1
    return dataclasses.replace(r, binary=_built_with(served, "5.3.0" if n >= step_at
                                                     else "5.2.1"))


def test_the_alert_names_the_dependency_change(client: redis.Redis, tmp_path: Path,
                                               targets: Any,
                                               served: binary.ServerBinary) -> None:
    where_to, receiver, issues = targets
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n in range(12):  # the step (the jemalloc upgrade) at commit sha(11)
        r = _with_binary(result(n, 10_400.0 if n >= 10 else 10_000.0, "lab-a", "t-get",
                                tmp_path / "p"), served, 10)
        push_results(client, [r])
        watch.arrived([r])
    reruns = BinaryReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p",
                          {sha(10): _built_with(served, "5.2.1"),
                           sha(11): _built_with(served, "5.3.0")})
    [alert] = [d.alert for d in step(context(client, reruns, where_to)) if d.alert]
    assert alert.dependency_changes == ["jemalloc 5.2.1 → 5.3.0"]
    assert f"- {NOTE}" in (issues / "1.md").read_text()
    assert NOTE in receiver.posts[0]["text"]
    assert receiver.posts[0]["rbs"]["dependency_changes"] == ["jemalloc 5.2.1 → 5.3.0"]


def test_rbs_compare_from_the_datasink_names_the_dependency_change(
        client: redis.Redis, served: binary.ServerBinary, datasink: Any,
        capsys: pytest.CaptureFixture[str]) -> None:
    _pr(client, "5.3.0", served)  # the base's and the head's runs, pushed
    for fmt in ("table", "markdown"):
        assert rbs_in_process(["compare", "--baseline-hash", "b" * 40, "--comparison-hash",
                               "f" * 40, "--datasink", datasink.url, "--metric", METRICS[0],
                               "--format", fmt]) == 0
        assert NOTE in capsys.readouterr().out


def test_the_alert_reads_the_good_build_not_the_suspect_one(client: redis.Redis,
                                                          tmp_path: Path, targets: Any,
                                                          served: binary.ServerBinary) -> None:
    """The jemalloc upgrade first built over the previous tree linked the old jemalloc
    (what issue 44 found): its runs say 5.2.1 and are marked suspect when the check finds
    the tree bad; the re-runs on the clean build say 5.3.0. The alert reads the good runs."""
    where_to, _receiver, issues = targets
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n in range(12):
        r = result(n, 10_400.0 if n >= 10 else 10_000.0, "lab-a", "t-get", tmp_path / "p")
        r = dataclasses.replace(r, binary=_built_with(served, "5.2.1"), context=dataclasses.replace(
            r.context, build={"build_kind": "incremental"}))
        push_results(client, [r])
        watch.arrived([r])
    marks = [suspect_marks.SuspectMark(sha(n + 1), r.context.build_variant, "hiredis differs",
                                       "c" * 40) for n in (10, 11)]
    assert suspect_marks.mark(client, keys.Scope("ci", "redis", "redis"), marks) == 2
    reruns = BinaryReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p",
                          {sha(10): _built_with(served, "5.2.1"),
                           sha(11): _built_with(served, "5.3.0")})
    [alert] = [d.alert for d in step(context(client, reruns, where_to)) if d.alert]
    assert alert.dependency_changes == ["jemalloc 5.2.1 → 5.3.0"]
    assert f"- {NOTE}" in (issues / "1.md").read_text()
