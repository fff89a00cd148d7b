"""What ``rbs admin`` shows and does: stream and group state, work in flight, failures,
cancel and replay. Computation only; :mod:`redis_benchmarks_spec.cli.admin` prints.

Keys are found through the index sorted sets of :mod:`.names`, never with KEYS.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import redis

from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    DEAD_LETTERED,
    TEST_STATES,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    MalformedMessage,
    Message,
    RunStatus,
    decode_value,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, cancel, read_statuses, uncancel

SCAN_PAGE = 500


class AdminError(RuntimeError):
    """An admin action that cannot be done (unknown id, ...)."""


@dataclass(frozen=True)
class ConsumerInfo:
    """One consumer of a group."""

    name: str
    pending: int
    idle_ms: int


@dataclass(frozen=True)
class GroupInfo:
    """One consumer group of a stream."""

    name: str
    pending: int
    lag: int | None  # entries not yet delivered to the group (None: Redis cannot tell)
    last_delivered: str
    consumers: list[ConsumerInfo]


@dataclass(frozen=True)
class StreamInfo:
    """One stream of the pipeline."""

    name: str
    length: int
    groups: list[GroupInfo]


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


def streams(client: redis.Redis, names: StreamNames) -> list[StreamInfo]:
    """Length, groups, lag and per-consumer pending/idle of every pipeline stream."""
    out = []
    for stream in names.streams():
        if not client.exists(stream):
            out.append(StreamInfo(stream, 0, []))
            continue
        groups: Any = client.xinfo_groups(stream)
        infos = [_group(client, stream, g) for g in groups]
        out.append(StreamInfo(stream, int(client.xlen(stream)), infos))
    return out


def _group(client: redis.Redis, stream: str, group: dict[str, Any]) -> GroupInfo:
    name = _text(group["name"])
    consumers: Any = client.xinfo_consumers(stream, name)
    lag = group.get("lag")
    return GroupInfo(
        name=name, pending=int(group["pending"]), lag=None if lag is None else int(lag),
        last_delivered=_text(group.get("last-delivered-id", "")),
        consumers=[ConsumerInfo(_text(c["name"]), int(c["pending"]), int(c["idle"]))
                   for c in consumers],
    )


EVENT_RUNNING = "running"  # the platform has not ended the event yet
EVENT_DONE_STATE = "done"  # EVENT_DONE "completed": every test ran (some may have failed)


@dataclass(frozen=True)
class PlatformState:
    """Where one build event stands on one platform."""

    platform: str
    state: str  # running, done, failed or dead-lettered
    reason: str
    counts: dict[str, int]  # tests by state (TEST_STATES)


@dataclass(frozen=True)
class EventStatus:
    """All recorded test statuses of one build event."""

    event_id: str
    statuses: list[RunStatus]

    def platforms(self) -> list[PlatformState]:
        """The event's state on each platform that recorded a status, by platform name."""
        out = []
        for platform in sorted({s.platform for s in self.statuses}):
            mine = [s for s in self.statuses if s.platform == platform]
            counts = dict.fromkeys(TEST_STATES, 0)
            state, reason = EVENT_RUNNING, ""
            for s in mine:
                if s.test_name != EVENT_DONE:
                    counts[s.state] += 1
                elif s.final:
                    state = EVENT_DONE_STATE if s.state == "completed" else s.state
                    reason = s.reason
            out.append(PlatformState(platform, state, reason, counts))
        return out

    @property
    def in_flight(self) -> bool:
        """Some platform has a test not yet final, or has not finished the event."""
        by_platform: dict[str, bool] = {}
        for s in self.statuses:
            done = by_platform.get(s.platform, False)
            by_platform[s.platform] = done or (s.test_name == EVENT_DONE and s.final)
        tests_open = any(not s.final for s in self.statuses if s.test_name != EVENT_DONE)
        return tests_open or not all(by_platform.values())


def recent_events(client: redis.Redis, names: StreamNames, limit: int = 100) -> list[EventStatus]:
    """The ``limit`` events with the most recent status updates, newest first."""
    ids = client.zrevrange(names.status_index, 0, limit - 1)
    return [EventStatus(_text(i), read_statuses(client, names, _text(i))) for i in ids]


def inflight(client: redis.Redis, names: StreamNames, limit: int = 100) -> list[EventStatus]:
    """Recent events some platform is still working on."""
    return [e for e in recent_events(client, names, limit) if e.in_flight]


def failed_tests(client: redis.Redis, names: StreamNames,
                 limit: int = 100) -> list[RunStatus]:
    """Failed and dead-lettered tests (and events) of the recent events."""
    return [s for e in recent_events(client, names, limit) for s in e.statuses
            if s.state in ("failed", DEAD_LETTERED)]


def build_failures(client: redis.Redis, names: StreamNames,
                   limit: int = 50) -> list[BuildFailure]:
    """The latest build failures, newest first."""
    rows: Any = client.xrevrange(names.build_failures, count=limit)
    out = []
    for entry_id, fields in rows:
        try:
            out.append(BuildFailure.decode(fields, _text(entry_id)))
        except MalformedMessage:
            continue  # shown by `rbs admin streams` as stream content, not as a failure
    return out


def find_message(client: redis.Redis, stream: str, message_id: str
                 ) -> tuple[str, dict[Any, Any]] | None:
    """The newest entry of ``stream`` whose ``id`` field is ``message_id`` (XREVRANGE pages)."""
    upper = "+"
    while True:
        rows: Any = client.xrevrange(stream, max=upper, count=SCAN_PAGE)
        for entry_id, fields in rows:
            raw = fields.get(b"id", fields.get("id"))
            if raw is not None and _matches(raw, message_id):
                return _text(entry_id), fields
        if len(rows) < SCAN_PAGE:
            return None
        upper = f"({_text(rows[-1][0])}"


def _matches(raw: Any, message_id: str) -> bool:
    try:
        return bool(decode_value(raw) == message_id)
    except ValueError:
        return False


def cancel_event(client: redis.Redis, names: StreamNames, message_id: str) -> bool:
    """Cancel a build event or a whole request; False if it was already cancelled."""
    if not (find_message(client, names.builds, message_id)
            or find_message(client, names.build_requests, message_id)):
        raise AdminError(f"no build event or request with id {message_id!r}")
    return cancel(client, names, message_id)


@dataclass(frozen=True)
class Replayed:
    """A message queued again."""

    stream: str
    old_entry_id: str
    new_entry_id: str
    message: Message


def replay(client: redis.Redis, names: StreamNames, message_id: str) -> Replayed:
    """Queue a build event (for the agents) or a request (for the builders) again.

    The event's status hash is cleared and any cancellation lifted, so the agents run it
    afresh; the message is decoded first, so a replay never queues a malformed entry.
    """
    for stream, cls in ((names.builds, BuildEvent), (names.build_requests, BuildRequest)):
        found = find_message(client, stream, message_id)
        if found is None:
            continue
        old_id, fields = found
        message = cls.decode(fields, old_id)
        uncancel(client, names, message_id)
        pipe = client.pipeline(transaction=True)
        if cls is BuildEvent:
            pipe.delete(names.status_key(message_id))
            pipe.zrem(names.status_index, message_id)
        publish(pipe, stream, message)
        new_id = _text(pipe.execute()[-1])
        return Replayed(stream, old_id, new_id, message)
    raise AdminError(f"no build event or request with id {message_id!r}")
