"""The site's faster reads (issue 43) show what the slower ones showed, on a real datasink
filled by the project's writer (tests/site_fixtures.py):

- the branch page's commits as the writer keeps them (datasink/commit_runs.py) equal the
  commits read from their by.hash series (the path of commits pushed before, still taken
  for them); gc deletes what the writer kept with the series;
- the compare page's one read of each commit over every platform gives, per platform, the
  rows and points ``read_sides`` gives for that platform alone.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.history import HistoryQuery
from redis_benchmarks_spec.datasink import commit_runs, commit_series, keys, reader, retention
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.inputs.comparison_series import (
    SidesQuery,
    read_sides,
    read_sides_per_platform,
)
from redis_benchmarks_spec.inputs.history import read_histories, read_history
from redis_benchmarks_spec.web.branch_page import recent_commits
from tests.datasink_fixtures import METRICS, TEST_NAME, make_result, start_datasink
from tests.site_fixtures import PLATFORMS, REPS, SHAS, fill

SCOPE = keys.Scope("ci", "redis", "redis")


@pytest.fixture(name="sink")
def sink_fixture(tmp_path: Path) -> Iterator[EmbeddedDatasink]:
    sink = start_datasink(tmp_path / "datasink")
    try:
        yield sink
    finally:
        sink.down()


def _kept_keys(client: redis.Redis) -> list[str]:
    return sorted(k.decode() for k in client.scan_iter(f"{keys.PREFIX}/ci/redis/redis/commits/*"))


def _rows(client: redis.Redis, platform: str | None) -> list[tuple]:
    return [(r.sha, r.first_ms, r.last_ms, sorted(r.tests), r.runs, r.why)
            for r in recent_commits(client, SCOPE, "unstable", platform, [])]


def test_branch_commits_as_kept_equal_those_read_from_series(sink: EmbeddedDatasink) -> None:
    with sink.client() as client:
        fill(client)
        kept = _kept_keys(client)
        assert len(kept) == len(SHAS) * len(PLATFORMS) * 3  # runs, tests and series of each
        found = commit_runs.read(client, SCOPE, [SHAS[0]], ([PLATFORMS[0]], list(PLATFORMS)))
        assert isinstance(found[0], commit_runs.CommitRuns)
        assert found[0].runs == 2 * REPS and len(found[0].tests) == 2
        fast = {p: _rows(client, p) for p in (*PLATFORMS, None)}
        assert [r[0] for r in fast[PLATFORMS[0]]] == SHAS[::-1]
        assert fast[None][0][4] == 2 * 2 * REPS  # every platform: both platforms' runs
        client.delete(*kept)  # as a datasink the writer filled before it kept them
        assert {p: _rows(client, p) for p in fast} == fast


def test_a_repush_counts_no_run_twice_and_gc_deletes_what_was_kept(
        sink: EmbeddedDatasink) -> None:
    runs = [make_result(i, hash=SHAS[0], platform=PLATFORMS[0]) for i in range(3)]
    with sink.client() as client:
        for _ in range(2):
            assert not push_results(client, runs).failed
        found = commit_runs.read(client, SCOPE, [SHAS[0], SHAS[1]], ([PLATFORMS[1]],
                                                                      list(PLATFORMS)))
        assert found == [commit_runs.KEPT, commit_runs.UNKNOWN]  # not on the other platform
        mine = commit_runs.read(client, SCOPE, [SHAS[0]], ([PLATFORMS[0]], []))[0]
        assert isinstance(mine, commit_runs.CommitRuns)
        assert (mine.runs, mine.tests, mine.first_run) == (3, {TEST_NAME}, runs[0].run_id)
        gone = retention.gc(client, int(time.time() * 1000) + 400 * 86_400_000)
        assert gone.errors == [] and gone.commits_expired == 1 and _kept_keys(client) == []


def test_one_read_over_every_platform_equals_a_read_per_platform(
        sink: EmbeddedDatasink) -> None:
    a, b = SHAS[2], SHAS[3]
    with sink.client() as client:
        fill(client)
        # a second topology on one platform: its rows are named "test @ topology" there
        more = [make_result(900 + i, hash=b, platform=PLATFORMS[1], topology="oss-cluster-3")
                for i in range(2)]
        assert not push_results(client, more).failed

        def side(sha: str, platform: str | None) -> reader.SeriesSelector:
            return reader.SeriesSelector(metric=METRICS[0], side=keys.Side("hash", sha),
                                         platform=platform)
        every = read_sides_per_platform(client, SidesQuery(side(a, None), side(b, None)))
        assert sorted(every) == sorted(PLATFORMS)
        for platform in PLATFORMS:
            # the topologies either commit has there, as the page read them one by one
            tops = tuple(sorted({keys.parse_key(k, METRICS[0]).topology for sha in (a, b)
                                 for k in reader.series_keys(client, [
                                     "by=hash", f"hash={sha}",
                                     f"metric={keys.label_value(METRICS[0])}",
                                     f"platform={platform}"])}))
            alone = read_sides(client, SidesQuery(side(a, platform), side(b, platform),
                                                  topologies=tops))
            assert every[platform] == alone, platform
        assert any(" @ " in row for row in every[PLATFORMS[1]].rows)
        # that read went by the kept series' keys; by TS.MRANGE it is the same
        assert commit_series.read(client, [side(a, None), side(b, None)]) is not None
        for sha in (a, b):
            for platform in PLATFORMS:
                client.delete(keys.commit_run_keys(SCOPE, sha, platform).series)
        assert commit_series.read(client, [side(a, None), side(b, None)]) is None
        assert read_sides_per_platform(client, SidesQuery(side(a, None), side(b, None))) == every


def test_series_read_by_their_kept_keys_equal_the_mrange_of_every_selector(
        sink: EmbeddedDatasink) -> None:
    """datasink/commit_series.py reads exactly what the by.hash ``TS.MRANGE`` reads: every
    metric (one the runs did not record too), one platform or all, a named deployment
    (``type/name`` in the key), and says None where it cannot know (kept runs whose series
    were not all kept, a commit with nothing kept)."""
    sha = SHAS[4]
    with sink.client() as client:
        fill(client)
        named = [make_result(950 + i, hash=sha, platform=PLATFORMS[0],
                             topology="oss-standalone-04-io-threads") for i in range(2)]
        named = [replace(r, context=replace(r.context, topology_type="oss-standalone"))
                 for r in named]
        assert not push_results(client, named).failed
        assert any("/oss-standalone/oss-standalone-04-io-threads/" in k
                   for k in reader.series_keys(client, [f"hash={sha}"]))
        for metric in (*METRICS, "not-recorded"):
            for platform in (None, *PLATFORMS):
                sel = reader.SeriesSelector(metric=metric, side=keys.Side("hash", sha),
                                            platform=platform)
                by_key = commit_series.read(client, [sel])
                assert by_key is not None
                by_filter = reader.read_series(client, sel)
                assert sorted((sid.key, s) for found in by_key[0].values()
                              for sid, s in found) == sorted((s.key, s) for s in by_filter)
                assert all(sid == keys.parse_key(sid.key, metric) and sid.platform == p
                           for p, found in by_key[0].items() for sid, _ in found)
                # the fill records METRICS[0] everywhere; METRICS[1] only the named
                # deployment's runs: the other series of the commit have none of it
                assert bool(by_filter) == (metric == METRICS[0] or (
                    metric == METRICS[1] and platform in (None, PLATFORMS[0]))), (metric,
                                                                                   platform)
        sel = reader.SeriesSelector(metric=METRICS[0], side=keys.Side("hash", sha))
        assert commit_series.read(client, [replace(sel, test_name=TEST_NAME)]) is None
        assert commit_series.read(client, [replace(sel, side=keys.Side("hash", "ab" * 20))]) \
            is None  # nothing kept of it
        series_key = keys.commit_run_keys(SCOPE, sha, PLATFORMS[1]).series
        assert client.scard(series_key) == 2  # one series of each test there
        assert client.spop(series_key)
        assert commit_series.read(client, [sel]) is None  # a test whose series is not kept
        client.delete(series_key)
        assert commit_series.read(client, [sel]) is None  # runs kept, series not at all


def test_histories_read_together_equal_each_read_alone(sink: EmbeddedDatasink) -> None:
    """The history page reads every series of a test at once (one range of series, one of
    the run index, one MGET): each history, commits, versions, runs and repetitions of its
    points included, is the one ``rbs history`` reads for that series alone."""
    with sink.client() as client:
        fill(client)
        query = HistoryQuery(test=TEST_NAME, metric=METRICS[0], branch="unstable", last_n=50)
        together = read_histories(client, query, SCOPE)
        assert sorted(h.query.platform for h in together) == sorted(PLATFORMS)
        for history in together:
            alone = read_history(client, history.query)
            assert alone == history, history.series_key
            assert {p.commit for p in history.points} == set(SHAS)
            assert all(p.run_id for p in history.points)
