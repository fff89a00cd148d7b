"""What the branch page shows for one tracked branch and platform, read from the datasink:
its recent commits (when each ran, which tests, and why: a push, a pull request, or a
re-run the watch asked for to confirm a change), and the watch's alerts, notes and host
changes (:mod:`datasink.watch_store`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC
from redis_benchmarks_spec.datasink import (
    alert_triage,
    commit_runs,
    keys,
    reader,
    run_reader,
    watch_store,
)

COMMITS_LOOKED_AT = 40  # newest commits of the scope read per round trip
MAX_ROUNDS = 5  # at most this many rounds to find the branch's commits among the others


@dataclass
class CommitRow:
    """One commit of the branch on the platform: when it ran, what, and why."""

    sha: str
    first_ms: int
    last_ms: int
    tests: set[str] = field(default_factory=set)
    runs: int = 0
    why: list[str] = field(default_factory=list)
    marks: list[str] = field(default_factory=list)


@dataclass
class BranchView:
    """The branch page: its commits (newest first), the watch's log and its candidates."""

    scope: keys.Scope
    branch: str
    platform: str | None
    platforms: list[str]
    commits: list[CommitRow]
    log: list[dict[str, str]]
    candidates: list[watch_store.Candidate]
    alerts: dict[str, dict[str, Any]]
    triages: dict[str, alert_triage.Triage]
    precision: list[alert_triage.Precision]


def _commit_series(client: redis.Redis, shas: list[str], platform: str | None,
                   metric: str) -> list[list[reader.Series]]:
    """Each commit's by.hash series of ``metric`` (on ``platform``), one round trip."""
    pipe = client.pipeline(transaction=False)
    for sha in shas:
        # the commit first: RedisTimeSeries starts from the first filter and intersects
        # (datasink/reader.py), and every by.hash series carries by=hash
        filters = [f"hash={sha}", f"{keys.LABEL_METRIC}={keys.label_value(metric)}"]
        if platform:
            filters.append(f"{keys.LABEL_PLATFORM}={platform}")
        filters.append("by=hash")
        pipe.execute_command("TS.MRANGE", "-", "+", "FILTER", *filters)
    return [[reader.Series(_text(k), {}, [(int(t), float(v)) for t, v in pts])
             for k, _labels, pts in _entries(reply)] for reply in pipe.execute()]


def _entries(reply: Any) -> list[tuple[Any, Any, Any]]:
    if isinstance(reply, dict):
        return [(key, value[0], value[-1]) for key, value in reply.items()]
    return [(entry[0], entry[1], entry[2]) for entry in reply]


def _from_series(client: redis.Redis, scope: keys.Scope, shas: list[str],
                 platform: str | None) -> list[commit_runs.CommitRuns | None]:
    """Commits the writer kept nothing of (pushed before it did): read from their by.hash
    series of the default metric (its points are their runs), one round trip each."""
    found = _commit_series(client, shas, platform, DEFAULT_METRIC)
    firsts = [(keys.parse_key(series[0].key), series[0].points[0][0])
              if series and series[0].points else None for series in found]
    pipe = client.pipeline(transaction=False)
    for first in firsts:
        if first is not None:
            pipe.zrangebyscore(keys.test_runs_key(scope, first[0].test_name), first[1],
                               first[1], start=0, num=1)
    ids = iter(pipe.execute())
    out: list[commit_runs.CommitRuns | None] = []
    for series, first in zip(found, firsts):
        run_id = _first(next(ids)) if first is not None else None
        if not series or run_id is None:
            out.append(None)
            continue
        out.append(commit_runs.CommitRuns(
            sum(len(s.points) for s in series),
            min(s.points[0][0] for s in series if s.points), run_id,
            {keys.parse_key(s.key).test_name for s in series}))
    return out


def _commits(client: redis.Redis, scope: keys.Scope, shas: list[str],
             platform: str | None) -> list[commit_runs.CommitRuns | None]:
    """Each commit's runs on ``platform`` (every one when None): as the writer kept them
    (:mod:`datasink.commit_runs`), else from its series."""
    every = reader.list_platforms(client, scope)
    kept = commit_runs.read(client, scope, shas, ([platform] if platform else every, every))
    unknown = [sha for sha, k in zip(shas, kept) if k == commit_runs.UNKNOWN]
    old = dict(zip(unknown, _from_series(client, scope, unknown, platform) if unknown else []))
    return [k if isinstance(k, commit_runs.CommitRuns) else old.get(sha)
            for sha, k in zip(shas, kept)]


def _first(found: list[Any]) -> str | None:
    return _text(found[0]) if found else None


def _why(sha: str, ctx: dict[str, Any], candidates: list[watch_store.Candidate]) -> list[str]:
    git = ctx.get("git") or {}
    out = [f"pull request #{git['pr']}" if git.get("pr") else "push"]
    for c in candidates:
        if sha in (c.before, c.after) and c.reruns:
            side = "before" if sha == c.before else "after"
            out.append(f"re-run ({side} side) to confirm the change at {c.after[:10]} "
                       f"({c.state})")
    return out


def recent_commits(client: redis.Redis, scope: keys.Scope, branch: str,
                   platform: str | None, candidates: list[watch_store.Candidate],
                   limit: int = 30) -> list[CommitRow]:
    """The branch's newest ``limit`` commits on ``platform`` (any when None): the scope's
    commits newest first (the writer's ``hash_last`` index), each with its runs there as
    the writer keeps them (:mod:`datasink.commit_runs`; a commit pushed before, from its
    by.hash series of the default metric), kept when its first run there was filed on
    ``branch``. Commits whose runs gc removed are not listed."""
    idx = keys.index_keys(scope)
    rows: list[CommitRow] = []
    for round_ in range(MAX_ROUNDS):
        start = round_ * COMMITS_LOOKED_AT
        reply: Any = client.zrevrange(idx.hash_last, start, start + COMMITS_LOOKED_AT - 1,
                                      withscores=True)
        newest = [(_text(m), int(score)) for m, score in reply]
        found = _commits(client, scope, [sha for sha, _ in newest], platform)
        peeked = run_reader.contexts(client, [f.first_run for f in found if f])
        for (sha, last), runs in zip(newest, found):
            git = (peeked.get(runs.first_run) or {}).get("git") or {} if runs else {}
            if runs is None or git.get("branch") != branch or len(rows) >= limit:
                continue
            rows.append(CommitRow(sha, runs.first_ms, last, runs.tests, runs.runs,
                                  _why(sha, peeked.get(runs.first_run) or {}, candidates)))
        if len(rows) >= limit or len(newest) < COMMITS_LOOKED_AT:
            break
    return rows


def branch_view(client: redis.Redis, scope: keys.Scope, branch: str,
                platform: str | None) -> BranchView:
    """Everything the branch page shows (module doc)."""
    where = watch_store.Branch(scope.github_org, scope.github_repo, branch)
    candidates, _bad = watch_store.scan_candidates(client, where)
    commits = recent_commits(client, scope, branch, platform, candidates)
    log = watch_store.log_lines(client, where)
    if platform:  # host changes of other platforms are not this page's
        log = [x for x in log if x["kind"] != "host-changed" or
               x["text"].startswith(f"host changed on {platform} ")]
    marks: dict[str, list[str]] = {}
    for line in log:
        marks.setdefault(line["sha"], []).append(line["kind"])
    for row in commits:
        row.marks = marks.get(row.sha, [])
    found = alert_triage.precision(client, where)
    return BranchView(scope, branch, platform, reader.list_platforms(client, scope), commits,
                      log[::-1], candidates[::-1], watch_store.alert_summaries(client, where),
                      alert_triage.triages(client, where),
                      [p for p in found if platform in (None, p.platform)])


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
