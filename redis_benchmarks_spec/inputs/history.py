"""A metric's history on a branch read from the datasink: its points, each with the commit
and version of the run that wrote it (from the stored result documents), and the series of
every matching test for the change points."""

from __future__ import annotations

import re

import redis

from redis_benchmarks_spec.analysis.branch_changes import BranchQuery, SeriesChanges, changes_of
from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions
from redis_benchmarks_spec.analysis.history import History, HistoryError, HistoryPoint, HistoryQuery
from redis_benchmarks_spec.datasink import keys, reader, run_reader, suspect_marks
from redis_benchmarks_spec.results.document import RunResult


def _selector(query: HistoryQuery) -> reader.SeriesSelector:
    kind, value = query.side
    return reader.SeriesSelector(metric=query.metric, side=keys.Side(kind, value),  # type: ignore[arg-type]
                                 test_name=query.test, platform=query.platform,
                                 topology=query.topology, build_variant=query.build_variant,
                                 last_n=query.last_n)


def _annotate(client: redis.Redis, history: History) -> None:
    """Commit, version and repetition of the run that wrote each point: runs are indexed by
    start time, which is the points' timestamp; the run must be of this series' variant and
    platform; a run measured on an artifact found bad is marked suspect. Three round trips
    whatever the number of points (the run ids, one MGET, the commits' suspect marks)."""
    query, points = history.query, history.points
    if not points:
        return
    series = keys.parse_key(history.series_key, query.metric)
    per_point = run_reader.run_ids_at(client, series.scope, query.test, [p.ts_ms for p in points])
    docs = run_reader.result_documents(client, sorted({r for ids in per_point for r in ids}))
    wanted = (series.build_variant, series.platform)
    for point, ids in zip(points, per_point):
        for run_id in (r for r in ids if r in docs):
            doc = docs[run_id]
            ctx = doc.context
            if (ctx.build_variant, ctx.platform) == wanted and _on_side(query, doc):
                point.commit = ctx.git.hash or doc.redis_git_sha
                point.version = ctx.git.version or doc.redis_version
                point.run_id = run_id
                history.repetitions[run_id] = ctx.repetition
                break
    _mark_suspect(client, series.scope, history.points, docs)


def _mark_suspect(client: redis.Redis, scope: keys.Scope, points: list[HistoryPoint],
                  docs: dict[str, RunResult]) -> None:
    marks = suspect_marks.read(client, scope, {p.commit for p in points if p.run_id})
    if not marks:
        return
    for point in (p for p in points if p.run_id in docs):
        found = suspect_marks.suspect_of(docs[point.run_id], marks)
        point.suspect = found.text() if found else ""


def _on_side(query: HistoryQuery, doc: RunResult) -> bool:
    """The run was filed on the series' side (its branch, release version or commit)."""
    kind, value = query.side
    if kind == "branch":
        return doc.context.git.branch == value
    return keys.Side(kind, value) in keys.sides_of(doc)  # type: ignore[arg-type]


def read_history(client: redis.Redis, query: HistoryQuery) -> History:
    """The last ``query.last_n`` points, oldest first, each with its commit and version."""
    found = reader.read_series(client, _selector(query))
    if not found:
        raise HistoryError(f"no series of {query.test} {query.metric} on {query.where}")
    if len(found) > 1:
        raise HistoryError(f"{len(found)} series match; narrow with --platform, --topology "
                           f"or --build-variant: {', '.join(s.key for s in found[:4])}")
    history = History(query, found[0].key)
    history.points = [HistoryPoint(ts, value) for ts, value in found[0].points]
    _annotate(client, history)
    return history


def tests_on_branch(client: redis.Redis, query: BranchQuery) -> list[str]:
    """Tests with a series of ``query.metric`` on the branch, matching the regexp."""
    selector = reader.SeriesSelector(
        metric=query.metric, side=keys.Side("branch", query.branch), platform=query.platform,
        topology=query.topology, build_variant=query.build_variant, last_n=1)
    found = reader.series_for_tests(client, selector)
    return sorted(t for t in found if re.search(query.tests_regexp, t))


def series_changes(client: redis.Redis, query: BranchQuery, test: str,
                   options: ChangePointOptions) -> SeriesChanges:
    """The change points of one test's series (raises ``HistoryError`` when ambiguous)."""
    return changes_of(read_history(client, HistoryQuery(
        test=test, metric=query.metric, branch=query.branch, platform=query.platform,
        topology=query.topology, build_variant=query.build_variant, last_n=query.last_n)),
        options)
