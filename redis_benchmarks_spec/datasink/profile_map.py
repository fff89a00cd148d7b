"""Which functions each suite executes, per commit: the map the suite selection reads.

Beside the time series in the datasink, one hash per commit (this module owns the key
family ``ci.benchmarks.redis/profile-map/{org}/{repo}/{sha}``): field = test name, value =
JSON of the functions its callgrind window executed, with source file and inclusive
instructions per operation, most expensive first. An agent that ran a test with the
``instructions`` profiler writes it (:func:`record_results`), so the tracked branch's map is
refreshed with every commit it benchmarks; the agent of a pull request reads its base
commit's map (:func:`load`). Read back as untrusted (anyone with datasink write access).
"""

from __future__ import annotations

import json
import logging
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.results.document import RunResult

log = logging.getLogger(__name__)

PREFIX = "ci.benchmarks.redis/profile-map"
MAX_FUNCTIONS = 400  # per test: the functions past these carry a negligible share
MAX_FIELD_BYTES = 256 * 1024
_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


@dataclass(frozen=True)
class FunctionCost:
    """One function a suite executes: its source file (base name) and inclusive cost."""

    function: str
    file: str
    inclusive_per_op: float


def map_key(org: str, repo: str, sha: str) -> str:
    for what, value in (("org", org), ("repo", repo)):
        if not _NAME.match(value):
            raise ValueError(f"profile map: {what} {value!r} is not a name")
    if not _SHA.match(sha):
        raise ValueError(f"profile map: {sha!r} is not a 40-hex commit")
    return f"{PREFIX}/{org}/{repo}/{sha}"


def _functions(path: Path) -> list[list[Any]]:
    entries = json.loads(path.read_text())
    out = []
    for e in sorted(entries, key=lambda e: -float(e.get("inclusive_per_op", 0.0))):
        name, file = e.get("function"), e.get("file")
        if isinstance(name, str) and isinstance(file, str) and file not in ("", "???"):
            out.append([name[:200], Path(file).name[:200], float(e["inclusive_per_op"])])
    return out[:MAX_FUNCTIONS]


def record_results(client: redis.Redis, results: list[RunResult]) -> int:
    """Store the per-function costs of every result that has them; how many were stored."""
    stored = 0
    for result in results:
        path = result.paths.get("instructions_functions")
        git = result.context.git
        if not path or not result.ok or git.hash is None or not _SHA.match(git.hash):
            continue
        try:
            functions = _functions(Path(path))
        except (OSError, ValueError, KeyError, TypeError) as exc:
            log.warning("profile map of %s not stored: %s", result.test_name, exc)
            continue
        if functions:
            client.hset(map_key(git.org, git.repo, git.hash), result.test_name,
                        json.dumps(functions))
            stored += 1
    return stored


def load(client: redis.Redis, org: str, repo: str, sha: str) -> dict[str, list[FunctionCost]]:
    """The commit's map: test -> functions it executes (a garbled field is left out)."""
    raw: Any = client.hgetall(map_key(org, repo, sha))
    out: dict[str, list[FunctionCost]] = {}
    for field_name, value in raw.items():
        test = field_name.decode(errors="replace") if isinstance(field_name, bytes) else field_name
        try:
            if len(value) > MAX_FIELD_BYTES or not _NAME.match(test):
                raise ValueError("too large or badly named")
            out[test] = [FunctionCost(str(n)[:200], str(f)[:200], float(c))
                         for n, f, c in bounded_loads(value, 4)][:MAX_FUNCTIONS]
        except (ValueError, TypeError) as exc:
            log.warning("profile map %s/%s: field %r unreadable (%s)", org, repo, test, exc)
    return out


def carry_forward(client: redis.Redis, org: str, repo: str, base: str, head: str) -> int:
    """Copy the base commit's entries into the head's map where the head has none (a
    push that did not run a suite leaves its profile as it was); how many were copied.
    Entries are read through :func:`load` (validated), never copied raw."""
    key = map_key(org, repo, head)
    pipe = client.pipeline(transaction=False)
    tests = []
    for test, functions in load(client, org, repo, base).items():
        pipe.hsetnx(key, test, json.dumps([[f.function, f.file, f.inclusive_per_op]
                                           for f in functions]))
        tests.append(test)
    return sum(1 for added in pipe.execute() if added) if tests else 0
