"""Where the lab's tracked commits spend their instructions, per suite (this module owns the
key family ``ci.benchmarks.redis/lab-profile/{org}/{repo}/...``).

- ``.../{org}/{repo}/commit/{sha}``: hash, test -> JSON ``{"total": instructions per op,
  "functions": [[function, file, self instructions per op], ...]}`` (most expensive first);
- ``.../{org}/{repo}/branch/{branch}``: sorted set of the profiled commits of a tracked
  branch, scored by the time their first profile arrived, so "the previous profiled commit"
  is one ``ZREVRANGE`` away.

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

SuiteProfile = tuple[float, list[tuple[str, str, float]]]  # total per op, functions


def _key(org: str, repo: str, *parts: str) -> str:
    for value in (org, repo, *parts):
        if not _NAME.match(value):
            raise ValueError(f"lab profile: {value!r} is not a name")
    return "/".join((PREFIX, org, repo, *parts))


def record(client: redis.Redis, where: tuple[str, str, str], sha: str, test: str,
           profile: SuiteProfile) -> None:
    """Store one suite's self counts for ``sha`` of the tracked branch ``where`` (org, repo,
    branch); the commit joins the branch's profiled commits on its first profile."""
    org, repo, branch = where
    if not _SHA.match(sha):
        raise ValueError(f"lab profile: {sha!r} is not a 40-hex commit")
    total, functions = profile
    rows = [[f[:200], (file or "")[:200], round(float(c), 3)]
            for f, file, c in sorted(functions, key=lambda r: -r[2])[:MAX_FUNCTIONS] if c > 0]
    pipe = client.pipeline()
    pipe.hset(_key(org, repo, "commit", sha), test,
              json.dumps({"total": float(total), "functions": rows}))
    pipe.zadd(_key(org, repo, "branch", branch), {sha: time.time()}, nx=True)
    pipe.execute()


def profiled_commits(client: redis.Redis, where: tuple[str, str, str], last: int = 2) -> list[str]:
    """The branch's last ``last`` profiled commits, oldest first."""
    org, repo, branch = where
    raw: Any = client.zrevrange(_key(org, repo, "branch", branch), 0, last - 1)
    shas = [r.decode() if isinstance(r, bytes) else str(r) for r in raw]
    return [s for s in reversed(shas) if _SHA.match(s)]


def load(client: redis.Redis, org: str, repo: str, sha: str) -> dict[str, SuiteProfile]:
    """test -> (total per op, [(function, file, self per op)]) of ``sha``; a garbled field
    is left out."""
    raw: Any = client.hgetall(_key(org, repo, "commit", sha))
    out: dict[str, SuiteProfile] = {}
    for name, value in raw.items():
        test = name.decode(errors="replace") if isinstance(name, bytes) else str(name)
        if len(value) > MAX_FIELD_BYTES or not _NAME.match(test):
            continue
        try:
            doc = bounded_loads(value, 4)
            out[test] = (float(doc["total"]), [(str(f)[:200], str(file)[:200], float(c))
                                               for f, file, c in doc["functions"]])
        except (ValueError, TypeError, KeyError):
            continue
    return out
