"""Points measured on an artifact found bad are marked: a kept tree's check that finds an
incremental build differing from a clean build names the commits built in that tree since
its last good check; the builder drops their artifacts (a re-run builds them afresh) and
marks them in the datasink (datasink/suspect_marks.py), with a note on the branch's log.
``rbs history`` shows their points SUSPECT, the watch never raises a candidate on them and
rejects one it raised before the mark, and a re-measure after the mark supersedes them.

A real broker (redis-server), the real builder with kept trees over the tiny Redis-shaped
tree of tests/test_kept_tree.py (a stale object file makes the mismatch), the session's
real redis-stack datasink, the real watch; result documents built directly."""

from __future__ import annotations

import dataclasses
import json
import time
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig
from redis_benchmarks_spec.analysis.history import HistoryQuery
from redis_benchmarks_spec.builder import artifacts, verify
from redis_benchmarks_spec.builder import kept_tree as kt
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.datasink import keys, suspect_marks, watch_store
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    ArtifactRef,
    BuildEvent,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.inputs.history import read_history
from redis_benchmarks_spec.lab import services
from redis_benchmarks_spec.lab.state import LabState, Service
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.web.branch_page import branch_view
from redis_benchmarks_spec.web.history_page import history_views
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    METRICS,
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.pipeline_fixtures import commit_all, git, tiny_variant_yaml
from tests.test_kept_tree import VARIANT, _stale_object, repo_with_deps
from tests.test_watch_agent import COUNT, WHERE, sha

SCOPE = keys.Scope("ci", "redis", "redis")


@pytest.fixture(name="names")
def names_fixture() -> StreamNames:
    return StreamNames.with_prefix(f"s{uuid.uuid4().hex[:8]}")
INCREMENTAL = {"build_kind": "incremental", "built_over": "0" * 40}


def _build(broker: redis.Redis, names: StreamNames, repo: Path, commit: str, tmp_path: Path,
           datasink: redis.Redis) -> None:
    """One request through the builder (kept trees, one build in two checked, a local
    cache) whose mismatch hook marks the datasink, as ``rbs builder --datasink`` wires it."""
    variants = tmp_path / "variants"
    variants.mkdir(exist_ok=True)
    (variants / "kept.yml").write_text(tiny_variant_yaml(VARIANT, ""))
    publish(broker, names.build_requests, BuildRequest(
        org="redis", repo="redis", branch="unstable", sha=commit, commit_time_ms=1,
        source=SourceLocation(SOURCE_GIT, str(repo)), build_variants=[VARIANT]))
    builder = Builder(broker, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants), block_ms=200,
        work_dir=tmp_path / "work", keep_trees=tmp_path / "trees", check_every=2,
        cache_dir=tmp_path / "cache"), on_mismatch=suspect_marks.marker(datasink))
    assert builder.run(max_requests=1) == 1


def _artifact_key(names: StreamNames, commit: str, tmp_path: Path) -> str:
    variant = load_variants(tmp_path / "variants")[VARIANT]
    return artifacts.artifact_key(names.prefix, commit, VARIANT, variant.make_env())


def test_a_mismatch_marks_the_commits_built_on_the_bad_tree(  # type: ignore[no-untyped-def]
        redis_server, names, client: redis.Redis, datasink: Any, tmp_path: Path) -> None:
    broker = redis_server.client()
    repo = repo_with_deps(tmp_path / "origin")
    tree = tmp_path / "trees" / VARIANT.replace(":", "_")
    _build(broker, names, repo, git(repo, "rev-parse", "HEAD"), tmp_path, client)
    _stale_object(tree, tmp_path)
    server_c = repo / "src" / "server.c"
    shas = []
    for n in (1, 2):
        server_c.write_text(server_c.read_text().replace("COMMENT", f"COMMENT {n}"))
        shas.append(commit_all(repo, f"change {n}"))
        before = int(time.time() * 1000)
        _build(broker, names, repo, shas[-1], tmp_path, client)
        if n == 1:  # published from the stale tree, unchecked: nothing marked yet
            assert broker.exists(_artifact_key(names, shas[0], tmp_path))
            assert list((tmp_path / "cache").glob(f"{shas[0]}-*"))
            assert suspect_marks.read(client, SCOPE, shas) == {}
    [mismatch] = verify.read(tree)
    assert not mismatch.matched and mismatch.suspect == [shas[0]]
    marks = suspect_marks.read(client, SCOPE, shas)
    assert list(marks) == [(shas[0], VARIANT)]  # the checked commit's clean build went out
    mark = marks[(shas[0], VARIANT)]
    assert mark.checked == shas[1] and before <= mark.at_ms <= time.time() * 1000
    assert "differ from a clean build" in mark.reason
    lines = watch_store.log_lines(client, WHERE)
    assert [(x["kind"], x["sha"]) for x in lines] == [(suspect_marks.NOTE_KIND, shas[0])]
    assert VARIANT in lines[0]["text"] and "suspect" in lines[0]["text"]
    # the suspect artifact is gone from the broker and the cache: a re-run rebuilds it
    assert not broker.exists(_artifact_key(names, shas[0], tmp_path))
    assert not list((tmp_path / "cache").glob(f"{shas[0]}-*"))
    lab = LabState(root=str(tmp_path), broker_url="", datasink_url=datasink.url,
                   api_url="", github_url="", source="", prefix="", platforms={},
                   suites_dir="", services=[Service("builder", 1, [
                       "rbs", "builder", "--keep-trees", str(tmp_path / "trees")], "")])
    [status] = services.kept_tree_checks(lab)
    assert status.startswith(f"kept tree {tree.name}: last check MISMATCH {shas[1][:12]}")
    assert status.endswith("; points of 1 of those 1 commit(s) marked suspect in the datasink")
    _build(broker, names, repo, shas[0], tmp_path, client)
    assert kt.load_state(tree).sha == shas[0]  # type: ignore[union-attr]  # built, not reused


def _point(n: int, value: float, build: dict[str, Any], start_ms: int | None = None,
           commit_of: int | None = None) -> RunResult:
    r = make_result(n, test_name="t-get", platform="lab-a",
                    hash=sha((n if commit_of is None else commit_of) + 1))
    ctx = dataclasses.replace(r.context, build=dict(build))
    start = r.start_ms if start_ms is None else start_ms
    return dataclasses.replace(r, run_id=f"{r.run_id}:{start}", context=ctx, start_ms=start,
                               end_ms=start + 5, metrics={COUNT: value})


def _feed(client: redis.Redis, watch: BranchWatch, results: list[RunResult]) -> None:
    for r in results:
        assert push_results(client, [r]).pushed
        watch.arrived([r])


def _mark(client: redis.Redis, runs: range) -> list[str]:
    bad = [sha(n + 1) for n in runs]
    found = [suspect_marks.SuspectMark(s, "gcc:12.2.0-amd64-debian-bookworm-default",
                                       "3 function(s) differ from a clean build", sha(99))
             for s in bad]
    assert suspect_marks.mark(client, SCOPE, found, "unstable") == len(bad)
    return bad


def _open(client: redis.Redis) -> list[watch_store.Candidate]:
    return watch_store.candidates(client, WHERE, "candidate")


def test_suspect_points_raise_nothing_and_a_re_measure_supersedes_them(
        client: redis.Redis, datasink: Any, capsys: pytest.CaptureFixture[str],
        monkeypatch: pytest.MonkeyPatch) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    _feed(client, watch, [_point(n, 1e6, INCREMENTAL) for n in range(12)])
    # three builds of the bad tree measure 4 % more: without a mark, a candidate (control)
    _feed(client, watch, [_point(n, 1.04e6, INCREMENTAL) for n in (12, 13, 14)])
    [raised] = _open(client)
    assert raised.after == sha(13)
    bad = _mark(client, range(12, 15))  # the builder's check finds the tree bad
    assert _open(client) == []  # the candidate on a suspect point is rejected
    assert watch_store.get_candidate(client, WHERE, raised.id).state == "rejected"
    query = HistoryQuery(test="t-get", metric=COUNT, branch="unstable", platform="lab-a",
                         last_n=50)
    points = read_history(client, query).points
    assert [p.commit for p in points if p.suspect] == bad
    assert all("found bad" in p.suspect for p in points if p.suspect)
    # the site's branch page: the commits' notes, and the note's words in the branch's log
    view = branch_view(client, SCOPE, "unstable", "lab-a")
    assert sorted(r.sha for r in view.commits if suspect_marks.NOTE_KIND in r.marks) == bad
    assert sum(x["kind"] == suspect_marks.NOTE_KIND for x in view.log) == 3
    # the site's history page: the point's hover text and the commit's notes
    [chart] = history_views(client, SCOPE, query)
    assert chart.svg.count("SUSPECT (measured on a bad artifact)") == 3
    assert all(any("suspect-artifact" in m for m in chart.marks[c]) for c in bad)
    # the good build re-measured after the mark: its points are not suspect, and the
    # suspect ones never vote, so returning to the old level is no change either
    later = int(time.time() * 1000) + 1_000
    _feed(client, watch, [_point(100 + n, 1e6, {"build_kind": "clean"}, later + n, commit_of=n)
                          for n in (12, 13, 14)])
    _feed(client, watch, [_point(n, 1e6, INCREMENTAL, later + 100 + n) for n in (15, 16, 17)])
    assert _open(client) == []
    points = read_history(client, query).points
    assert len(points) == 21 and [p.commit for p in points if p.suspect] == bad
    assert [p.commit for p in points if later <= p.ts_ms < later + 100] == bad
    monkeypatch.setenv("COLUMNS", "1000")  # a row a line: the table is wider than 250
    assert rbs_in_process(["history", "--test", "t-get", "--metric", COUNT, "--platform",
                           "lab-a", "--datasink", datasink.url, "--last", "50"]) == 0
    rows = [line for line in capsys.readouterr().out.splitlines() if line.count("│") > 5]
    flagged = [i for i, row in enumerate(rows) if "SUSPECT (bad artifact)" in row]
    assert flagged == [12, 13, 14], rows
    assert "SUSPECT " in rows[12] and "found bad" in rows[12]  # the branch log's note


def test_points_marked_before_they_arrive_never_raise_a_candidate(client: redis.Redis) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    _feed(client, watch, [_point(n, 1e6, INCREMENTAL) for n in range(12)])
    _mark(client, range(12, 15))  # marked first: the runs started before the mark
    _feed(client, watch, [_point(n, 1.04e6, INCREMENTAL) for n in (12, 13, 14)])
    assert watch_store.candidates(client, WHERE) == []
    # a clean build's run of a marked commit is never suspect, whenever it ran
    clean = _point(12, 1e6, {"build_kind": "clean"})
    marks = suspect_marks.read(client, SCOPE, [sha(13)])
    assert suspect_marks.suspect_of(clean, marks) is None
    assert suspect_marks.suspect_of(_point(12, 1e6, INCREMENTAL), marks) is not None


def test_compare_and_the_pr_comment_leave_the_suspect_points_out(
        client: redis.Redis, datasink: Any, capsys: pytest.CaptureFixture[str]) -> None:
    """A head commit measured 3 times on a bad artifact (twice the base's ops/sec) and 3
    times after the mark on its clean rebuild: both judge the 3 good points only."""
    base, head = "b" * 40, "f" * 40
    good = [dataclasses.replace(make_result(n, hash=base), start_ms=1_700_000_000_000 + n)
            for n in range(3)]
    bad = [make_result(10 + n, branch="feature", hash=head, version=None) for n in range(3)]
    bad = [dataclasses.replace(r, context=dataclasses.replace(r.context, build=INCREMENTAL),
                               metrics={METRICS[0]: 200_000.0}) for r in bad]
    assert push_results(client, good + bad).pushed
    assert suspect_marks.mark(client, SCOPE, [suspect_marks.SuspectMark(
        head, BUILD_VARIANT, "2 function(s) differ from a clean build", "c" * 40)]) == 1
    later = int(time.time() * 1000) + 1_000
    again = [dataclasses.replace(r, run_id=f"{r.run_id}:again", start_ms=later + i,
                                 end_ms=later + i + 5, metrics={METRICS[0]: 100_001.0},
                                 context=dataclasses.replace(r.context,
                                                             build={"build_kind": "clean"}))
             for i, r in enumerate(bad)]
    assert push_results(client, again).pushed
    note = f"suspect: 3 point(s) of commit {head[:12]} left out"
    assert rbs_in_process(["compare", "--baseline-hash", base, "--comparison-hash", head,
                           "--datasink", datasink.url, "--metric", METRICS[0],
                           "--format", "json"]) == 0
    report = json.loads(capsys.readouterr().out)
    assert [(r["n_baseline"], r["n_comparison"]) for r in report["rows"]] == [(3, 3)]
    assert any(p.startswith(note) for p in report["problems"]), report["problems"]
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis",
                       branch="feature", sha=head, commit_time_ms=0,
                       build_variant=BUILD_VARIANT, built_at_ms=0,
                       artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                       redis_version="7.0.15")
    info = PrInfo("redis", "redis", 1, head, "feature", "unstable", base)
    found = pr_compare.compare_platform(client, event, "icelake-2s", info,
                                        pr_compare.PrCompareOptions(metric=METRICS[0]))
    assert found.samples[TEST_NAME][1] == [100_001.0] * 3
    assert any(p.startswith(note) for p in found.report.problems)
