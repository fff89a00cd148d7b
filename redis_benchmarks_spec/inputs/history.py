"""A metric's history on a branch read from the datasink: its points, each with the commit
and version of the run that wrote it (from the stored result documents), and the series of
every matching test for the change points."""

from __future__ import annotations

import re
from dataclasses import replace
from typing import Any

import redis

from redis_benchmarks_spec.analysis.branch_changes import BranchQuery, SeriesChanges, changes_of
from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions
from redis_benchmarks_spec.analysis.history import History, HistoryError, HistoryPoint, HistoryQuery
from redis_benchmarks_spec.datasink import keys, reader, run_reader, suspect_marks
from redis_benchmarks_spec.results.document import RunContext, RunResult


def _selector(query: HistoryQuery, scope: keys.Scope | None = None) -> reader.SeriesSelector:
    kind, value = query.side
    return reader.SeriesSelector(metric=query.metric, side=keys.Side(kind, value),  # type: ignore[arg-type]
                                 test_name=query.test, platform=query.platform,
                                 topology=query.topology, build_variant=query.build_variant,
                                 last_n=query.last_n,
                                 **({} if scope is None else {
                                     "triggering_env": scope.triggering_env,
                                     "github_org": scope.github_org,
                                     "github_repo": scope.github_repo}))


def _annotate(client: redis.Redis, histories: list[History]) -> None:
    """Commit, version and repetition of the run that wrote each point: runs are indexed by
    start time, which is the points' timestamp; the run must be of its series' variant and
    platform; a run measured on an artifact found bad is marked suspect. Three round trips
    whatever the number of points and series (the run ids of each test between its series'
    first and last points, one MGET, the commits' suspect marks); each document is read as
    its JSON object, and only the side check of a version or commit series builds the whole
    record."""
    keyed = [((keys.parse_key(h.series_key, h.query.metric).scope, h.query.test), h)
             for h in histories if h.points]  # points are oldest first
    spans: dict[tuple[keys.Scope, str], tuple[int, int]] = {}
    for key, h in keyed:
        low, high = spans.get(key, (h.points[0].ts_ms, h.points[-1].ts_ms))
        spans[key] = (min(low, h.points[0].ts_ms), max(high, h.points[-1].ts_ms))
    runs = dict(zip(spans, run_reader.run_ids_between(
        client, [(scope, test, low, high) for (scope, test), (low, high) in spans.items()]),
        strict=True))
    docs = run_reader.result_dicts(client, sorted(
        {r for key, h in keyed for p in h.points for r in runs[key].get(p.ts_ms, ())}))
    for key, history in keyed:
        series = keys.parse_key(history.series_key, history.query.metric)
        wanted = (series.build_variant, series.platform)
        for point in history.points:
            for run_id in (r for r in runs[key].get(point.ts_ms, ()) if r in docs):
                raw = docs[run_id]
                ctx = raw.get("context") or {}  # RunContext's fields, and its defaults
                git = ctx.get("git") or {}
                if (ctx.get("build_variant", _CONTEXT.build_variant),
                        ctx.get("platform", _CONTEXT.platform)) == wanted and \
                        _on_side(history.query, git.get("branch"), raw):
                    point.commit = git.get("hash") or raw.get("redis_git_sha") or ""
                    point.version = git.get("version") or raw.get("redis_version") or ""
                    point.run_id = run_id
                    history.repetitions[run_id] = ctx.get("repetition")
                    break
    _mark_suspect(client, keyed, docs)


def _mark_suspect(client: redis.Redis, keyed: list[tuple[tuple[keys.Scope, str], History]],
                  docs: dict[str, dict[str, Any]]) -> None:
    """Each point whose run a suspect mark covers says why (one read of each scope's marks,
    :func:`datasink.suspect_marks.suspect_of` of the stored document's fields)."""
    shas: dict[keys.Scope, set[str]] = {}
    for (scope, _test), history in keyed:
        shas.setdefault(scope, set()).update(p.commit for p in history.points if p.run_id)
    marks = {scope: suspect_marks.read(client, scope, found) for scope, found in shas.items()}
    for (scope, _test), history in keyed:
        if not marks[scope]:
            continue
        for point in (p for p in history.points if p.run_id in docs):
            raw = docs[point.run_id]
            ctx = raw.get("context") or {}
            git = ctx.get("git") or {}
            found = suspect_marks.mark_of(
                marks[scope], (git.get("hash") or raw.get("redis_git_sha") or "",
                               ctx.get("build_variant", _CONTEXT.build_variant)),
                str((ctx.get("build") or {}).get("build_kind", "")),
                raw.get("start_ms", _RUN_START_MS))
            point.suspect = found.text() if found else ""


def _on_side(query: HistoryQuery, branch: str | None, raw: dict[str, Any]) -> bool:
    """The run was filed on the series' side (its branch, release version or commit)."""
    kind, value = query.side
    if kind == "branch":
        return branch == value
    return keys.Side(kind, value) in keys.sides_of(RunResult.from_dict(raw))  # type: ignore[arg-type]


_CONTEXT = RunContext()  # the defaults of a field a stored context lacks
_RUN_START_MS = 0  # RunResult.start_ms's default


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
    _annotate(client, [history])
    return history


def read_histories(client: redis.Redis, query: HistoryQuery,
                   scope: keys.Scope | None = None) -> list[History]:
    """Every series ``query`` matches (in ``scope`` when given), by key: each the
    :func:`read_history` of ``query`` narrowed to its platform, topology and build variant,
    read together (one ``TS.MREVRANGE``, then :func:`_annotate`'s two round trips)."""
    histories = []
    for found in sorted(reader.read_series(client, _selector(query, scope)),
                        key=lambda s: s.key):
        sid = keys.parse_key(found.key, query.metric)
        history = History(replace(query, platform=sid.platform, topology=sid.topology,
                                  build_variant=sid.build_variant), found.key)
        history.points = [HistoryPoint(ts, value) for ts, value in found.points]
        histories.append(history)
    _annotate(client, histories)
    return histories


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
