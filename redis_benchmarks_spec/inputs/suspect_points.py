"""A comparison's points without those measured on an artifact found bad
(datasink/suspect_marks.py): ``rbs compare`` and the PR comment judge the good points only,
and say what they left out.

A point's timestamp is its run's start time, so the runs of each point are found in the
test's run index (:func:`datasink.run_reader.run_ids_at`) and their commit, build variant
and artifact's build kind are read from the first bytes of their documents (GETRANGE). A
scope without any mark costs one SCARD and nothing else.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import replace
from typing import Any

import redis

from redis_benchmarks_spec.datasink import keys, reader, run_reader, suspect_marks

Rows = dict[str, reader.Series]


def drop_suspect(client: redis.Redis, rows: Rows, metric: str,
                 marked: bool | None = None) -> tuple[Rows, list[str]]:
    """``rows`` without their suspect points, and one note per commit left out. ``marked``:
    whether any of their scopes has a mark, when the caller asked already (a reader of
    both sides on every platform asks once: :func:`any_marked`), else asked here."""
    if marked is False:
        return rows, []
    ids = {row: keys.parse_key(s.key, metric) for row, s in rows.items() if s.points}
    if not ids:
        return rows, []
    if marked is None and not suspect_marks.any_marked(client, scopes_of(rows, metric)):
        return rows, []
    runs = {row: run_reader.run_ids_at(client, sid.scope, sid.test_name,
                                       [ts for ts, _ in rows[row].points])
            for row, sid in ids.items()}
    contexts = _contexts(client, sorted({r for found in runs.values()
                                         for at in found for r in at}))
    commits: dict[keys.Scope, set[str]] = {}  # each scope's marks read once
    for row, sid in ids.items():
        commits.setdefault(sid.scope, set()).update(
            c for at in runs[row] for r in at if (c := _commit(contexts.get(r))))
    scope_marks = {scope: suspect_marks.read(client, scope, found)
                   for scope, found in commits.items()}
    left: Counter[str] = Counter()
    out = dict(rows)
    for row, sid in ids.items():
        marks = scope_marks[sid.scope]
        kept = []
        for point, at in zip(rows[row].points, runs[row]):
            bad = _suspect(marks, [contexts.get(r) for r in at], sid, point[0])
            if bad:
                left[bad] += 1
            else:
                kept.append(point)
        out[row] = replace(rows[row], points=kept)
    return out, [f"suspect: {n} point(s) of commit {sha[:12]} left out, measured on an "
                 f"artifact found bad (re-measure the commit)" for sha, n in sorted(left.items())]


def scopes_of(rows: Rows, metric: str) -> set[keys.Scope]:
    """The scopes of ``rows``' series that have points (whose marks :func:`drop_suspect`
    looks for: :func:`datasink.suspect_marks.any_marked` of them)."""
    return {keys.parse_key(s.key, metric).scope for s in rows.values() if s.points}


def _contexts(client: redis.Redis, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """Each run's stored context (first bytes; the whole document where they do not hold it)."""
    heads = run_reader.contexts(client, run_ids)
    whole = run_reader.result_dicts(client, [r for r, c in heads.items() if c is None])
    out = {r: c for r, c in heads.items() if c is not None}
    out.update({r: raw.get("context") or {} for r, raw in whole.items()})
    return out


def _commit(ctx: dict[str, Any] | None) -> str:
    return str(((ctx or {}).get("git") or {}).get("hash") or "")


def _suspect(marks: dict[tuple[str, str], suspect_marks.SuspectMark],
             contexts: list[dict[str, Any] | None], sid: keys.SeriesId, ts: int) -> str:
    """The commit of the point's run on the series' platform and variant when that run is
    suspect; "" otherwise."""
    for ctx in (c for c in contexts if c):
        if (ctx.get("platform"), ctx.get("build_variant")) != (sid.platform, sid.build_variant):
            continue
        build = ctx.get("build") or {}
        found = suspect_marks.mark_of(marks, (_commit(ctx), sid.build_variant),
                                      str(build.get("build_kind", "")), ts)
        return found.sha if found else ""
    return ""
