"""A commit's runs per platform, kept by the writer for the readers that list commits.

Finding a commit's runs through its by.hash series costs the server a walk of the
``hash=<sha>`` label index: ~12 ms for a commit every suite ran on 4 platforms (11,020
series over 5 metrics), so a page listing 40 commits spent half a second in the index. The
writer therefore keeps, per scope, commit and platform (:func:`keys.commit_run_keys`):

- ``...:runs``: the run ids, scored by their points' time (a re-push adds nothing: the
  member is the run id); its size is the runs, its first the commit's first run there;
- ``...:tests``: the series test names the runs wrote (a sweep's swept values apart);
- ``...:series``: their by.hash series, named without the metric (``test/variant/
  deployment``, :func:`keys.series_member`): a comparison of two commits reads each
  series by its key (one ``TS.RANGE`` each, pipelined: ~15 ms for a commit's 2,204 series
  of a metric on 4 platforms) instead of a ``TS.MRANGE`` whose label-index query alone
  costs the server ~30 ms there (:mod:`inputs.comparison_series`).

Both are added in the push's round trip, for every run with a by.hash series (a commit
known). gc deletes them with the commit's by.hash series (:mod:`.retention`). A commit
pushed before they existed has neither on any platform: :func:`read` says so and the
reader falls back to its series.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any, Protocol

import redis

from redis_benchmarks_spec.datasink import keys
from redis_benchmarks_spec.results.document import RunResult


class Planned(Protocol):
    """What the writer knows of a run it pushes (:class:`datasink.writer.PlannedRun`)."""

    result: RunResult
    ts: int
    names: keys.RunNames
    series: list[keys.SeriesId]


class Queue(Protocol):
    """Where the writer queues a round trip's commands (:class:`datasink.wire.Batch`)."""

    def queue(self, owners: list[RunResult], *args: Any) -> int: ...


def queue(batch: Queue, plans: Iterable[Planned]) -> None:
    """Queue the ``runs`` and ``tests`` entries of every run with a by.hash series: one
    ZADD and one SADD per (scope, commit, platform) of the batch."""
    runs: dict[str, list[Planned]] = {}
    tests: dict[str, dict[str, list[RunResult]]] = {}
    series: dict[str, dict[str, list[RunResult]]] = {}
    for plan in plans:
        commits: dict[str, dict[str, None]] = {}  # sha -> its series' members, in order
        for sid in plan.series:
            if sid.side.kind == "hash":
                commits.setdefault(sid.side.value, {})[keys.series_member(sid)] = None
        for sha, members in commits.items():
            names = keys.commit_run_keys(plan.names.scope, sha, plan.result.context.platform)
            runs.setdefault(names.runs, []).append(plan)
            tests.setdefault(names.tests, {}).setdefault(plan.names.test_name, []).append(
                plan.result)
            for member in members:
                series.setdefault(names.series, {}).setdefault(member, []).append(plan.result)
    for key, found in runs.items():
        batch.queue([p.result for p in found], "ZADD", key,
                    *[a for p in found for a in (p.ts, p.result.run_id)])
    for kept in (tests, series):
        for key, by_member in kept.items():
            owners = list({id(r): r for rs in by_member.values() for r in rs}.values())
            batch.queue(owners, "SADD", key, *by_member)


@dataclass
class CommitRuns:
    """A commit's runs on the platforms read: how many, the first point's time and its run
    (whose context says why the commit ran), and the tests."""

    runs: int
    first_ms: int
    first_run: str
    tests: set[str]


KEPT = "kept"  # the commit's runs are kept, none on the platforms asked
UNKNOWN = "unknown"  # nothing kept of the commit: pushed before, or gc deleted them


def read(client: redis.Redis, scope: keys.Scope, shas: list[str],
         platforms: tuple[list[str], list[str]]) -> list[CommitRuns | str]:
    """Per commit, its runs on ``platforms[0]`` together, or :data:`KEPT` when there are
    none there but some on one of ``platforms[1]`` (every platform of the scope), else
    :data:`UNKNOWN`. One round trip."""
    asked, every = platforms
    pipe = client.pipeline(transaction=False)
    for sha in shas:
        names = [keys.commit_run_keys(scope, sha, p) for p in asked]
        for n in names:
            pipe.zcard(n.runs)
            pipe.zrange(n.runs, 0, 0, withscores=True)
        pipe.sunion([n.tests for n in names])
        pipe.exists(*[keys.commit_run_keys(scope, sha, p).runs for p in every or asked])
    replies = iter(pipe.execute())
    out: list[CommitRuns | str] = []
    for _sha in shas:
        found = [(int(next(replies)), next(replies)) for _ in asked]
        tests = {_text(t) for t in next(replies)}
        anywhere = int(next(replies))
        firsts = [(int(first[0][1]), _text(first[0][0])) for n, first in found if n and first]
        out.append(CommitRuns(sum(n for n, _ in found), *min(firsts), tests) if firsts
                   else KEPT if anywhere else UNKNOWN)
    return out


def delete(pipe: Any, scope: keys.Scope, sha: str, platforms: Iterable[str]) -> None:
    """Queue the deletion of a commit's entries on ``platforms`` (gc, with its series)."""
    for platform in platforms:
        names = keys.commit_run_keys(scope, sha, platform)
        pipe.unlink(names.runs, names.tests, names.series)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
