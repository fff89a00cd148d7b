"""Per-event test status, agent heartbeats and cancellation: the keys agents write and
``rbs admin`` / ``rbs trigger --wait`` read (names in :mod:`.names`).

Convention for agents: on picking up a build event, record every selected test as
``pending`` (one :func:`record_statuses` call), then ``running``/``completed``/``failed`` as
they go, and finally the pseudo-test :data:`EVENT_DONE` as ``completed`` (or ``failed`` with
the reason) so followers know the platform's list of tests is complete. An event the agent
gives up on (delivery limit, artifact it cannot fetch, an error it cannot handle) ends as
``dead-lettered`` with the reason, for the event and every test not yet final, in the same
transaction as its dead letter (:func:`stage_event_end`).
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable
from dataclasses import dataclass, replace
from typing import Any

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    MalformedMessage,
    RunStatus,
    encode_message,
    now_ms,
)
from redis_benchmarks_spec.events.names import StreamNames

log = logging.getLogger(__name__)

EVENT_DONE = "__event__"  # pseudo test name: the platform finished the whole event
FIELD_SEPARATOR = "|"


def status_field(platform: str, test_name: str) -> str:
    """Field of one platform's test in the event's status hash."""
    return f"{platform}{FIELD_SEPARATOR}{test_name}"


def record_statuses(client: redis.Redis, names: StreamNames,
                    statuses: Iterable[RunStatus]) -> int:
    """Store statuses (hash + index + status stream) in one round trip; how many."""
    pipe = client.pipeline(transaction=False)
    count = stage_statuses(pipe, names, statuses)
    if count:
        pipe.execute()
    return count


def stage_statuses(pipe: Pipeline, names: StreamNames, statuses: Iterable[RunStatus]) -> int:
    """Queue the writes of :func:`record_statuses` on ``pipe`` (e.g. a dead letter's
    transaction); how many statuses."""
    count = 0
    for status in statuses:
        fields = encode_message(status)
        pipe.hset(names.status_key(status.event_id), status_field(status.platform,
                                                                  status.test_name),
                  _pack(fields))
        pipe.zadd(names.status_index, {status.event_id: status.ts_ms})
        publish(pipe, names.test_status, fields)
        count += 1
    return count


def stage_event_end(client: redis.Redis, pipe: Pipeline, names: StreamNames,
                    end: RunStatus) -> list[RunStatus]:
    """Queue ``end`` (its state and reason) for every test of ``end.platform`` that is not
    final yet, and for :data:`EVENT_DONE`: the event's end state at event and test level.

    ``end.test_name`` is ignored. Reads the event's statuses through ``client`` now and
    writes through ``pipe``; returns what it queued.
    """
    open_tests = [s.test_name for s in read_statuses(client, names, end.event_id)
                  if s.platform == end.platform and not s.final and s.test_name != EVENT_DONE]
    ended = [replace(end, test_name=test) for test in [*open_tests, EVENT_DONE]]
    stage_statuses(pipe, names, ended)
    return ended


def _pack(fields: dict[str, bytes]) -> bytes:
    # one hash value per test: the message's own encoded fields, as a JSON object of text
    return json.dumps({k: v.decode("utf-8") for k, v in fields.items()},
                      separators=(",", ":")).encode()


def _unpack(raw: bytes, where: str) -> RunStatus:
    try:
        fields = json.loads(raw)
    except ValueError as exc:
        raise MalformedMessage(where, None, f"status value is not JSON: {exc}") from exc
    if not isinstance(fields, dict):
        raise MalformedMessage(where, None, "status value is not an object")
    return RunStatus.decode(fields, where)


def read_statuses(client: redis.Redis, names: StreamNames, event_id: str) -> list[RunStatus]:
    """Every recorded status of one build event, sorted by platform and test."""
    raw: Any = client.hgetall(names.status_key(event_id))
    key = names.status_key(event_id)
    statuses = []
    for field_name, value in raw.items():
        where = f"{key}[{field_name.decode(errors='backslashreplace')}]"
        try:
            statuses.append(_unpack(value, where))
        except MalformedMessage as exc:
            # the hash is writable by anyone with broker access: a garbled value is skipped
            # (and logged), never fatal to the agent, the follower or the notifier
            log.warning("skipping a malformed status: %s", exc)
    return sorted(statuses, key=lambda s: (s.platform, s.test_name))


def platform_done(statuses: Iterable[RunStatus], platform: str) -> bool:
    """True when ``platform`` has recorded :data:`EVENT_DONE` in a final state."""
    return any(s.platform == platform and s.test_name == EVENT_DONE and s.final
               for s in statuses)


# --------------------------------------------------------------------------- heartbeats


@dataclass(frozen=True)
class Heartbeat:
    """The last beat of one agent."""

    platform: str
    agent: str
    last_ms: int
    alive: bool  # its key has not expired
    info: str  # what the agent said it was doing


def beat(client: redis.Redis, names: StreamNames, platform: str, agent: str,
         ttl_s: int = 60, info: str = "") -> None:
    """Record that ``agent`` of ``platform`` is alive (key with a TTL + index)."""
    key = names.heartbeat_key(platform, agent)
    pipe = client.pipeline(transaction=False)
    pipe.set(key, info or "alive", ex=ttl_s)
    pipe.zadd(names.heartbeat_index, {key: now_ms()})
    pipe.execute()


def heartbeats(client: redis.Redis, names: StreamNames) -> list[Heartbeat]:
    """Every agent that ever beat (from the index), newest first, with liveness."""
    rows: Any = client.zrevrange(names.heartbeat_index, 0, -1, withscores=True)
    if not rows:
        return []
    pipe = client.pipeline(transaction=False)
    for key, _ in rows:
        pipe.get(key)
    values = pipe.execute()
    prefix = names.heartbeat_key("", "")[:-2]  # "<prefix>:heartbeat"
    out = []
    for (key, score), value in zip(rows, values):
        platform, _, agent = key.decode()[len(prefix) + 1:].partition(":")
        out.append(Heartbeat(platform, agent, int(score), value is not None,
                             value.decode(errors="replace") if value else ""))
    return out


# --------------------------------------------------------------------------- cancellation


def cancel(client: redis.Redis, names: StreamNames, event_or_request_id: str) -> bool:
    """Mark an event (or a whole request) cancelled; False when it already was."""
    return bool(client.sadd(names.cancelled, event_or_request_id))


def is_cancelled(client: redis.Redis, names: StreamNames, *ids: str) -> bool:
    """True when any of ``ids`` (event id, request id) was cancelled."""
    if not ids:
        return False
    return any(client.smismember(names.cancelled, list(ids)))


def uncancel(client: redis.Redis, names: StreamNames, *ids: str) -> int:
    """Remove ids from the cancelled set (replay does this); how many were removed."""
    return int(client.srem(names.cancelled, *ids)) if ids else 0


__all__ = [
    "EVENT_DONE", "Heartbeat", "beat", "cancel", "heartbeats", "is_cancelled",
    "platform_done", "read_statuses", "record_statuses", "stage_event_end", "stage_statuses",
    "status_field", "uncancel",
]
