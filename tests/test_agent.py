"""The lab agent against a real broker (redis-server) and real benchmark runs."""

from __future__ import annotations

import threading
import time
import uuid
from pathlib import Path

import pytest

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.agent.ledger import Ledger
from redis_benchmarks_spec.events.consumer import GroupConsumer
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.session import run_suites
from tests.cli import write_suite
from tests.pipeline_fixtures import SUITE, publish_event


class Collector:
    """Stands in for the datasink push: records what each agent pushed (thread-safe)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.pushed: list[tuple[str, RunResult]] = []

    def for_agent(self, name: str):  # type: ignore[no-untyped-def]
        def push(results: list[RunResult]) -> None:
            with self.lock:
                self.pushed += [(name, r) for r in results]
        return push

    def identities(self) -> list[tuple[str, str, str]]:
        with self.lock:
            return [(r.context.git.hash or "", r.context.platform, r.test_name)
                    for _, r in self.pushed]


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"t{uuid.uuid4().hex[:8]}")


def suites_dir(tmp_path: Path, count: int = 1, n: int = 2000) -> Path:
    d = tmp_path / "suites"
    d.mkdir(exist_ok=True)
    for i in range(count):
        write_suite(d, f"s{i}", SUITE.format(name=f"agent-set-{i}", n=n))
    return d


def make_agent(redis_server, names: StreamNames, tmp_path: Path, platform: str,  # type: ignore[no-untyped-def]
               consumer: str, push, **kw) -> Agent:
    runner = kw.pop("runner", None)
    config = AgentConfig(names=names, platform=platform, consumer=consumer,
                         suites_dir=kw.pop("suites", suites_dir(tmp_path)),
                         work_dir=tmp_path / "work" / consumer,
                         results_dir=tmp_path / "results" / consumer, block_ms=200,
                         idle_claim_ms=kw.pop("idle_claim_ms", 60_000), **kw)
    client = redis_server.client()
    return Agent(client, config, push, runner) if runner else Agent(client, config, push)


def run_in_thread(agent: Agent) -> threading.Thread:
    thread = threading.Thread(target=agent.run, daemon=True)
    thread.start()
    return thread


def wait_until(predicate, timeout: float = 120) -> None:  # type: ignore[no-untyped-def]
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return
        time.sleep(0.1)
    raise AssertionError("condition not met in time")


def test_every_platform_runs_every_build_exactly_once(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    collector = Collector()
    agents = [make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a")),
              make_agent(redis_server, names, tmp_path, "p1", "p1-b", collector.for_agent("b")),
              make_agent(redis_server, names, tmp_path, "p2", "p2-a", collector.for_agent("c"))]
    client = redis_server.client()
    shas = [f"{i:040x}" for i in (1, 2, 3)]
    events = [publish_event(client, names, sha) for sha in shas]
    threads = [run_in_thread(a) for a in agents]
    try:
        wait_until(lambda: len(collector.identities()) >= 6)
        time.sleep(1.0)  # a duplicate would show up now
    finally:
        for a in agents:
            a.stop()
        for t in threads:
            t.join(timeout=60)
    keys = collector.identities()
    assert sorted(keys) == sorted((sha, p, "agent-set-0") for sha in shas for p in ("p1", "p2"))
    for _, result in collector.pushed:
        assert result.ok, result.reason
        assert result.context.git.branch == "unstable"
        assert result.context.build_variant == "gcc:12.2.0-amd64-debian-bookworm-default"
    for event in events:
        statuses = read_statuses(client, names, event.id)
        done = {(s.platform, s.state) for s in statuses if s.test_name == EVENT_DONE}
        assert done == {("p1", "completed"), ("p2", "completed")}
    for group in ("platform:p1", "platform:p2"):
        assert client.xpending(names.builds, group)["pending"] == 0
    # <results>/<agent>/<event>/<test>/<topology>/result.json: the test name once
    found = sorted((tmp_path / "results").rglob("result.json"))
    assert len(found) == 6
    for path in found:
        rel = path.relative_to(tmp_path / "results").parts
        assert rel[2:] == ("agent-set-0", "oss-standalone", "result.json"), path


def test_garbage_entry_goes_to_dead_letter_and_work_goes_on(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    collector = Collector()
    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a"))
    client = redis_server.client()
    client.xadd(names.builds, {"kind": "garbage", "whatever": "x"})
    publish_event(client, names, "f" * 40)
    assert agent.run(max_events=1) == 1
    dead = client.xrange(names.dead_letter)
    assert len(dead) == 1 and b"reason" in dead[0][1]
    assert [k[0] for k in collector.identities()] == ["f" * 40]


def test_stop_mid_event_then_restart_resumes_without_duplicates(redis_server, names,  # type: ignore[no-untyped-def]
                                                                  tmp_path) -> None:
    collector = Collector()
    suites = suites_dir(tmp_path, count=3)
    holder: dict[str, Agent] = {}

    def stopping_runner(config, suite_list):  # type: ignore[no-untyped-def]
        results = run_suites(config, suite_list)
        holder["agent"].stop()  # SIGTERM arrives during the first test
        return results

    first = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("1"),
                       suites=suites, runner=stopping_runner)
    holder["agent"] = first
    client = redis_server.client()
    event = publish_event(client, names, "a" * 40)
    assert first.run() == 0  # stopped before finishing the event: not acknowledged
    assert client.xpending(names.builds, "platform:p1")["pending"] == 1
    assert len(collector.identities()) == 1
    second = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("2"),
                        suites=suites)
    assert second.run(max_events=1) == 1
    tests = sorted(k[2] for k in collector.identities())
    assert tests == ["agent-set-0", "agent-set-1", "agent-set-2"]
    assert client.xpending(names.builds, "platform:p1")["pending"] == 0
    assert Ledger(client, names.prefix, event.id, "p1").done() == set(tests)


def test_entry_of_a_dead_agent_is_claimed_and_completed(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    publish_event(client, names, "b" * 40)
    # a consumer of the group takes the entry and dies without a trace
    dead = GroupConsumer(redis_server.client(), names.builds, "platform:p1", "dead-host",
                         block_ms=100, idle_claim_ms=1000)
    assert len(dead.read()) == 1
    collector = Collector()
    alive = make_agent(redis_server, names, tmp_path, "p1", "live-host",
                       collector.for_agent("live"), idle_claim_ms=1000)
    time.sleep(1.2)
    assert alive.run(max_events=1) == 1
    assert collector.identities() == [("b" * 40, "p1", "agent-set-0")]
    assert client.xpending(names.builds, "platform:p1")["pending"] == 0


def test_recorded_but_unpushed_results_are_pushed_not_rerun(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    event = publish_event(client, names, "c" * 40)
    recorded = RunResult(test_name="agent-set-0", run_id="agent-set-0:1:x", status="ok")
    Ledger(client, names.prefix, event.id, "p1").record("agent-set-0", [recorded])
    calls: list[str] = []

    def counting_runner(config, suite_list):  # type: ignore[no-untyped-def]
        calls.extend(s.name for s in suite_list)
        return run_suites(config, suite_list)

    collector = Collector()
    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a"),
                       runner=counting_runner)
    assert agent.run(max_events=1) == 1
    assert calls == []  # the recorded test was not run again
    assert [r.run_id for _, r in collector.pushed] == ["agent-set-0:1:x"]


def test_events_for_other_platforms_are_skipped(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    collector = Collector()
    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", collector.for_agent("a"))
    client = redis_server.client()
    publish_event(client, names, "d" * 40, platforms=["p2"])
    assert agent.run(max_events=1) == 1
    assert collector.identities() == []
