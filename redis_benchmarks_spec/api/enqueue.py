"""Queueing a build request once: the XADD and the marks that say it was queued (a delivery
id, a payload digest, a command) happen in one script, and nothing is queued when any mark
is already set. The webhook (:mod:`.webhook`) and the pull-request commands
(:mod:`.commands`) queue through here."""

from __future__ import annotations

from typing import Any

import redis

from redis_benchmarks_spec.events.messages import BuildRequest

DELIVERY_TTL_S = 7 * 24 * 3600

_ENQUEUE_ONCE = """
for i = 2, #KEYS do
  if redis.call('EXISTS', KEYS[i]) == 1 then return false end
end
for i = 2, #KEYS do
  redis.call('SET', KEYS[i], ARGV[1], 'EX', ARGV[2])
end
return redis.call('XADD', KEYS[1], '*', unpack(ARGV, 3))
"""


class OnceQueue:
    """``add(request, marks)``: XADD to ``stream`` unless a mark exists; sets the marks."""

    def __init__(self, client: redis.Redis, stream: str) -> None:
        self.stream = stream
        self._script = client.register_script(_ENQUEUE_ONCE)

    def add(self, request: BuildRequest, marks: list[str]) -> str | None:
        """The new entry's id, or None when a mark said it was queued already."""
        flat: list[Any] = [request.id, DELIVERY_TTL_S]
        for key, value in request.encode().items():
            flat += [key, value]
        result = self._script(keys=[self.stream, *marks], args=flat)
        if result is None:
            return None
        return result.decode() if isinstance(result, bytes) else str(result)
