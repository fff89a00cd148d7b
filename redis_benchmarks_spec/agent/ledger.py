"""What an agent's platform has done for one build event, kept in the broker so that a
claimed or restarted event continues where it stopped, no result is stored twice, and every
test ends with a named status whatever moment the agent was killed at.

    <prefix>:results:<event>:<platform>   hash test -> JSON list of result documents
    <prefix>:done:<event>:<platform>      set of tests whose results reached the datasink

A finished test is first recorded in ``results``, then pushed, then added to ``done`` in
the same transaction as its final status (:meth:`Ledger.finish`): no kill leaves a test
done but ``running``. After a crash between record and finish, the stored documents are
pushed again (the datasink write is idempotent for the same run, same timestamps) and the
test finished. A holder that resumes an event also ends what an older holder left open
(:meth:`Ledger.open_ends`): a test done whose status is not final (written before the
finish was one transaction), and, at the event's end, a test marked ``pending`` or
``running`` that this holder did not run.
"""

from __future__ import annotations

import json
from collections.abc import Iterable

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.events.messages import RunStatus
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses, stage_statuses
from redis_benchmarks_spec.results.document import RunResult

LEDGER_TTL_S = 30 * 24 * 3600
#: the reason of a test a killed holder left open and the next one did not run
NOT_RUN = "not run: left open by an agent that stopped, and not selected when the event resumed"


CANCELLED = "cancelled before this platform finished it"


def final_status(event_id: str, platform: str, agent: str, test: str,
                 results: list[RunResult], error: str = "") -> RunStatus:
    """The status a test ends with: failed (with the reasons) when it raised, has a failed
    run or no result at all, else completed."""
    failed = [r for r in results if not r.ok]
    why = error or "; ".join(r.reason for r in failed) or \
        ("" if results else "no result recorded")
    state = "failed" if failed or error or not results else "completed"
    return RunStatus(event_id=event_id, platform=platform, agent=agent, test_name=test,
                     state=state, reason=why)


class Ledger:
    """One event's record on one platform (keys in :mod:`events.names`)."""

    def __init__(self, client: redis.Redis, prefix: str, event_id: str, platform: str) -> None:
        self.client = client
        self.names = StreamNames.with_prefix(prefix)  # the keys are built in events.names
        self.event_id = event_id
        self.platform = platform
        self.results_key = self.names.ledger_results_key(event_id, platform)
        self.done_key = self.names.ledger_done_key(event_id, platform)

    def done(self) -> set[str]:
        return {m.decode() for m in self.client.smembers(self.done_key)}  # type: ignore[union-attr]

    def record(self, test: str, results: list[RunResult]) -> None:
        payload = json.dumps([r.to_dict() for r in results])
        pipe = self.client.pipeline(transaction=True)
        pipe.hset(self.results_key, test, payload)
        pipe.expire(self.results_key, LEDGER_TTL_S)
        pipe.execute()

    def _stage_done(self, pipe: Pipeline, test: str) -> None:
        pipe.sadd(self.done_key, test)
        pipe.expire(self.done_key, LEDGER_TTL_S)

    def mark_done(self, test: str) -> None:
        """``test`` reached the datasink (no status: :meth:`finish` writes both)."""
        pipe = self.client.pipeline(transaction=True)
        self._stage_done(pipe, test)
        pipe.execute()

    def finish(self, status: RunStatus) -> None:
        """Mark ``status.test_name`` done and record its final ``status``, in one
        transaction: a kill between the two would leave the test ``running`` for ever."""
        pipe = self.client.pipeline(transaction=True)
        self._stage_done(pipe, status.test_name)
        stage_statuses(pipe, self.names, [status])
        pipe.execute()

    def end_event(self, end: RunStatus, ran: Iterable[str]) -> list[RunStatus]:
        """Record :data:`EVENT_DONE` as ``end`` and, in the same transaction, fail every
        test of the platform still open that is not in ``ran`` (:data:`NOT_RUN`); what was
        written."""
        ran = set(ran)
        why = end.reason if end.reason == CANCELLED else NOT_RUN
        leftovers = [RunStatus(event_id=self.event_id, platform=self.platform,
                               agent=end.agent, test_name=s.test_name, state="failed",
                               reason=why)
                     for s in self._open() if s.test_name not in ran]
        pipe = self.client.pipeline(transaction=True)
        stage_statuses(pipe, self.names, [*leftovers, end])
        pipe.execute()
        return [*leftovers, end]

    def end_cancelled(self, agent: str) -> list[RunStatus]:
        """A cancelled event that an earlier holder had started: its open tests and the
        event end ``failed``, "cancelled" (nothing when no holder recorded a status)."""
        if not self._open():
            return []
        end = RunStatus(event_id=self.event_id, platform=self.platform, agent=agent,
                        test_name=EVENT_DONE, state="failed", reason=CANCELLED)
        return self.end_event(end, ran=())

    def stored(self) -> dict[str, list[RunResult]]:
        """Every test's recorded results."""
        rows: dict[bytes, bytes] = self.client.hgetall(self.results_key)  # type: ignore[assignment]
        return {test.decode(): [RunResult.from_dict(d) for d in json.loads(raw)]
                for test, raw in rows.items()}

    def unpushed(self) -> dict[str, list[RunResult]]:
        """Tests recorded but not marked done: their results may not have reached the sink."""
        done = self.done()
        return {test: results for test, results in self.stored().items() if test not in done}

    def open_ends(self, agent: str) -> list[RunStatus]:
        """The final statuses of tests done (pushed) whose status is not final yet: an
        older holder was killed between the two writes."""
        done = self.done()
        stored = self.stored()
        return [final_status(self.event_id, self.platform, agent, s.test_name,
                             stored.get(s.test_name, []))
                for s in self._open() if s.test_name in done]

    def _open(self) -> list[RunStatus]:
        """This platform's tests (not :data:`EVENT_DONE`) whose status is not final."""
        return [s for s in read_statuses(self.client, self.names, self.event_id)
                if s.platform == self.platform and s.test_name != EVENT_DONE and not s.final]
