"""What the branch page shows for one tracked branch and platform, read from the datasink:
its recent commits (when each ran, which tests, and why: a push, a pull request, or a
re-run the watch asked for to confirm a change), and the watch's alerts, notes and host
changes (:mod:`datasink.watch_store`)."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.datasink import alert_triage, keys, reader, run_reader, watch_store

RUNS_PER_TEST = 300  # the newest runs of each test looked at
MAX_RUNS = 20_000  # at most this many run contexts peeked for one page


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


def _recent_runs(client: redis.Redis, scope: keys.Scope) -> list[tuple[str, int, str]]:
    """(run id, start ms, test) of the newest :data:`RUNS_PER_TEST` runs of every test."""
    tests = reader.list_tests(client, scope)
    pipe = client.pipeline(transaction=False)
    for test in tests:
        pipe.zrevrangebyscore(keys.test_runs_key(scope, test), "+inf", "-inf", start=0,
                              num=RUNS_PER_TEST, withscores=True)
    runs = [(_text(r), int(score), test) for test, found in zip(tests, pipe.execute())
            for r, score in found]
    return sorted(runs, key=lambda r: -r[1])[:MAX_RUNS]


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
    """The branch's newest ``limit`` commits on ``platform`` (any when None)."""
    runs = _recent_runs(client, scope)
    contexts = run_reader.contexts(client, [r for r, _, _ in runs])
    rows: dict[str, CommitRow] = {}
    for run_id, start, test in runs:
        ctx = contexts.get(run_id)
        git = (ctx or {}).get("git") or {}
        sha = git.get("hash")
        if not ctx or git.get("branch") != branch or not isinstance(sha, str) or \
                (platform and ctx.get("platform") != platform):
            continue
        row = rows.get(sha)
        if row is None:
            if len(rows) >= limit:
                continue
            row = rows[sha] = CommitRow(sha, start, start, why=_why(sha, ctx, candidates))
        row.first_ms, row.last_ms = min(row.first_ms, start), max(row.last_ms, start)
        row.tests.add(test)
        row.runs += 1
    return sorted(rows.values(), key=lambda r: -r.last_ms)


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
