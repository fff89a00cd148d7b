"""A daemon's heartbeat: a key with a TTL refreshed by a background thread.

Both daemons (builder, agent) hold one while they live, so ``rbs admin heartbeats`` shows a
host as alive during a 2-minute compile or a 10-minute benchmark, and as dead within one TTL
after a ``kill -9``. The ``info`` text says what the daemon is doing right now.
"""

from __future__ import annotations

import logging
import threading
from types import TracebackType
from typing import final

import redis

from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import beat

log = logging.getLogger(__name__)

RETRYABLE = (redis.ConnectionError, redis.TimeoutError)


@final
class Heartbeat:
    """Beat every ``ttl_s / 3`` seconds in a thread until :meth:`close` (or ``with`` exit)."""

    def __init__(self, client: redis.Redis, names: StreamNames, role: str, name: str,
                 ttl_s: int = 60) -> None:
        self.client = client
        self.names = names
        self.role = role  # the platform of an agent, "builders" for a builder
        self.name = name
        self.ttl_s = ttl_s
        self.info = "starting"
        self._done = threading.Event()
        self._thread: threading.Thread | None = None

    def start(self) -> Heartbeat:
        """Beat now and then periodically (again after :meth:`close`)."""
        if self._thread is not None and self._thread.is_alive():
            return self
        self._done.clear()
        self._thread = threading.Thread(target=self._loop, name=f"heartbeat-{self.name}",
                                        daemon=True)
        self._thread.start()
        return self

    def set(self, info: str) -> None:
        """What the daemon is doing (shown by ``rbs admin heartbeats``); beats at once."""
        self.info = info
        self._beat()

    def close(self) -> None:
        """Stop beating; the key expires after its TTL."""
        self._done.set()
        if self._thread is not None:
            self._thread.join(timeout=5)

    def _beat(self) -> None:
        try:
            beat(self.client, self.names, self.role, self.name, self.ttl_s, self.info)
        except RETRYABLE as exc:
            # the next beat retries; the daemon's own calls handle the outage
            log.warning("heartbeat of %s failed: %s", self.name, exc)

    def _loop(self) -> None:
        interval = max(0.5, self.ttl_s / 3)
        self._beat()
        while not self._done.wait(interval):
            self._beat()

    def __enter__(self) -> Heartbeat:
        return self.start()

    def __exit__(self, exc_type: type[BaseException] | None, exc: BaseException | None,
                 tb: TracebackType | None) -> None:
        self.close()
