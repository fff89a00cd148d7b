"""Where the lab's tracked commits spend their instructions, per suite (this module owns the
key family ``ci.benchmarks.redis/lab-profile/{org}/{repo}/...``).

- ``.../{org}/{repo}/commit/{sha}``: hash, test -> JSON ``{"total": instructions per op,
  "functions": [[function, file, self instructions per op], ...], "groups": [group, ...]}``
  (most expensive first; ``groups`` are the suite's ``tested-groups``, absent in entries of
  agents older than it, read as ``unknown``);
- ``.../{org}/{repo}/branch/{branch}``: sorted set of the profiled commits of a tracked
  branch, scored by the time their first profile arrived, so "the previous profiled commit"
  is one ``ZREVRANGE`` away;
- ``.../{org}/{repo}/top-share/{branch}``, ``.../top-change/{branch}``: sorted sets,
  function -> share of all suites' instructions (%) and its change against the previous
  profiled commit (percentage points), of the branch's folded lab table (its top rows), and
  ``.../top-info/{branch}``: hash ``commit``, ``previous``, ``suites`` of that table. Derived,
  rewritten whole each time the table is folded, so a Grafana panel reads the table with one
  ``ZRANGE`` (``datasink.grafana``).

Written by the agent's watch (``agent.watch.WatchingPusher``) for every tracked-branch result
with a per-function count (the ``instructions`` profiler); read by the report's lab-wide
table (``analysis.lab_table``). Self counts, not inclusive ones: inclusive counts of the
dispatch path (``call``, ``processCommand``) are near the whole count in every suite and
would fill the table with callers. Read back as untrusted.
"""

from __future__ import annotations

import json
import re
import time
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads

PREFIX = "ci.benchmarks.redis/lab-profile"
MAX_FUNCTIONS = 200
MAX_FIELD_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9._:/-]{1,200}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")

UNKNOWN_GROUP = "unknown"
MAX_GROUPS = 16
TOP_KEY = PREFIX + "/{org}/{repo}/top-{kind}/{branch}"  # kind: share, change, info
TOP_KINDS = ("share", "change", "info")

SuiteProfile = tuple[float, list[tuple[str, str, float]]]  # total per op, functions
TopRow = tuple[str, float, float | None]  # function, share %, change in pp (None: no previous)


def _key(org: str, repo: str, *parts: str) -> str:
    for value in (org, repo, *parts):
        if not _NAME.match(value):
            raise ValueError(f"lab profile: {value!r} is not a name")
    return "/".join((PREFIX, org, repo, *parts))


def top_key(org: str, repo: str, branch: str, kind: str) -> str:
    """The derived key ``kind`` (``share``, ``change`` or ``info``) of a branch's lab table."""
    if kind not in TOP_KINDS:
        raise ValueError(f"lab profile: {kind!r} is not one of {TOP_KINDS}")
    for value in (org, repo, branch):
        if not _NAME.match(value):
            raise ValueError(f"lab profile: {value!r} is not a name")
    return TOP_KEY.format(org=org, repo=repo, kind=kind, branch=branch)


def _groups(groups: list[str] | tuple[str, ...]) -> list[str]:
    kept = sorted({g for g in groups if _NAME.match(g)})[:MAX_GROUPS]
    return kept or [UNKNOWN_GROUP]


def record(client: redis.Redis, where: tuple[str, str, str], sha: str, test: str,
           profile: SuiteProfile, groups: tuple[str, ...] = ()) -> None:
    """Store one suite's self counts (and its ``tested-groups``) for ``sha`` of the tracked
    branch ``where`` (org, repo, branch); the commit joins the branch's profiled commits on
    its first profile."""
    org, repo, branch = where
    if not _SHA.match(sha):
        raise ValueError(f"lab profile: {sha!r} is not a 40-hex commit")
    total, functions = profile
    rows = [[f[:200], (file or "")[:200], round(float(c), 3)]
            for f, file, c in sorted(functions, key=lambda r: -r[2])[:MAX_FUNCTIONS] if c > 0]
    pipe = client.pipeline()
    pipe.hset(_key(org, repo, "commit", sha), test,
              json.dumps({"total": float(total), "functions": rows,
                          "groups": _groups(groups)}))
    pipe.zadd(_key(org, repo, "branch", branch), {sha: time.time()}, nx=True)
    pipe.execute()


def profiled_commits(client: redis.Redis, where: tuple[str, str, str], last: int = 2) -> list[str]:
    """The branch's last ``last`` profiled commits, oldest first."""
    org, repo, branch = where
    raw: Any = client.zrevrange(_key(org, repo, "branch", branch), 0, last - 1)
    shas = [r.decode() if isinstance(r, bytes) else str(r) for r in raw]
    return [s for s in reversed(shas) if _SHA.match(s)]


def profiled_before(client: redis.Redis, where: tuple[str, str, str], sha: str) -> str | None:
    """The branch's profiled commit just before ``sha`` (None: ``sha`` is its first, or
    not one of them)."""
    org, repo, branch = where
    key = _key(org, repo, "branch", branch)
    rank: Any = client.zrank(key, sha)
    if rank is None or rank == 0:
        return None
    raw: Any = client.zrange(key, rank - 1, rank - 1)
    found = [r.decode() if isinstance(r, bytes) else str(r) for r in raw]
    return found[0] if found and _SHA.match(found[0]) else None


def load(client: redis.Redis, org: str, repo: str, sha: str) -> dict[str, SuiteProfile]:
    """test -> (total per op, [(function, file, self per op)]) of ``sha``; a garbled field
    is left out."""
    return load_suites(client, org, repo, sha)[0]


def load_suites(client: redis.Redis, org: str, repo: str,
                sha: str) -> tuple[dict[str, SuiteProfile], dict[str, tuple[str, ...]]]:
    """:func:`load`, and test -> its groups (``("unknown",)`` for an entry written without
    them, as older agents did)."""
    raw: Any = client.hgetall(_key(org, repo, "commit", sha))
    out: dict[str, SuiteProfile] = {}
    groups: dict[str, tuple[str, ...]] = {}
    for name, value in raw.items():
        test = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        if len(value) > MAX_FIELD_BYTES or not _NAME.match(test):
            continue
        try:
            doc = bounded_loads(value, 4)
            out[test] = (float(doc["total"]), [(str(f)[:200], str(file)[:200], float(c))
                                               for f, file, c in doc["functions"]])
            named = doc.get("groups")
            groups[test] = tuple(_groups([str(g) for g in named]
                                         if isinstance(named, list) else []))
        except (ValueError, TypeError, KeyError, AttributeError):
            out.pop(test, None)
            continue
    return out, groups


def carry_forward(client: redis.Redis, org: str, repo: str, base: str, head: str) -> int:
    """Copy the base commit's suite profiles to ``head`` where ``head`` has none (a push
    that did not re-run a suite, because its change does not reach it, spends what the
    base spent there); how many were copied. Read through :func:`load_suites` (validated)."""
    for sha in (base, head):
        if not _SHA.match(sha):
            raise ValueError(f"lab profile: {sha!r} is not a 40-hex commit")
    profiles, groups = load_suites(client, org, repo, base)
    if not profiles:
        return 0
    key = _key(org, repo, "commit", head)
    pipe = client.pipeline(transaction=False)
    for test, (total, functions) in profiles.items():
        pipe.hsetnx(key, test, json.dumps({"total": total, "functions": [list(f) for f in functions],
                                           "groups": list(groups[test])}))
    return sum(1 for added in pipe.execute() if added)


def store_top(client: redis.Redis, where: tuple[str, str, str],
              table: tuple[str, str | None, int], rows: list[TopRow]) -> None:
    """Replace the branch's derived keys with the folded table (``table``: commit, previous
    profiled commit or None, suites) and its ``rows``, in one transaction."""
    org, repo, branch = where
    commit, previous, suites = table
    keys = {kind: top_key(org, repo, branch, kind) for kind in TOP_KINDS}
    pipe = client.pipeline(transaction=True)
    pipe.delete(*keys.values())
    if rows:
        pipe.zadd(keys["share"], {f: round(share, 4) for f, share, _ in rows})
        changes = {f: round(change, 4) for f, _, change in rows if change is not None}
        if changes:
            pipe.zadd(keys["change"], changes)
    pipe.hset(keys["info"], mapping={"commit": commit, "previous": previous or "",
                                     "suites": str(suites)})
    pipe.execute()
