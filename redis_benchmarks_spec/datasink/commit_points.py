"""A commit's points once gc deleted its by.hash series: found on its branch's series.

A commit benchmarked on a branch wrote each point twice, on ``by.hash/<sha>`` and on
``by.branch/<branch>``, at the run's start time. gc deletes the by.hash series after the
window (:mod:`.retention`) but keeps the branch series, the commit's time span
(``hash_first`` / ``hash_last``, never expired) and each run's (folded) document. So the
runs of the span whose document names the commit, the platform and the build variant give
the timestamps of the commit's points on its branch series: the same values, exactly.
Runs pushed with ``timestamp=commit`` are stamped otherwise and are not found this way.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from redis_benchmarks_spec.datasink import documents, keys, reader, run_reader


@dataclass(frozen=True)
class CommitQuery:
    """Which commit's points: one metric, on one platform and build variant of a scope."""

    scope: keys.Scope
    sha: str
    platform: str
    build_variant: str
    metric: str


@dataclass
class CommitPoints:
    """The commit's points per (series test name, topology), and the branch they came from."""

    branch: str
    points: dict[tuple[str, str], list[reader.Point]]


def commit_span(client: redis.Redis, scope: keys.Scope, sha: str) -> tuple[int, int] | None:
    """(first, newest) point time of ``sha``'s runs in ``scope``, or None if never pushed."""
    idx = keys.index_keys(scope)
    pipe = client.pipeline(transaction=False)
    pipe.zscore(idx.hash_first, sha)
    pipe.zscore(idx.hash_last, sha)
    first, last = pipe.execute()
    return None if first is None or last is None else (int(first), int(last))


def _mine(raw: dict[str, Any], query: CommitQuery) -> bool:
    ctx = raw.get("context") or {}
    git = ctx.get("git") or {}
    return (git.get("hash"), ctx.get("platform"), ctx.get("build_variant")) == (
        query.sha, query.platform, query.build_variant) and bool(git.get("branch"))


def _runs(client: redis.Redis, query: CommitQuery, span: tuple[int, int],
          tests: list[str]) -> list[tuple[str, dict[str, Any]]]:
    """(series test name, document) of the commit's runs on the platform and variant."""
    ids = run_reader.run_ids_of_tests(client, query.scope, tests, *span)
    flat = [(test, run_id) for test, row in zip(tests, ids) for run_id in row]
    if not flat:
        return []
    values = client.mget([keys.run_key(run_id) for _test, run_id in flat])
    found = []
    for (test, _run_id), value in zip(flat, values):
        if value is not None:
            raw = documents.decode_dict(value)
            if _mine(raw, query):
                found.append((test, raw))
    return found


def on_branch(client: redis.Redis, query: CommitQuery,
              tests: list[str] | None = None) -> CommitPoints | None:
    """The commit's points of ``query.metric`` read from its branch's series (None when the
    commit has no run there). ``tests``: series test names to look at (default: all)."""
    span = commit_span(client, query.scope, query.sha)
    if span is None:
        return None
    runs = _runs(client, query, span, tests or reader.list_tests(client, query.scope))
    if not runs:
        return None
    branch = runs[0][1]["context"]["git"]["branch"]
    starts: dict[tuple[str, str], set[int]] = {}
    for test, raw in runs:
        if raw["context"]["git"]["branch"] == branch:
            starts.setdefault((test, raw["context"]["topology"]), set()).add(int(raw["start_ms"]))
    selector = reader.SeriesSelector(
        metric=query.metric, side=keys.Side("branch", branch), platform=query.platform,
        build_variant=query.build_variant, triggering_env=query.scope.triggering_env,
        github_org=query.scope.github_org, github_repo=query.scope.github_repo,
        from_ms=span[0], to_ms=span[1])
    points: dict[tuple[str, str], list[reader.Point]] = {}
    for series in reader.read_series(client, selector, sorted({t for t, _ in starts})):
        parsed = keys.parse_key(series.key, query.metric)
        wanted = starts.get((parsed.test_name, parsed.topology), set())
        kept = [(ts, v) for ts, v in series.points if ts in wanted]
        if kept:
            points[(parsed.test_name, parsed.topology)] = kept
    return CommitPoints(branch, points) if points else None
