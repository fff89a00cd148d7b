"""Many lab hosts, one datasink: 8 agents pushing at once (overlapping, as a recovering
agent re-pushes) leave every point exactly once. And `rbs datasink gc`: old commits' by.hash
series go, branch and version history stays whole, old documents are folded, a restart keeps
what gc left; a pull request with a recent base still finds its base commit. Real
redis-stack-server throughout."""

from __future__ import annotations

import dataclasses
import multiprocessing
import time
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink import keys, reader, retention, run_reader
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    BUILD_VARIANT,
    METRICS,
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
    start_datasink,
)

DAY = 86_400_000
TEST = TEST_NAME
AGENTS, COMMITS, TESTS = 8, 6, 5


def _run(agent: int, commit: int, test: int) -> RunResult:
    doc = make_result(commit, test_name=f"conc-{test}", hash=f"{commit + 1:040x}",
                      platform=f"p{agent % 4}", version=None)
    # the same run, whoever pushes it; one platform's runs of a commit share nothing with
    # another's
    doc = dataclasses.replace(doc, run_id=f"conc-{test}:{agent % 4}:{commit}",
                              start_ms=doc.start_ms + agent % 4)
    return doc


def _agent(url: str, agent: int) -> int:
    """Agents 0-3 push their platform's runs; 4-7 push the same runs again at once."""
    client = redis.Redis.from_url(url, socket_timeout=60)
    known: set[str] = set()
    pushed = 0
    for commit in range(COMMITS):
        report = push_results(client, [_run(agent, commit, t) for t in range(TESTS)],
                              known_series=known)
        assert not report.failed, report.failed
        pushed += len(report.pushed)
    return pushed


def _samples(client: redis.Redis, kind: str) -> list[int]:
    reply = client.execute_command("TS.MRANGE", "-", "+", "FILTER", f"by={kind}")
    return [len(samples) for _k, _l, samples in reader._entries(reply)]


def test_eight_agents_at_once_push_every_point_exactly_once(
        datasink: EmbeddedDatasink, client: redis.Redis) -> None:
    with multiprocessing.get_context("fork").Pool(AGENTS) as pool:
        pushed = pool.starmap(_agent, [(datasink.url, a) for a in range(AGENTS)])
    assert sum(pushed) == AGENTS * COMMITS * TESTS
    branch, hashes = _samples(client, "branch"), _samples(client, "hash")
    assert len(branch) == 4 * TESTS * len(METRICS) and set(branch) == {COMMITS}
    assert len(hashes) == 4 * TESTS * len(METRICS) * COMMITS and set(hashes) == {1}
    assert run_reader.count_runs(client) == 4 * COMMITS * TESTS


def _push_year(client: redis.Redis, now: int) -> list[RunResult]:
    """Commits every 20 days over 200 days, on unstable; one release among them."""
    docs = []
    for i, age in enumerate(range(200, -1, -20)):
        doc = make_result(i, hash=f"{i + 1:040x}", version="7.2.4" if i == 3 else None)
        doc = dataclasses.replace(doc, start_ms=now - age * DAY)
        docs.append(doc)
    assert len(push_results(client, docs).pushed) == len(docs)
    return docs


def test_gc_expires_old_commits_keeps_history_and_survives_a_restart(tmp_path: Path) -> None:
    sink = start_datasink(tmp_path / "sink")
    try:
        client = sink.client()
        now = int(time.time() * 1000)
        docs = _push_year(client, now)
        client.delete(keys.index_keys(keys.Scope()).hash_times)  # as pushed before the index
        old = [d for d in docs if d.start_ms < now - 90 * DAY]
        unfolded = [d for d in docs if d.start_ms >= now - 30 * DAY]
        dry = retention.gc(client, now, window_days=90, dry_run=True, document_days=30)
        assert dry.commits_indexed == len(docs) and dry.commits_expired == len(old)
        assert rbs_in_process(["datasink", "gc", "--datasink", sink.url or "", "--dry-run"]) == 0
        assert len(_samples(client, "hash")) == len(docs) * len(METRICS)  # nothing deleted
        report = retention.gc(client, now, window_days=90, document_days=30)
        assert report.commits_expired == len(old)
        assert report.documents_folded == len(docs) - len(unfolded)
        sink.down()
        sink = EmbeddedDatasink(tmp_path / "sink")
        sink.up(timeout=120)
        client = sink.client()
        # kept: every branch and version point, the recent commits' series and documents
        assert _samples(client, "branch") == [len(docs)] * len(METRICS)
        assert _samples(client, "version") == [1] * len(METRICS)
        assert len(_samples(client, "hash")) == (len(docs) - len(old)) * len(METRICS)
        folded = run_reader.result_document(client, old[0].run_id)
        assert folded.result is None and folded.context.git.hash == old[0].context.git.hash
        assert folded.context == old[0].context and folded.start_ms == old[0].start_ms
        assert folded.metrics == {} and retention.FOLDED_NOTE in folded.notes  # series keep them
        assert all(run_reader.result_document(client, d.run_id).result is not None
                   for d in unfolded)
        assert run_reader.result_document(client, docs[-3].run_id).result is None  # 40 days
        # a second pass has nothing left to do
        again = retention.gc(client, now, window_days=90, document_days=30)
        assert (again.commits_expired, again.documents_folded) == (0, 0)
        _pull_request_bases_are_still_found(client, docs, old, now)
    finally:
        sink.down()


def _pr_compare(client: redis.Redis, base: RunResult, now: int) -> pr_compare.PlatformComparison:
    """A pull request on ``base``: its head run just pushed, compared on icelake-2s."""
    head = make_result(99, branch="feature", hash="f" * 40, version=None)
    head = dataclasses.replace(head, start_ms=now)
    assert push_results(client, [head]).pushed
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis",
                       branch="feature", sha="f" * 40, commit_time_ms=0,
                       build_variant=BUILD_VARIANT, built_at_ms=now - 1,
                       artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                       redis_version="255.255.255")
    info = PrInfo("redis", "redis", 1, "f" * 40, "feature", "unstable",
                  base.context.git.hash or "")
    return pr_compare.compare_platform(client, event, "icelake-2s", info,
                                       pr_compare.PrCompareOptions(metric=METRICS[0]))


def _pull_request_bases_are_still_found(client: redis.Redis, docs: list[RunResult],
                                        old: list[RunResult], now: int) -> None:
    """What docs/history.md promises a pull request after gc and a restart: a base commit
    inside the window by its by.hash series, an older one by its own points on unstable."""
    recent = _pr_compare(client, docs[-2], now)
    assert recent.baseline_label == f"hash {docs[-2].context.git.hash}"
    assert recent.samples[TEST][0] == [docs[-2].metrics[METRICS[0]]]
    expired = _pr_compare(client, old[1], now)
    assert expired.baseline_label.startswith(f"commit {(old[1].context.git.hash or '')[:12]}")
    assert "on branch unstable" in expired.baseline_label
    assert expired.samples[TEST][0] == [old[1].metrics[METRICS[0]]]  # that commit's value only
    context = expired.report.context
    assert context and context.baseline.commits == [old[1].context.git.hash]
    never = make_result(0, hash="e" * 40)  # never benchmarked: the branch's last points
    fallback = _pr_compare(client, never, now)
    assert fallback.baseline_label == "branch unstable (last 10 points)"
    assert len(fallback.samples[TEST][0]) == 10


@pytest.mark.parametrize("days", ["0", "9999"])
def test_gc_window_out_of_range_is_one_line(days: str, datasink: EmbeddedDatasink,
                                            capsys: pytest.CaptureFixture[str]) -> None:
    assert rbs_in_process(["datasink", "gc", "--window-days", days, "--datasink",
                           datasink.url]) == 2
    err = capsys.readouterr().err
    assert f"--window-days {days}" in err and len(err.strip().splitlines()) == 1
