"""Recording a maintainer's word on an alert issue (``rbs api``'s ``on_triage``): the issue
is matched to the alert of one of the tracked branches (datasink/alert_triage.py) and the
word is kept with it; the answer says what was recorded, or why nothing was."""

from __future__ import annotations

import time

import redis

from redis_benchmarks_spec.api.triage_command import TriageAsk
from redis_benchmarks_spec.datasink import alert_triage
from redis_benchmarks_spec.datasink.watch_store import Branch


def record(datasink: redis.Redis, branches: tuple[str, ...], ask: TriageAsk,
           source: str | None = None) -> str:
    """Keep ``ask`` with its alert; the answer to post on the issue."""
    for branch in branches:
        where = Branch(ask.issue.org, ask.issue.repo, branch)
        sha = alert_triage.alert_of_issue(datasink, where, ask.issue.number, ask.body)
        if sha is None:
            continue
        triage = alert_triage.Triage(ask.state, ask.by, int(time.time() * 1000),
                                     source or ask.source, ask.fixed_by)
        alert_triage.set_triage(datasink, where, sha, triage)
        return f"recorded for the alert at {sha[:10]} on {branch}: {triage.words}."
    return (f"no alert of the lab's watch on {', '.join(branches)} is linked to issue "
            f"#{ask.issue.number}; nothing recorded.")
