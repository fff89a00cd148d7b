"""One metric's history on a branch, read from the datasink: the points, and for each the
commit and version of the run that made it (from the stored result documents).

Formatting lives in ``cli/history.py``; the sparkline and the CSV/JSON forms are here so a
report or a test can use them without the command line.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field

import redis

from redis_benchmarks_spec.datasink import keys, reader

SPARK = "▁▂▃▄▅▆▇█"


class HistoryError(LookupError):
    """The history asked for cannot be given (nothing stored, several series match)."""


@dataclass(frozen=True)
class HistoryQuery:
    test: str
    metric: str
    branch: str
    platform: str | None = None
    topology: str | None = None
    build_variant: str | None = None
    last_n: int = 20


@dataclass
class HistoryPoint:
    ts_ms: int
    value: float
    commit: str = ""
    version: str = ""
    run_id: str = ""


@dataclass
class History:
    query: HistoryQuery
    series_key: str
    points: list[HistoryPoint] = field(default_factory=list)


def _selector(query: HistoryQuery) -> reader.SeriesSelector:
    return reader.SeriesSelector(metric=query.metric, side=keys.Side("branch", query.branch),
                                 test_name=query.test, platform=query.platform,
                                 topology=query.topology, build_variant=query.build_variant,
                                 last_n=query.last_n)


def _annotate(client: redis.Redis, series_key: str, query: HistoryQuery,
              points: list[HistoryPoint]) -> None:
    """Commit and version of the run that wrote each point: runs are indexed by start time,
    which is the points' timestamp; the run must be of this series' variant and platform.
    Two round trips whatever the number of points (the run ids, then one MGET)."""
    if not points:
        return
    series = keys.parse_key(series_key, query.metric)
    per_point = reader.run_ids_at(client, series.scope, query.test, [p.ts_ms for p in points])
    docs = reader.result_documents(client, sorted({r for ids in per_point for r in ids}))
    wanted = (query.branch, series.build_variant, series.platform)
    for point, ids in zip(points, per_point):
        for run_id in (r for r in ids if r in docs):
            doc = docs[run_id]
            ctx = doc.context
            if (ctx.git.branch, ctx.build_variant, ctx.platform) == wanted:
                point.commit = ctx.git.hash or doc.redis_git_sha
                point.version = ctx.git.version or doc.redis_version
                point.run_id = run_id
                break


def read_history(client: redis.Redis, query: HistoryQuery) -> History:
    """The last ``query.last_n`` points, oldest first, each with its commit and version."""
    found = reader.read_series(client, _selector(query))
    if not found:
        raise HistoryError(f"no series of {query.test} {query.metric} on branch "
                           f"{query.branch}")
    if len(found) > 1:
        raise HistoryError(f"{len(found)} series match; narrow with --platform, --topology "
                           f"or --build-variant: {', '.join(s.key for s in found[:4])}")
    history = History(query, found[0].key)
    history.points = [HistoryPoint(ts, value) for ts, value in found[0].points]
    _annotate(client, history.series_key, query, history.points)
    return history


def sparkline(values: list[float]) -> str:
    """One block character per value, scaled between the smallest and the largest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    if span == 0:
        return SPARK[3] * len(values)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - low) / span * len(SPARK)))]
                   for v in values)


def to_csv(history: History) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["ts_ms", "value", "commit", "version", "run_id"])
    for p in history.points:
        writer.writerow([p.ts_ms, p.value, p.commit, p.version, p.run_id])
    return out.getvalue()


def to_json(history: History) -> str:
    return json.dumps({"query": asdict(history.query), "series": history.series_key,
                       "points": [asdict(p) for p in history.points]}, indent=2)
