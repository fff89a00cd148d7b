"""Consumer-group plumbing shared by the builder and agent daemons.

The life of an entry, as :class:`GroupConsumer` serves it:

1. on start, the consumer re-reads its *own* pending entries (``XREADGROUP ... 0``): work it
   was given before a crash or restart is finished, never dropped;
2. then it claims entries that another consumer of the group has held for longer than
   ``idle_claim_ms`` (``XAUTOCLAIM``): a dead host's work is recovered;
3. then it reads new entries (``>``) with a bounded ``BLOCK``.

The daemon ACKs an entry (:meth:`GroupConsumer.ack`) only after its outcome is published.
An entry that cannot be decoded, or that was delivered more than ``max_deliveries`` times,
goes to the dead-letter stream with the reason, atomically with its ACK
(:meth:`GroupConsumer.dead_letter`), and logged; a daemon's ``on_dead_letter`` hook adds its
own end-state writes (the agent's "dead-lettered" test statuses) to that same transaction, so
no entry is dead-lettered while its statuses still say "running". A long job keeps its entry from being claimed by
calling :meth:`GroupConsumer.touch` (or :meth:`GroupConsumer.keepalive`) more often than
``idle_claim_ms``. Lost connections are retried with capped exponential backoff.
"""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any, TypeVar, overload

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.events.messages import MalformedMessage, Message, now_ms

log = logging.getLogger(__name__)

T = TypeVar("T")
M = TypeVar("M", bound=Message)

PENDING = "pending"  # the consumer's own backlog, re-read on start
CLAIMED = "claimed"  # taken over from a consumer idle longer than idle_claim_ms
NEW = "new"  # never delivered before

DEAD_LETTER_FIELD_PREFIX = "f:"
RETRYABLE = (redis.ConnectionError, redis.TimeoutError)

# atomically: re-claim (reset the idle time of) an entry only if this consumer still owns it
_TOUCH_SCRIPT = """
local p = redis.call('XPENDING', KEYS[1], ARGV[1], ARGV[2], ARGV[2], 1)
if #p == 0 or p[1][2] ~= ARGV[3] then return 0 end
redis.call('XCLAIM', KEYS[1], ARGV[1], ARGV[3], 0, ARGV[2], 'JUSTID')
return 1
"""


# called while a dead letter's transaction is assembled: (pipeline, original fields, reason);
# it may read through the client first, and queues its writes on the pipeline
DeadLetterHook = Callable[[Pipeline, Mapping[Any, Any], str], None]


class ConsumerStopped(RuntimeError):
    """The consumer was asked to stop while waiting for Redis."""


@dataclass(frozen=True)
class Entry:
    """One stream entry handed to a daemon."""

    id: str
    fields: dict[bytes, bytes]
    delivery: str  # PENDING, CLAIMED or NEW
    deliveries: int = 1  # times Redis delivered it (known for claimed entries)


@dataclass
class Backoff:
    """Capped exponential backoff for lost connections."""

    initial_s: float = 0.1
    cap_s: float = 30.0
    factor: float = 2.0
    _current: float = field(default=0.0, init=False)

    def next_delay(self) -> float:
        """The delay before the next attempt; grows until ``cap_s``."""
        self._current = self.initial_s if not self._current else min(
            self.cap_s, self._current * self.factor)
        return self._current

    def reset(self) -> None:
        """Back to ``initial_s`` after a success."""
        self._current = 0.0


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, (bytes, bytearray)) else str(value)


def ensure_group(client: redis.Redis, stream: str, group: str, start_id: str = "0") -> bool:
    """Create ``group`` on ``stream`` (and the stream) if missing; True when it was created.

    New groups start at id ``0`` so entries queued before the first consumer started are
    delivered, not skipped.
    """
    try:
        client.xgroup_create(stream, group, id=start_id, mkstream=True)
    except redis.ResponseError as exc:
        if "BUSYGROUP" in str(exc):
            return False
        raise
    log.info("created consumer group %s on %s", group, stream)
    return True


@overload
def publish(target: Pipeline, stream: str, message: Message | Mapping[Any, Any]) -> None: ...  # type: ignore[overload-overlap]


@overload
def publish(target: redis.Redis, stream: str, message: Message | Mapping[Any, Any]) -> str: ...


def publish(target: redis.Redis | Pipeline, stream: str,
            message: Message | Mapping[Any, Any]) -> str | None:
    """XADD ``message`` to ``stream``: the one place an entry is appended to a stream.

    ``message`` is a typed :class:`Message` or fields already encoded (a dead-letter record).
    On a client the new entry id is returned; on a pipeline (to append atomically with other
    writes) None, and the id is in ``execute()``'s reply. The webhook's dedupe script is the
    one exception: its XADD must run inside the script with the delivery's SET NX.
    """
    fields = message.encode() if isinstance(message, Message) else message
    reply = target.xadd(stream, fields)  # type: ignore[arg-type]
    return None if isinstance(target, Pipeline) else _text(reply)


def original_fields(dead_letter_fields: Mapping[Any, Any]) -> dict[str, bytes]:
    """The original entry fields stored in a dead-letter entry (to inspect or replay)."""
    out: dict[str, bytes] = {}
    for key, value in dead_letter_fields.items():
        name = key.decode(errors="backslashreplace") if isinstance(key, bytes) else str(key)
        if name.startswith(DEAD_LETTER_FIELD_PREFIX):
            out[name[len(DEAD_LETTER_FIELD_PREFIX):]] = (
                value if isinstance(value, bytes) else str(value).encode())
    return out


class GroupConsumer:
    """One named consumer of one group on one stream (see the module docstring)."""

    def __init__(self, client: redis.Redis, stream: str, group: str, consumer: str,
                 block_ms: int = 5000, idle_claim_ms: int = 60_000,
                 *, dead_letter_stream: str = "rbs:dead-letter", count: int = 1,
                 max_deliveries: int = 5, backoff: Backoff | None = None) -> None:
        _check_socket_timeout(client, block_ms)
        self.client = client
        self.stream = stream
        self.group = group
        self.consumer = consumer
        self.block_ms = block_ms
        self.idle_claim_ms = idle_claim_ms
        self.dead_letter_stream = dead_letter_stream
        self.count = count
        self.max_deliveries = max_deliveries
        self.backoff = backoff or Backoff()
        self.stop_event = threading.Event()
        self.on_dead_letter: DeadLetterHook | None = None
        self._pending_cursor: str | None = "0-0"  # None once the own backlog is drained
        self._claim_cursor = "0-0"
        self._next_claim_at = 0.0
        self._touch = client.register_script(_TOUCH_SCRIPT)
        self.call(lambda: ensure_group(client, stream, group))

    # ------------------------------------------------------------------ reading
    def read(self) -> list[Entry]:
        """The next entries: own backlog first, then idle claims, then new (may be empty)."""
        # a batch of the backlog whose every entry met the delivery limit is empty but the
        # backlog is not drained: read on, or a new entry would overtake an older one
        while self._pending_cursor is not None:
            entries = self.call(self._read_own_pending)
            if entries:
                return entries
        claimed = self.call(self._claim_idle)
        if claimed:
            return claimed
        return self.call(self._read_new)

    def entries(self) -> Iterator[Entry]:
        """Entries one by one until :meth:`stop`; each read blocks at most ``block_ms``."""
        while not self.stop_event.is_set():
            try:
                batch = self.read()
            except ConsumerStopped:
                return
            for entry in batch:
                yield entry
                if self.stop_event.is_set():
                    return

    def stop(self) -> None:
        """Ask :meth:`entries` and any retry loop to return (thread- and signal-safe)."""
        self.stop_event.set()

    def _read_own_pending(self) -> list[Entry]:
        assert self._pending_cursor is not None
        reply = self._xreadgroup(self._pending_cursor, block_ms=None)
        if not reply:
            log.info("%s/%s: own pending entries done", self.group, self.consumer)
            self._pending_cursor = None
            return []
        self._pending_cursor = reply[-1][0]
        # a restart re-reads its own backlog: an entry that crashed this daemon every time
        # must meet the same delivery limit as a claimed one, or it crash-loops forever
        return self._drop_poison([self._entry_or_dead(eid, f, PENDING) for eid, f in reply])

    def _claim_idle(self) -> list[Entry]:
        # a full scan of the group's pending list at most every idle_claim_ms / 2
        if self._claim_cursor == "0-0" and time.monotonic() < self._next_claim_at:
            return []
        reply = self.client.xautoclaim(self.stream, self.group, self.consumer,
                                       min_idle_time=self.idle_claim_ms,
                                       start_id=self._claim_cursor, count=self.count)
        self._claim_cursor = _text(reply[0])
        if self._claim_cursor == "0-0":
            self._next_claim_at = time.monotonic() + self.idle_claim_ms / 2000
        deleted = reply[2] if len(reply) > 2 else []
        for eid in deleted:
            log.warning("%s: pending entry %s was deleted from the stream; dropped from PEL",
                        self.stream, _text(eid))
        entries = [(_text(eid), f) for eid, f in reply[1]]
        if entries:
            log.info("%s/%s claimed %d idle entr(ies): %s", self.group, self.consumer,
                     len(entries), [e for e, _ in entries])
        return self._drop_poison([self._entry_or_dead(eid, f, CLAIMED) for eid, f in entries])

    def _read_new(self) -> list[Entry]:
        reply = self._xreadgroup(">", block_ms=self.block_ms)
        return [Entry(eid, dict(f), NEW) for eid, f in reply]

    def _xreadgroup(self, start: str, block_ms: int | None) -> list[tuple[str, Any]]:
        try:
            reply: Any = self.client.xreadgroup(self.group, self.consumer, {self.stream: start},
                                           count=self.count, block=block_ms)
        except redis.ResponseError as exc:
            if "NOGROUP" not in str(exc):
                raise
            log.warning("group %s on %s vanished; re-creating it", self.group, self.stream)
            ensure_group(self.client, self.stream, self.group)
            return []
        if not reply:
            return []
        # RESP2: [[stream, [(id, fields), ...]]]; RESP3: {stream: [[(id, fields), ...]]}
        items = reply[0][1] if isinstance(reply, list) else next(iter(reply.values()))[0]
        return [(_text(eid), f) for eid, f in items]

    def _entry_or_dead(self, entry_id: str, fields: Any, delivery: str) -> Entry:
        # fields is None when the entry was deleted from the stream while pending
        return Entry(entry_id, dict(fields) if fields is not None else {}, delivery)

    def _drop_poison(self, entries: list[Entry]) -> list[Entry]:
        kept: list[Entry] = []
        for entry in entries:
            deliveries = self._deliveries(entry.id)
            if deliveries > self.max_deliveries:
                self.dead_letter(entry.id, entry.fields,
                                 f"delivered {deliveries} times (max {self.max_deliveries})")
                continue
            kept.append(Entry(entry.id, entry.fields, entry.delivery, deliveries))
        return kept

    def _deliveries(self, entry_id: str) -> int:
        rows = self.client.xpending_range(self.stream, self.group, min=entry_id, max=entry_id,
                                          count=1)
        return int(rows[0]["times_delivered"]) if rows else 0

    # ------------------------------------------------------------------ outcomes
    def decode(self, entry: Entry, cls: type[M]) -> M | None:
        """``entry`` as a ``cls`` message, or None after dead-lettering a malformed entry."""
        if not entry.fields:
            self.dead_letter(entry.id, entry.fields, "entry deleted from the stream")
            return None
        try:
            return cls.decode(entry.fields, entry.id)
        except MalformedMessage as exc:
            self.dead_letter(entry.id, entry.fields, str(exc))
            return None

    def ack(self, entry_id: str) -> int:
        """XACK ``entry_id`` (call only after the outcome is published); entries acked."""
        return int(self.call(lambda: self.client.xack(self.stream, self.group, entry_id)))

    def dead_letter(self, entry_id: str, fields: Mapping[Any, Any], reason: str) -> str:
        """Copy an entry to the dead-letter stream with ``reason`` and ACK it, atomically
        with whatever :attr:`on_dead_letter` queues (the entry's end state); logged."""
        record: dict[Any, Any] = {
            "reason": reason, "stream": self.stream, "group": self.group,
            "consumer": self.consumer, "entry_id": entry_id, "at_ms": str(now_ms()),
        }
        for key, value in fields.items():
            # bytes names are kept byte for byte: a non-UTF-8 name must not fail the move
            name = key if isinstance(key, bytes) else str(key).encode()
            record[DEAD_LETTER_FIELD_PREFIX.encode() + name] = value

        def _run() -> str:
            pipe = self.client.pipeline(transaction=True)
            publish(pipe, self.dead_letter_stream, record)
            pipe.xack(self.stream, self.group, entry_id)
            if self.on_dead_letter is not None:
                self.on_dead_letter(pipe, fields, reason)
            return _text(pipe.execute()[0])

        dead_id = str(self.call(_run))
        log.error("%s/%s: entry %s dead-lettered as %s: %s", self.stream, self.group, entry_id,
                  dead_id, reason)
        return dead_id

    def poison(self, entry: Entry, exc: BaseException) -> str:
        """Dead-letter an entry whose handling raised ``exc`` (the daemon goes on)."""
        reason = f"{type(exc).__name__}: {exc}"[:2000]
        log.error("%s: entry %s failed: %s", self.stream, entry.id, reason, exc_info=exc)
        return self.dead_letter(entry.id, entry.fields, reason)

    def owns(self, entry_id: str) -> bool:
        """True while ``entry_id`` is pending and owned by this consumer."""
        def _run() -> bool:
            rows = self.client.xpending_range(self.stream, self.group, min=entry_id,
                                              max=entry_id, count=1)
            return bool(rows) and _text(rows[0]["consumer"]) == self.consumer
        return bool(self.call(_run))

    def touch(self, entry_id: str) -> bool:
        """Reset the idle time of an entry this consumer owns; False if it lost it."""
        args = [self.group, entry_id, self.consumer]
        return bool(self.call(lambda: self._touch(keys=[self.stream], args=args)))

    @contextmanager
    def keepalive(self, entry_id: str, interval_s: float | None = None) -> Iterator[
            threading.Event]:
        """Touch ``entry_id`` in a thread while the block runs.

        Yields an event that is set if the entry was claimed by another consumer (this
        consumer was presumed dead): the daemon must then drop the work, not publish it.
        """
        lost = threading.Event()
        done = threading.Event()
        interval = interval_s or max(0.05, self.idle_claim_ms / 3000)

        def _loop() -> None:
            while not done.wait(interval):
                try:
                    if not self.touch(entry_id):
                        lost.set()
                        return
                except ConsumerStopped:
                    return

        thread = threading.Thread(target=_loop, name=f"keepalive-{entry_id}", daemon=True)
        thread.start()
        try:
            yield lost
        finally:
            done.set()
            thread.join(timeout=interval + 5)

    # ------------------------------------------------------------------ retries
    def call(self, fn: Callable[[], T]) -> T:
        """Run ``fn``, retrying lost connections with backoff until it succeeds or stop()."""
        while True:
            try:
                result = fn()
            except RETRYABLE as exc:
                delay = self.backoff.next_delay()
                log.warning("%s/%s: redis unavailable (%s); retrying in %.1fs",
                            self.group, self.consumer, exc, delay)
                if self.stop_event.wait(delay):
                    raise ConsumerStopped(f"{self.consumer} stopped while redis was down") from exc
                continue
            self.backoff.reset()
            return result


def _check_socket_timeout(client: redis.Redis, block_ms: int) -> None:
    """Refuse a client whose socket timeout would cut every blocking read short."""
    timeout = client.connection_pool.connection_kwargs.get("socket_timeout")
    if timeout is not None and timeout * 1000 <= block_ms:
        raise ValueError(f"socket_timeout {timeout}s must exceed block_ms {block_ms}ms; "
                         "a blocking read would time out as a connection error")
