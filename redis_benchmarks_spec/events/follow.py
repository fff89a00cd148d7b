"""Following build requests to their results (``rbs trigger --wait``): computation only.

A request is finished when every build variant it asked for has either failed to build or
produced a build event that every expected platform has ended (the agents' ``EVENT_DONE``
status: completed, failed or dead-lettered, see :mod:`.status`), when a builder
dead-lettered the request (its dead letter names the reason), or when it was cancelled.
Expected platforms are the request's platform filter, or else every ``platform:<name>``
group on the builds stream.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.events.consumer import original_fields
from redis_benchmarks_spec.events.messages import (
    FINAL_STATES,
    TEST_STATES,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    MalformedMessage,
    decode_value,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, is_cancelled, read_statuses

SCAN_PAGE = 500


@dataclass
class PlatformProgress:
    """Test counts by state on one platform for one build event."""

    counts: dict[str, int] = field(default_factory=lambda: dict.fromkeys(TEST_STATES, 0))
    done: bool = False
    state: str = ""  # the event's end state on the platform once done (FINAL_STATES)
    reason: str = ""  # why it failed or was dead-lettered

    @property
    def total(self) -> int:
        """Number of tests the platform selected so far."""
        return sum(self.counts.values())

    @property
    def finished(self) -> int:
        """Tests in a final state."""
        return sum(self.counts[s] for s in FINAL_STATES)


@dataclass
class RequestProgress:
    """Where one request stands."""

    request: BuildRequest
    events: dict[str, BuildEvent] = field(default_factory=dict)
    failures: list[BuildFailure] = field(default_factory=list)
    platforms: dict[tuple[str, str], PlatformProgress] = field(default_factory=dict)
    cancelled: bool = False
    dead_letter: str | None = None  # the reason, when a builder dead-lettered the request

    def finished(self, expected_platforms: list[str]) -> bool:
        """True when nothing more will happen for this request."""
        if self.cancelled:
            return True
        wanted = len(self.request.build_variants)
        outcomes = len(self.events) + len(self.failures)
        if self.dead_letter is None and (outcomes == 0 or (wanted and outcomes < wanted)):
            return False
        return all(self.platforms.get((eid, p), PlatformProgress()).done
                   for eid in self.events for p in expected_platforms)


def platform_groups(client: redis.Redis, names: StreamNames) -> list[str]:
    """Platforms with a consumer group on the builds stream."""
    try:
        groups: Any = client.xinfo_groups(names.builds)
    except redis.ResponseError:  # the stream does not exist yet
        return []
    found = (names.platform_of_group(_text(g["name"])) for g in groups)
    return sorted(p for p in found if p)


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


class Follower:
    """Incrementally reads the builds/failures streams and status hashes for some requests."""

    def __init__(self, client: redis.Redis, names: StreamNames,
                 requests: list[tuple[BuildRequest, str]]) -> None:
        if not requests:
            raise ValueError("nothing to follow")
        self.client = client
        self.names = names
        self.progress = {r.id: RequestProgress(r) for r, _ in requests}
        start = min((entry_id for _, entry_id in requests), key=_id_key)
        # The request's id positions us in *other* streams: an event the builder added in
        # the same millisecond can carry the very same id there (each stream numbers its own
        # entries), so start just before that millisecond, not after the id.
        before = _just_before_ms(start)
        self._cursors = {names.builds: before, names.build_failures: before,
                         names.dead_letter: before}
        filters = {tuple(r.platforms) for r, _ in requests}
        self.expected_platforms = (list(filters.pop()) if len(filters) == 1 and
                                   next(iter(filters)) else platform_groups(client, names))

    def poll(self) -> list[RequestProgress]:
        """Read what happened since the last poll; the progress of every request."""
        self._scan(self.names.builds, BuildEvent, self._add_event)
        self._scan(self.names.build_failures, BuildFailure, self._add_failure)
        self._scan(self.names.dead_letter, _DeadRequest, self._add_dead_letter)
        for prog in self.progress.values():
            prog.cancelled = is_cancelled(self.client, self.names, prog.request.id)
            for event_id in prog.events:
                self._refresh_statuses(prog, event_id)
        return list(self.progress.values())

    def finished(self) -> bool:
        """True when every request is finished."""
        return all(p.finished(self.expected_platforms) for p in self.progress.values())

    def _scan(self, stream: str, cls: Any, add: Callable[[Any], None]) -> None:
        while True:
            rows: Any = self.client.xrange(stream, min=f"({self._cursors[stream]}",
                                           count=SCAN_PAGE)
            for entry_id, fields in rows:
                self._cursors[stream] = _text(entry_id)
                try:
                    add(cls.decode(fields, _text(entry_id)))
                except MalformedMessage:
                    continue  # not ours to judge: the consumers dead-letter it
            if len(rows) < SCAN_PAGE:
                return

    def _add_event(self, event: BuildEvent) -> None:
        if event.request_id in self.progress:
            self.progress[event.request_id].events[event.id] = event

    def _add_failure(self, failure: BuildFailure) -> None:
        if failure.request_id in self.progress:
            self.progress[failure.request_id].failures.append(failure)

    def _add_dead_letter(self, dead: _DeadRequest) -> None:
        if dead.stream == self.names.build_requests and dead.request_id in self.progress:
            self.progress[dead.request_id].dead_letter = dead.reason

    def _refresh_statuses(self, prog: RequestProgress, event_id: str) -> None:
        fresh: dict[tuple[str, str], PlatformProgress] = {}
        for status in read_statuses(self.client, self.names, event_id):
            pp = fresh.setdefault((event_id, status.platform), PlatformProgress())
            if status.test_name == EVENT_DONE:
                pp.done = status.final
                pp.state, pp.reason = (status.state, status.reason) if status.final else ("", "")
            else:
                pp.counts[status.state] += 1
        for key, pp in fresh.items():
            prog.platforms[key] = pp


@dataclass(frozen=True)
class _DeadRequest:
    """What the follower needs of a dead letter: the stream it left, the id it carried."""

    stream: str
    request_id: str
    reason: str

    @classmethod
    def decode(cls, fields: dict[Any, Any], entry_id: str) -> _DeadRequest:
        """Any dead letter (an untrusted record): text read leniently, never raises."""
        texts = {_lenient(k): v for k, v in fields.items()}
        try:
            request_id = decode_value(original_fields(fields).get("id", b"s:"))
        except ValueError:
            request_id = ""
        return cls(_lenient(texts.get("stream", b"")), str(request_id),
                   _lenient(texts.get("reason", b"")))


def _lenient(value: Any) -> str:
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else str(value)


def _id_key(entry_id: str) -> tuple[int, int]:
    ms, _, seq = entry_id.partition("-")
    return int(ms), int(seq or 0)


def wait(follower: Follower, timeout_s: float, interval_s: float = 1.0,
         on_update: Callable[[list[RequestProgress]], None] | None = None) -> bool:
    """Poll until every request is finished (True) or ``timeout_s`` passes (False)."""
    deadline = time.monotonic() + timeout_s
    while True:
        progress = follower.poll()
        if on_update:
            on_update(progress)
        if follower.finished():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(min(interval_s, max(0.0, deadline - time.monotonic())))


def _just_before_ms(entry_id: str) -> str:
    """The largest stream id of the millisecond before ``entry_id``'s (an exclusive cursor
    that lets every entry of that millisecond through)."""
    ms = int(entry_id.split("-", 1)[0])
    return f"{ms - 1}-{2**64 - 1}" if ms > 0 else "0-0"
