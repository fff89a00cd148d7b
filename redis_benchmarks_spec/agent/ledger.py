"""What an agent's platform has done for one build event, kept in the broker so that a
claimed or restarted event continues where it stopped and no result is stored twice.

    <prefix>:results:<event>:<platform>   hash test -> JSON list of result documents
    <prefix>:done:<event>:<platform>      set of tests whose results reached the datasink

A finished test is first recorded in ``results`` and only then pushed and added to ``done``.
After a crash between the two, the stored documents are pushed again; the datasink write is
idempotent for the same run (same timestamps), so nothing is lost or doubled.
"""

from __future__ import annotations

import json

import redis

from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.results.document import RunResult

LEDGER_TTL_S = 30 * 24 * 3600


class Ledger:
    def __init__(self, client: redis.Redis, prefix: str, event_id: str, platform: str) -> None:
        self.client = client
        names = StreamNames.with_prefix(prefix)  # the keys are built in events.names
        self.results_key = names.ledger_results_key(event_id, platform)
        self.done_key = names.ledger_done_key(event_id, platform)

    def done(self) -> set[str]:
        return {m.decode() for m in self.client.smembers(self.done_key)}  # type: ignore[union-attr]

    def record(self, test: str, results: list[RunResult]) -> None:
        payload = json.dumps([r.to_dict() for r in results])
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.results_key, test, payload)
        pipe.expire(self.results_key, LEDGER_TTL_S)
        pipe.execute()

    def mark_done(self, test: str) -> None:
        pipe = self.client.pipeline(transaction=True)
        pipe.sadd(self.done_key, test)
        pipe.expire(self.done_key, LEDGER_TTL_S)
        pipe.execute()

    def unpushed(self) -> dict[str, list[RunResult]]:
        """Tests recorded but not marked done: their results may not have reached the sink."""
        done = self.done()
        out: dict[str, list[RunResult]] = {}
        rows: dict[bytes, bytes] = self.client.hgetall(self.results_key)  # type: ignore[assignment]
        for test, raw in rows.items():
            name = test.decode()
            if name not in done:
                out[name] = [RunResult.from_dict(d) for d in json.loads(raw)]
        return out
