"""What an agent recorded for one build event, read back for ``rbs bisect`` and validated.

The agents keep every test's result documents in the broker (``<prefix>:results:<event>:
<platform>``, written by :mod:`agent.ledger` before the datasink push and the final status),
so a finished event's results are there when the follower sees the platform done. Anyone
with broker write access can write that hash: the value is bounded, decoded with the one
result definition (:meth:`RunResult.from_dict`), and checked against the event it should
belong to (test name, commit, platform) and for a finite, positive metric.
"""

from __future__ import annotations

import math
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_json_loads
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.results.document import RunResult

#: a result document list larger than this is refused (one test's documents are ~10 KiB)
MAX_RESULTS_BYTES = 4 * 1024 * 1024


class ResultRejected(ValueError):
    """The stored results are missing, malformed or not the expected test's."""


def _decode(raw: Any, where: str) -> list[RunResult]:
    if raw is None:
        raise ResultRejected(f"{where}: no result recorded")
    if len(raw) > MAX_RESULTS_BYTES:
        raise ResultRejected(f"{where}: {len(raw)} bytes (limit {MAX_RESULTS_BYTES})")
    try:
        docs = bounded_json_loads(raw)
        if not isinstance(docs, list) or not all(isinstance(d, dict) for d in docs):
            raise ResultRejected(f"{where}: not a list of result documents")
        return [RunResult.from_dict(d) for d in docs]
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        if isinstance(exc, ResultRejected):
            raise
        raise ResultRejected(f"{where}: malformed result document ({exc})") from None


def event_metric(client: redis.Redis, names: StreamNames, key: tuple[str, str],
                 test: str, sha: str, metric: str) -> float:
    """The median of ``metric`` over the agent's successful runs of ``test`` for the event
    ``key`` = (event id, platform) built from ``sha``."""
    event_id, platform = key
    where = f"results of {test} for event {event_id} on {platform}"
    raw: Any = client.hget(names.ledger_results_key(event_id, platform), test)
    results = _decode(raw, where)
    values = []
    for result in results:
        if result.test_name != test or result.context.git.hash != sha or \
                result.context.platform != platform:
            raise ResultRejected(f"{where}: a document of {result.test_name!r} at "
                                 f"{result.context.git.hash!r} on "
                                 f"{result.context.platform!r}")
        if not result.ok:
            raise ResultRejected(f"{where}: the run failed: {str(result.reason)[:200]}")
        value = result.metrics.get(metric) if isinstance(result.metrics, dict) else None
        if not isinstance(value, (int, float)) or not math.isfinite(value) or value <= 0:
            raise ResultRejected(f"{where}: no valid {metric} ({value!r})")
        values.append(float(value))
    if not values:
        raise ResultRejected(f"{where}: the platform ran no such test")
    values.sort()
    mid = len(values) // 2
    return values[mid] if len(values) % 2 else (values[mid - 1] + values[mid]) / 2


def has_metric(client: redis.Redis, names: StreamNames, key: tuple[str, str], test: str,
               metric: str) -> bool:
    """True when every stored document of the event carries ``metric`` (auto choice)."""
    raw: Any = client.hget(names.ledger_results_key(*key), test)
    try:
        results = _decode(raw, "")
    except ResultRejected:
        return False
    return bool(results) and all(isinstance(r.metrics, dict) and metric in r.metrics
                                 for r in results)
