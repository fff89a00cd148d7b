"""Points measured on an artifact found bad: the builder's check of a kept tree
(builder/verify.py) found an incremental build that differs from a clean build of its
commit, so the commits built in that tree since its last good check were published from a
tree already wrong. Their runs are *suspect*: shown as such, never judged.

This module owns the key family ``ci.benchmarks.redis/{env}/{org}/{repo}/commits/<sha>:suspect``
(:func:`keys.suspect_key`): a hash, build variant -> JSON of a :class:`SuspectMark` (when the
mismatch was found, which check found it, why); the scope's set of marked commits
(:func:`keys.suspect_commits_key`), so a reader of a scope without marks pays one SCARD;
and the set of scopes with marks (:data:`keys.SUSPECT_SCOPES_KEY`). A run is suspect when a mark names its
commit and build variant, it started before the mark was made, and its artifact was not a
clean build (the builder publishes the clean build of the commit it checked, and drops the
suspects' cached artifacts so that a re-run builds them afresh). So a re-measure after the
mark supersedes the suspect points: nothing is deleted, the readers choose.

Read back as untrusted input (anyone with datasink write access): bounded JSON, shas and
names checked, unknown fields dropped.
"""

from __future__ import annotations

import json
import logging
import re
import time
from collections.abc import Callable, Iterable
from dataclasses import asdict, dataclass, field
from typing import Any, Protocol

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.datasink import keys, watch_store
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.results.document import RunResult

log = logging.getLogger(__name__)

_SHA = re.compile(r"^[0-9a-f]{40}$")
_NAME = re.compile(r"^[A-Za-z0-9._:/-]{1,200}$")
NOTE_KIND = "suspect-artifact"  # the branch log's kind (datasink/watch_store.py)
CLEAN = "clean"  # a run's context.build build_kind: never the bad (incremental) artifact


@dataclass(frozen=True)
class SuspectMark:
    """A commit's artifact of one build variant, published from a kept tree found bad."""

    sha: str
    build_variant: str
    reason: str  # the check's line (builder/verify.py CheckRecord.describe)
    checked: str = ""  # the commit whose check found the mismatch
    at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def text(self) -> str:
        """One line for ``rbs history``, the branch log and the pages."""
        by = f" (found by the check of {self.checked[:12]})" if self.checked else ""
        return (f"{self.sha[:12]} {self.build_variant}: measured on an incremental artifact "
                f"of a kept tree found bad{by}; its points are suspect until re-measured")


def mark(client: redis.Redis, scope: keys.Scope, marks: Iterable[SuspectMark],
         branch: str | None = None) -> int:
    """Store ``marks`` (one round trip) and, with ``branch``, a note per commit in the
    branch's watch log; how many were stored (malformed ones are refused)."""
    good = [m for m in marks if _SHA.match(m.sha) and _NAME.match(m.build_variant)]
    if not good:
        return 0
    pipe = client.pipeline(transaction=False)
    for m in good:
        pipe.hset(keys.suspect_key(scope, m.sha), m.build_variant, json.dumps(asdict(m)))
        pipe.sadd(keys.suspect_commits_key(scope), m.sha)
    pipe.sadd(keys.SUSPECT_SCOPES_KEY, scope.path)
    pipe.execute()
    if branch:
        where = watch_store.Branch(scope.github_org, scope.github_repo, branch)
        for m in good:
            watch_store.add_log(client, where, NOTE_KIND, m.sha, m.text())
        _reject_candidates(client, where, {m.sha for m in good})
    return len(good)


def _reject_candidates(client: redis.Redis, where: watch_store.Branch, shas: set[str]) -> None:
    """A candidate the watch raised on a suspect point, not yet being confirmed, is
    rejected: it was a step of the bad artifact (one being confirmed is judged on the good
    points only: notify/watch_confirm.py)."""
    for c in watch_store.candidates(client, where, "candidate"):
        if c.before in shas or c.after in shas:
            c.state, c.reason = "rejected", "measured on an artifact found bad (suspect)"
            watch_store.save_candidate(client, where, c)


def read(client: redis.Redis, scope: keys.Scope,
         shas: Iterable[str]) -> dict[tuple[str, str], SuspectMark]:
    """(commit, build variant) -> its mark, for the commits of ``shas``: the scope's marked
    commits (one SMEMBERS, what a scope without marks pays), then the marks of those of
    ``shas`` (a second round trip, only when one is marked; a history page asks about its
    2,000 points' commits, a look-up each before)."""
    asked = {s for s in shas if s and _SHA.match(s)}
    if not asked:
        return {}
    marked = {_text(m) for m in client.smembers(keys.suspect_commits_key(scope))}
    wanted = sorted(asked & marked)
    if not wanted:
        return {}
    pipe = client.pipeline(transaction=False)
    for sha in wanted:
        pipe.hgetall(keys.suspect_key(scope, sha))
    out: dict[tuple[str, str], SuspectMark] = {}
    for sha, found in zip(wanted, pipe.execute()):
        for variant, raw in found.items():
            m = _decode(sha, _text(variant), raw)
            if m is not None:
                out[(sha, m.build_variant)] = m
    return out


def _decode(sha: str, variant: str, raw: Any) -> SuspectMark | None:
    try:
        data = bounded_loads(raw)
        if not isinstance(data, dict) or not _NAME.match(variant):
            return None
        return SuspectMark(sha, variant, str(data.get("reason", ""))[:500],
                           str(data.get("checked", ""))[:40], int(data.get("at_ms", 0)))
    except (TypeError, ValueError):
        return None


def any_marked(client: redis.Redis, scopes: Iterable[keys.Scope]) -> bool:
    """Whether any commit of ``scopes`` has a mark (one round trip)."""
    pipe = client.pipeline(transaction=False)
    for scope in scopes:
        pipe.scard(keys.suspect_commits_key(scope))
    return any(int(n) for n in pipe.execute())


def marked_commits(client: redis.Redis) -> set[str]:
    """Every commit marked, over the datasink's scopes (``rbs lab status``)."""
    pipe = client.pipeline(transaction=False)
    for path in sorted(_text(p) for p in client.smembers(keys.SUSPECT_SCOPES_KEY)):
        try:
            pipe.smembers(keys.suspect_commits_key(keys.Scope.from_path(path)))
        except ValueError:  # not a scope path: nothing of ours
            continue
    return {_text(m) for found in pipe.execute() for m in found}


def commit_of(doc: RunResult) -> str:
    """The commit a run measured (its git context, else what the server said)."""
    return doc.context.git.hash or doc.redis_git_sha or ""


def suspect_of(doc: RunResult, marks: dict[tuple[str, str], SuspectMark]) -> SuspectMark | None:
    """The mark that makes ``doc`` suspect, or None: its commit and variant are marked, it
    started before the mark and its artifact was not a clean build."""
    return mark_of(marks, (commit_of(doc), doc.context.build_variant),
                   str(doc.context.build.get("build_kind", "")), doc.start_ms)


def mark_of(marks: dict[tuple[str, str], SuspectMark], where: tuple[str, str],
            build_kind: str, start_ms: int) -> SuspectMark | None:
    """:func:`suspect_of` from a run's (commit, build variant), its artifact's build kind
    and its start time (a point's timestamp), as a stored context says them."""
    found = marks.get(where)
    if found is None or build_kind == CLEAN:
        return None
    return found if start_ms < found.at_ms else None


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Check(Protocol):
    """What the builder's check of a kept tree says (builder/verify.py CheckRecord)."""

    @property
    def sha(self) -> str: ...

    @property
    def suspect(self) -> list[str]: ...

    def describe(self) -> str: ...


Marker = Callable[[BuildRequest, str, Check], None]


def marker(client: redis.Redis) -> Marker:
    """The builder's mismatch hook (``rbs builder --datasink``): marks the check's suspect
    commits of the request's repository, notes them on its branch, and logs (never raises)
    a datasink it cannot reach: the build goes on."""

    def mark_check(request: BuildRequest, variant: str, check: Check) -> None:
        scope = keys.Scope(request.triggering_env, request.org, request.repo)
        found = [SuspectMark(sha, variant, check.describe()[:300], check.sha)
                 for sha in check.suspect]
        try:
            mark(client, scope, found, request.branch)
        except redis.RedisError as exc:
            log.error("suspect points of %s not marked: %s", ", ".join(check.suspect), exc)

    return mark_check
