"""Two commits' datasink points judged as the runs they are: the pairs of one interleaved
A/B session, or two samples.

The lab's A/B of a pull request (``agent.ab_event``, ``runner.ab``) files each run as a
point of its own commit's history: the base commit's runs on the base's by.hash series, the
head's on the head's, each result document labelled with its side (``context.ab_side``) and
its pair (``context.repetition``). The comment judges those runs as pairs. Read back as two
samples of points they are another comparison: BITCOUNT's speed-up was IMPROVEMENT -57.7 %
[-59.7, -55.7] in the comment and UNKNOWN "too few points (n=2)" on the site (issue 62).

Here the points' documents are looked up (one row first: the common case, points that are
no session's, costs two round trips) and, when every point of every row read on both sides
is a run of one interleaved session (the baseline's labelled ``baseline``, the
comparison's ``comparison``, each pair number at most once a side, and pairs in common),
they are handed to :func:`analysis.engine.judge` as that session's runs, paired by its one
rule (``analysis.session_runs``), with each run's value of the metric the point's. Anything
else is two samples (:func:`analysis.engine.judge_samples`). ``rbs compare`` of the
datasink, the pull-request comment's datasink route and the site's compare page all judge
here, so the same runs get the same verdict and interval on each.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import replace
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.engine import Judging, judge, judge_samples
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun, keys_of
from redis_benchmarks_spec.datasink import keys, reader, run_reader

SeriesByRow = dict[str, reader.Series]


def _commit_series(series: reader.Series) -> keys.SeriesId | None:
    """The series' id when it is a commit's own (by.hash) series, else None (points read on
    a branch after gc are no session's runs)."""
    if not series.key.startswith(keys.PREFIX):
        return None
    try:
        sid = keys.parse_key(series.key)
    except ValueError:
        return None
    return sid if sid.side.kind == "hash" else None


def _own_run(ids: list[str], found: dict[str, dict[str, Any] | None], side: str,
             sid: keys.SeriesId) -> str | None:
    """The one run at a point that is ``side`` of an A/B of the series' commit, platform
    and topology; None when there is no such run or more than one."""
    mine = []
    for run_id in ids:
        ctx = found.get(run_id)
        if not ctx or ctx.get("ab_side") != side or not isinstance(ctx.get("repetition"), int):
            continue
        git = ctx.get("git") or {}
        if (git.get("hash"), ctx.get("platform"), ctx.get("topology")) == (
                sid.side.value, sid.platform, sid.topology):
            mine.append(run_id)
    return mine[0] if len(mine) == 1 else None


def _side_runs(client: redis.Redis, rows: list[tuple[str, str, reader.Series]]
               ) -> list[tuple[str, str, str, float]] | None:
    """(row, side, run id, value) of every point of ``rows`` (row, side, series), or None
    as soon as one point is not a run of an interleaved A/B session on its side."""
    ids_of = [_commit_series(s) for _, _, s in rows]
    sids = [sid for sid in ids_of if sid is not None]
    if len(sids) < len(rows):
        return None
    at = run_reader.run_ids_between(client, [
        (sid.scope, sid.test_name, s.points[0][0], s.points[-1][0])
        for sid, (_, _, s) in zip(sids, rows)])
    ids = sorted({r for found in at for row in found.values() for r in row})
    contexts = run_reader.contexts(client, ids)
    missing = [r for r in ids if contexts.get(r) is None]  # not in the first bytes
    for missed, doc in run_reader.result_dicts(client, missing).items():
        contexts[missed] = doc.get("context") or {}
    out = []
    for (row, side, series), sid, found in zip(rows, sids, at):
        for ts, value in series.points:
            own = _own_run(found.get(ts, []), contexts, side, sid)
            if own is None:
                return None
            out.append((row, side, own, value))
    return out


def _one_session(found: list[tuple[str, str, str, float]],
                 repetitions: dict[str, int]) -> bool:
    """Each pair number at most once a row and side, and every row with a pair in common."""
    seen: dict[tuple[str, str], set[int]] = {}
    for row, side, run_id, _ in found:
        rep = repetitions[run_id]
        taken = seen.setdefault((row, side), set())
        if rep in taken:
            return False  # two sessions of the same commits: no one pairing
        taken.add(rep)
    rows = {row for row, _, _, _ in found}
    return all(seen.get((r, BASELINE), set()) & seen.get((r, COMPARISON), set()) for r in rows)


def session_runs(client: redis.Redis, baseline: SeriesByRow, comparison: SeriesByRow,
                 metric: str) -> list[ABRun] | None:
    """The runs behind both sides' points as one interleaved session's (module doc), each
    with the point's value of ``metric``; None when they are not one session's."""
    rows = sorted(r for r in baseline if r in comparison and baseline[r].points
                  and comparison[r].points)
    if not rows:
        return None
    wanted = [(r, side, series[r]) for r in rows
              for side, series in ((BASELINE, baseline), (COMPARISON, comparison))]
    if _side_runs(client, wanted[:2]) is None:  # the first row: most reads stop here
        return None
    found = _side_runs(client, wanted)
    if found is None:
        return None
    docs = run_reader.result_documents(client, sorted({run_id for _, _, run_id, _ in found}))
    if len(docs) < len({run_id for _, _, run_id, _ in found}):
        return None
    repetitions = {r: d.context.repetition for r, d in docs.items()
                   if d.context.repetition is not None}
    if len(repetitions) < len(docs) or not _one_session(found, repetitions):
        return None
    return [ABRun(side, repetitions[run_id], replace(
        docs[run_id], metrics={**docs[run_id].metrics, metric: value}))
            for _row, side, run_id, value in found]


def _as_rows(report: ComparisonReport, runs: list[ABRun],
             sides: tuple[SeriesByRow, SeriesByRow]) -> ComparisonReport:
    """The engine's rows named as the datasink names them (``test @ topology`` when the
    platform's rows span several topologies), not as the runs alone would."""
    engine = keys_of(runs)
    names = {}
    for series in (*sides[0].items(), *sides[1].items()):
        row, sid = series[0], keys.parse_key(series[1].key)
        names[engine.key(sid.test_name, sid.topology)] = row
    return replace(report, rows=tuple(replace(r, test=names.get(r.test, r.test))
                                      for r in report.rows))


def judged_session(runs: list[ABRun], sides: tuple[SeriesByRow, SeriesByRow],
                   options: CompareOptions, problems: Iterable[str] = ()) -> ComparisonReport:
    """The engine's report of one session's runs (:func:`session_runs` of ``sides``), its
    rows named as the datasink names them; a row one side lacks says why."""
    base, comp = sides
    alone = sorted(r for r in set(base) | set(comp) if not (r in base and r in comp))
    report = judge(runs, Judging(options, paired=True, tests=alone), problems)
    return _as_rows(report, runs, sides)


def judged(client: redis.Redis, sides: tuple[SeriesByRow, SeriesByRow],
           options: CompareOptions, problems: Iterable[str] = (),
           rows: Iterable[str] | None = None) -> ComparisonReport:
    """The engine's report of both sides' points (``rows``: those to judge, default every
    row either side has): one session's pairs when they are (:func:`session_runs`), else
    two samples."""
    baseline, comparison = sides
    rows = sorted(set(baseline) | set(comparison)) if rows is None else list(rows)
    base = {r: baseline[r] for r in rows if r in baseline}
    comp = {r: comparison[r] for r in rows if r in comparison}
    runs = session_runs(client, base, comp, options.metric)
    if runs is not None:
        return judged_session(runs, (base, comp), options, problems)
    samples = {r: ([v for _, v in base[r].points] if r in base else [],
                   [v for _, v in comp[r].points] if r in comp else []) for r in rows}
    return judge_samples(samples, options, list(problems))
