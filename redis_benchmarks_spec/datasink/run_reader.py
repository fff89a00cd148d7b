"""Reading run documents from the datasink: the tests' run indexes (run id by start time)
and the stored documents, whole (:mod:`.documents` decodes them) or their first bytes.
Series are read by :mod:`.reader`."""

from __future__ import annotations

from typing import Any

import redis

from redis_benchmarks_spec.datasink import documents, keys
from redis_benchmarks_spec.datasink.reader import list_tests, scopes
from redis_benchmarks_spec.results.document import RunResult


class RunNotFoundError(KeyError):
    """No result document is stored under this run id."""


def list_runs(client: redis.Redis, scope: keys.Scope) -> list[str]:
    """Run ids whose result document is stored, in ``scope`` (the tests' run indexes)."""
    tests = list_tests(client, scope)
    return sorted({r for ids in run_ids_of_tests(client, scope, tests) for r in ids})


def count_runs(client: redis.Redis) -> int:
    """How many runs are stored, over every scope (ZCARD of the tests' run indexes)."""
    pipe = client.pipeline(transaction=False)
    for scope in scopes(client):
        for test in list_tests(client, scope):
            pipe.zcard(keys.test_runs_key(scope, test))
    return sum(int(n) for n in pipe.execute())


def run_ids(client: redis.Redis, scope: keys.Scope, test_name: str,
            from_ms: int | None = None, to_ms: int | None = None) -> list[str]:
    """Run ids of ``test_name`` whose run started in ``from_ms``..``to_ms``, oldest first."""
    low = "-inf" if from_ms is None else from_ms
    high = "+inf" if to_ms is None else to_ms
    return [_text(m) for m in client.zrangebyscore(keys.test_runs_key(scope, test_name),
                                                   low, high)]


def run_ids_of_tests(client: redis.Redis, scope: keys.Scope, test_names: list[str],
                     from_ms: int | None = None, to_ms: int | None = None) -> list[list[str]]:
    """:func:`run_ids` of each of ``test_names`` (in that order), in one round trip."""
    pipe = client.pipeline(transaction=False)
    for name in test_names:
        pipe.zrangebyscore(keys.test_runs_key(scope, name),
                           "-inf" if from_ms is None else from_ms,
                           "+inf" if to_ms is None else to_ms)
    return [[_text(m) for m in found] for found in pipe.execute()]


def run_ids_at(client: redis.Redis, scope: keys.Scope, test_name: str,
               starts_ms: list[int]) -> list[list[str]]:
    """Run ids of ``test_name`` that started at each of ``starts_ms``, in one round trip."""
    pipe = client.pipeline(transaction=False)
    for ts in starts_ms:
        pipe.zrangebyscore(keys.test_runs_key(scope, test_name), ts, ts)
    return [[_text(m) for m in found] for found in pipe.execute()]


def run_ids_between(client: redis.Redis,
                    spans: list[tuple[keys.Scope, str, int, int]]) -> list[dict[int, list[str]]]:
    """Per (scope, test, first ms, last ms), the run ids of the test that started in that
    span, by start time (each time's ids in :func:`run_ids_at`'s order), in one round trip:
    one range of each test's run index rather than one look-up per point."""
    pipe = client.pipeline(transaction=False)
    for scope, test_name, low, high in spans:
        pipe.zrangebyscore(keys.test_runs_key(scope, test_name), low, high, withscores=True)
    out = []
    for found in pipe.execute():
        at: dict[int, list[str]] = {}
        for member, score in found:  # by score, then by member, as ZRANGEBYSCORE sorts
            at.setdefault(int(score), []).append(_text(member))
        out.append(at)
    return out


def result_document(client: redis.Redis, run_id: str) -> RunResult:
    """The result document stored for ``run_id`` (the datasink's copy: see
    :mod:`.documents` for what it holds, whole or folded)."""
    key = keys.run_key(run_id)
    raw = client.get(key)
    if raw is None:
        raise RunNotFoundError(f"no result document at {key}")
    return documents.decode(raw)


def result_documents(client: redis.Redis, run_ids: list[str]) -> dict[str, RunResult]:
    """The stored documents of ``run_ids`` in one round trip (MGET); ids without one are
    left out."""
    if not run_ids:
        return {}
    values = client.mget([keys.run_key(r) for r in run_ids])
    return {run_id: documents.decode(raw) for run_id, raw in zip(run_ids, values)
            if raw is not None}


def result_dicts(client: redis.Redis, run_ids: list[str]) -> dict[str, dict[str, Any]]:
    """:func:`result_documents` as the stored JSON objects, for readers that look at a
    field or two of many documents before building the few they keep."""
    if not run_ids:
        return {}
    values = client.mget([keys.run_key(r) for r in run_ids])
    return {run_id: documents.decode_dict(raw) for run_id, raw in zip(run_ids, values)
            if raw is not None}


def contexts(client: redis.Redis, run_ids: list[str]) -> dict[str, dict[str, Any] | None]:
    """Each stored run's ``context`` (platform, commit, topology...) read from the first
    bytes of its document (GETRANGE, one round trip): which runs to fetch whole, without
    fetching them all. None for a run whose context is not in those bytes (fetch it)."""
    pipe = client.pipeline(transaction=False)
    for run_id in run_ids:
        pipe.getrange(keys.run_key(run_id), 0, documents.HEAD_BYTES - 1)
    return {run_id: documents.peek_context(head) if head else None
            for run_id, head in zip(run_ids, pipe.execute()) if head}


def run_document(client: redis.Redis, run_id: str) -> RunResult:
    """The result document of ``run_id`` (alias of :func:`result_document`)."""
    return result_document(client, run_id)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
