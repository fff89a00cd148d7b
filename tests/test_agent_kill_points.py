"""Nothing is left ``running``: an agent killed at any point of its work, then restarted,
ends every test and the event with a named status, stores every result once and runs no
finished test again.

A kill is an exception no handler of the agent catches (``BaseException``), raised at the
chosen point: the agent's thread ends there, as a process ends at a kill -9, with the
entry pending under its consumer name; the restarted agent (same name) resumes it. The
points: after a test's results are recorded and before they are pushed or marked done;
after every test is done and before the event's end is written; and the state an agent
killed between "done" and the final status left when those were two writes (the held-out
probe's ``crash-set-0``, ``running`` for ever). Real broker, real redis-server runs."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.agent import ledger as ledger_mod
from redis_benchmarks_spec.agent.ledger import NOT_RUN, Ledger
from redis_benchmarks_spec.events.messages import RunStatus
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses, record_statuses
from redis_benchmarks_spec.results.document import RunResult
from tests.pipeline_fixtures import publish_event
from tests.test_agent import Collector, make_agent, suites_dir

TESTS = ["agent-set-0", "agent-set-1"]


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"k{uuid.uuid4().hex[:8]}")


class Killed(BaseException):
    """The agent process ending at this point (nothing of the agent handles it)."""


def _states(client: Any, stream_names: StreamNames, event_id: str) -> dict[str, tuple[str, str]]:
    return {s.test_name: (s.state, s.reason) for s in read_statuses(client, stream_names, event_id)
            if s.platform == "p1"}


def _kill_once(where: str, monkeypatch: pytest.MonkeyPatch, collector: Collector):  # type: ignore[no-untyped-def]
    """The first agent's push, killing it at ``where``."""
    push = collector.for_agent("first")
    if where == "after-record":
        def killing_push(results: list[RunResult]) -> None:
            raise Killed(where)  # recorded, not pushed, not done
        return killing_push
    real_end = Ledger.end_event

    def killing_end(self: Ledger, end: RunStatus, ran: Any) -> list[RunStatus]:
        monkeypatch.setattr(ledger_mod.Ledger, "end_event", real_end)
        raise Killed(where)  # every test done and ended, the event not

    monkeypatch.setattr(ledger_mod.Ledger, "end_event", killing_end)
    return push


@pytest.mark.parametrize("where", ["after-record", "before-event-end"])
def test_a_kill_at_any_point_then_a_restart_ends_every_status(
        redis_server, names, tmp_path: Path, monkeypatch: pytest.MonkeyPatch,  # type: ignore[no-untyped-def]
        where: str) -> None:
    client = redis_server.client()
    suites = suites_dir(tmp_path, count=2)
    collector = Collector()
    event = publish_event(client, names, "a" * 40)
    first = make_agent(redis_server, names, tmp_path, "p1", "p1-a",
                       _kill_once(where, monkeypatch, collector), suites=suites)
    with pytest.raises(Killed):
        first.run(max_events=1)
    assert client.xpending(names.builds, "platform:p1")["pending"] == 1
    assert EVENT_DONE not in _states(client, names, event.id)
    second = make_agent(redis_server, names, tmp_path, "p1", "p1-a",
                        collector.for_agent("second"), suites=suites)
    assert second.run(max_events=1) == 1
    assert _states(client, names, event.id) == {
        TESTS[0]: ("completed", ""), TESTS[1]: ("completed", ""),
        EVENT_DONE: ("completed", "2 suite(s)")}
    assert client.xpending(names.builds, "platform:p1")["pending"] == 0
    pushed = sorted(r.test_name for _, r in collector.pushed)
    assert pushed == TESTS, pushed  # each stored once, none run again


def test_a_test_done_but_left_running_is_ended_without_running_it_again(
        redis_server, names, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """The state a kill between "done" and the final status left (two writes then): the
    next holder ends it from its recorded results, and ends a test an earlier holder left
    ``pending`` that is not selected any more, naming why."""
    client = redis_server.client()
    event = publish_event(client, names, "b" * 40)
    ledger = Ledger(client, names.prefix, event.id, "p1")
    done = RunResult(test_name=TESTS[0], run_id=f"{TESTS[0]}:1:x", status="ok")
    ledger.record(TESTS[0], [done])
    ledger.mark_done(TESTS[0])
    record_statuses(client, names, [
        RunStatus(event_id=event.id, platform="p1", agent="p1-a", test_name=t, state=s)
        for t, s in ((TESTS[0], "running"), (TESTS[1], "pending"), ("gone-suite", "pending"))])
    calls: list[str] = []
    collector = Collector()

    def counting_runner(config, suite_list):  # type: ignore[no-untyped-def]
        from redis_benchmarks_spec.runner.session import run_suites
        calls.extend(s.name for s in suite_list)
        return run_suites(config, suite_list)

    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a"),
                       suites=suites_dir(tmp_path, count=2), runner=counting_runner)
    assert agent.run(max_events=1) == 1
    assert calls == [TESTS[1]]  # the done test was not run again
    got = _states(client, names, event.id)
    assert got[TESTS[0]] == ("completed", "") and got[TESTS[1]] == ("completed", "")
    assert got["gone-suite"] == ("failed", NOT_RUN)
    assert got[EVENT_DONE] == ("completed", "2 suite(s)")
    assert [r.test_name for _, r in collector.pushed] == [TESTS[1]]
    # the status stream says the same as the hash: the last word on each test is final
    last: dict[str, str] = {}
    for _, fields in client.xrange(names.test_status):
        status = RunStatus.decode(fields)
        if status.event_id == event.id:
            last[status.test_name] = status.state
    assert set(last) == {*TESTS, "gone-suite", EVENT_DONE}, last
    assert all(s in ("completed", "failed") for s in last.values()), last


def test_a_cancelled_event_a_killed_holder_had_started_ends_named(
        redis_server, names, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    from redis_benchmarks_spec.agent.ledger import CANCELLED
    from redis_benchmarks_spec.events.status import cancel
    client = redis_server.client()
    event = publish_event(client, names, "c" * 40)
    record_statuses(client, names, [
        RunStatus(event_id=event.id, platform="p1", agent="p1-a", test_name=t, state=s)
        for t, s in ((TESTS[0], "running"), (TESTS[1], "pending"))])
    cancel(client, names, event.request_id)
    collector = Collector()
    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a"),
                       suites=suites_dir(tmp_path, count=2))
    assert agent.run(max_events=1) == 1
    assert _states(client, names, event.id) == {
        TESTS[0]: ("failed", CANCELLED), TESTS[1]: ("failed", CANCELLED),
        EVENT_DONE: ("failed", CANCELLED)}
    assert collector.pushed == [] and client.xpending(names.builds, "platform:p1")["pending"] == 0
