"""What the binaries of a comparison's two sides were built with, read from the stored runs
(the v3 ``binary`` block: the server's allocator and the artifact's dependency versions,
:mod:`results.binary`), so the PR comment and the alerts name a dependency change as
``rbs compare`` does ("jemalloc 5.2.1 → 5.3.0").

A side's dependencies are the versions every run read of it agrees on
(:func:`results.binary.agreed`). The binary is one per commit, platform and build variant,
so a few rows of a side tell it: at most :data:`ROWS` rows and :data:`RUNS` runs are read
(one MGET each way), whatever the number of tests.
"""

from __future__ import annotations

from collections.abc import Iterable

import redis

from redis_benchmarks_spec.analysis.history import HistoryPoint
from redis_benchmarks_spec.datasink import keys, reader, run_reader
from redis_benchmarks_spec.results import binary
from redis_benchmarks_spec.results.comparison_key import split
from redis_benchmarks_spec.results.document import RunResult

ROWS = 3  # rows of a side whose points' runs are read
RUNS = 40  # runs read of a side at most


def agreed(docs: Iterable[RunResult]) -> dict[str, str]:
    """The dependency versions the runs that recorded their binary agree on."""
    return binary.agreed(d.binary for d in docs if d.binary)


def of_runs(client: redis.Redis, run_ids: Iterable[str]) -> dict[str, str]:
    """:func:`agreed` over the stored documents of ``run_ids`` (the first :data:`RUNS`)."""
    wanted = list(dict.fromkeys(r for r in run_ids if r))[:RUNS]
    return agreed(run_reader.result_documents(client, wanted).values())


def of_points(client: redis.Redis, scope: keys.Scope,
              rows: dict[str, list[reader.Point]], where: tuple[str, str]) -> dict[str, str]:
    """:func:`agreed` over the runs that wrote the points of a side's first :data:`ROWS`
    rows (row labels as ``results.comparison_key`` makes them) on ``where`` (platform,
    build variant): the runs started at each point's time."""
    ids: list[str] = []
    for row in sorted(r for r in rows if rows[r])[:ROWS]:
        test, _topology = split(row)
        found = run_reader.run_ids_at(client, scope, test, [ts for ts, _ in rows[row]])
        ids += [r for at in found for r in at]
    docs = run_reader.result_documents(client, list(dict.fromkeys(ids))[:RUNS])
    return agreed(d for d in docs.values()
                  if (d.context.platform, d.context.build_variant) == where)


def of_series(client: redis.Redis, rows: dict[str, reader.Series], metric: str) -> dict[str, str]:
    """:func:`agreed` over the runs that wrote the points of a side's first :data:`ROWS`
    series (``rbs compare``'s rows), each on its own series' platform and build variant."""
    ids: list[str] = []
    wanted: set[tuple[str, str]] = set()
    for row in sorted(r for r in rows if rows[r].points)[:ROWS]:
        sid = keys.parse_key(rows[row].key, metric)
        wanted.add((sid.platform, sid.build_variant))
        found = run_reader.run_ids_at(client, sid.scope, sid.test_name,
                                      [ts for ts, _ in rows[row].points])
        ids += [r for at in found for r in at]
    docs = run_reader.result_documents(client, list(dict.fromkeys(ids))[:RUNS])
    return agreed(d for d in docs.values()
                  if (d.context.platform, d.context.build_variant) in wanted)


def of_commit(client: redis.Redis, points: Iterable[HistoryPoint], sha: str) -> dict[str, str]:
    """:func:`of_runs` of the runs of ``sha`` among a history's annotated ``points``."""
    return of_runs(client, (p.run_id for p in points if p.commit == sha))


def changes(before: dict[str, str], after: dict[str, str]) -> list[str]:
    """``["jemalloc 5.2.1 → 5.3.0"]`` (:func:`results.binary.dependency_changes`)."""
    return binary.dependency_changes(before, after)
