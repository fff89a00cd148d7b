"""The agent through a broker outage, a suite that cannot run, and a long test (heartbeat);
plus a restart with several events queued. Real redis-server brokers and benchmark runs."""

from __future__ import annotations

import subprocess
import threading
import time
import uuid
from pathlib import Path

import pytest
import redis
from redis.backoff import NoBackoff
from redis.retry import Retry

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, heartbeats, read_statuses
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.suite import Suite
from tests.cli import write_suite
from tests.conftest import redis_server_bin
from tests.pipeline_fixtures import SUITE, publish_event


class Broker:
    """A persistent (AOF, fsync always) redis-server that can be stopped and started again
    on the same port: an outage that loses nothing."""

    def __init__(self, workdir: Path) -> None:
        self.port = free_port()
        self.workdir = workdir
        self.proc: subprocess.Popen[bytes] | None = None
        self.start()

    def start(self) -> None:
        self.proc = subprocess.Popen(
            [redis_server_bin(), "--port", str(self.port), "--bind", "127.0.0.1", "--save", "",
             "--appendonly", "yes", "--appendfsync", "always", "--dir", str(self.workdir)],
            stdout=(self.workdir / "broker.log").open("ab"), stderr=subprocess.STDOUT)
        assert wait_for(self._pings, timeout=10), "broker did not start"

    def _pings(self) -> bool:
        try:
            return bool(self.client().ping())
        except redis.ConnectionError:
            return False

    def client(self) -> redis.Redis:
        # no retries inside redis-py (version 6+ retries by default): the agent's own
        # backoff is what rides out the outage here
        return redis.Redis(port=self.port, socket_timeout=10, retry=Retry(NoBackoff(), 0))

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            self.proc.wait(timeout=10)


@pytest.fixture
def broker(tmp_path: Path):  # type: ignore[no-untyped-def]
    d = tmp_path / "broker"
    d.mkdir()
    b = Broker(d)
    yield b
    b.stop()


def suites_dir(tmp_path: Path, count: int, n: int = 2000) -> Path:
    d = tmp_path / "suites"
    d.mkdir(exist_ok=True)
    for i in range(count):
        write_suite(d, f"s{i}", SUITE.format(name=f"res-set-{i}", n=n))
    return d


def make_agent(client: redis.Redis, names: StreamNames, tmp_path: Path, suites: Path,
               runner, pushed: list[RunResult], heartbeat_ttl_s: int = 60) -> Agent:  # type: ignore[no-untyped-def]
    config = AgentConfig(names=names, platform="p1", consumer="p1-a", suites_dir=suites,
                         work_dir=tmp_path / "work", results_dir=tmp_path / "results",
                         block_ms=200, idle_claim_ms=60_000, heartbeat_ttl_s=heartbeat_ttl_s)
    return Agent(client, config, pushed.extend, runner)


def test_broker_outage_mid_test_is_ridden_out_without_rerun(broker: Broker,
                                                            tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"o{uuid.uuid4().hex[:6]}")
    event = publish_event(broker.client(), names, "1" * 40)
    calls: list[str] = []

    def runner_with_outage(config: SessionConfig, suites: list[Suite]) -> list[RunResult]:
        calls.extend(s.name for s in suites)
        results = run_suites(config, suites)
        if len(calls) == 1:  # the broker dies as the first test ends, back 2 s later
            broker.stop()
            threading.Timer(2.0, broker.start).start()
        return results

    pushed: list[RunResult] = []
    agent = make_agent(broker.client(), names, tmp_path, suites_dir(tmp_path, 2),
                       runner_with_outage, pushed)
    assert agent.run(max_events=1) == 1
    assert calls == ["res-set-0", "res-set-1"]  # nothing ran twice
    assert sorted(r.test_name for r in pushed) == ["res-set-0", "res-set-1"]
    client = broker.client()
    assert client.xpending(names.builds, "platform:p1")["pending"] == 0
    done = [s for s in read_statuses(client, names, event.id) if s.test_name == EVENT_DONE]
    assert [(s.platform, s.state) for s in done] == [("p1", "completed")]


def test_suite_that_cannot_run_is_failed_and_the_event_goes_on(broker: Broker,
                                                               tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"f{uuid.uuid4().hex[:6]}")
    event = publish_event(broker.client(), names, "2" * 40)

    def runner(config: SessionConfig, suites: list[Suite]) -> list[RunResult]:
        if suites[0].name == "res-set-0":
            raise OSError("exec format error: redis-server")
        return run_suites(config, suites)

    pushed: list[RunResult] = []
    agent = make_agent(broker.client(), names, tmp_path, suites_dir(tmp_path, 2), runner,
                       pushed)
    assert agent.run(max_events=1) == 1
    assert [r.test_name for r in pushed] == ["res-set-1"]
    states = {s.test_name: s for s in read_statuses(broker.client(), names, event.id)}
    assert states["res-set-0"].state == "failed" and "exec format" in states["res-set-0"].reason
    assert states["res-set-1"].state == "completed"
    assert states[EVENT_DONE].state == "completed"


def test_heartbeat_stays_alive_through_a_test_longer_than_its_ttl(broker: Broker,
                                                                  tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"h{uuid.uuid4().hex[:6]}")
    publish_event(broker.client(), names, "3" * 40)
    seen: list[tuple[bool, str]] = []

    def slow_runner(config: SessionConfig, suites: list[Suite]) -> list[RunResult]:
        time.sleep(4.0)  # longer than the 2 s heartbeat TTL
        (beat,) = [h for h in heartbeats(broker.client(), names) if h.agent == "p1-a"]
        seen.append((beat.alive, beat.info))
        return run_suites(config, suites)

    pushed: list[RunResult] = []
    agent = make_agent(broker.client(), names, tmp_path, suites_dir(tmp_path, 1), slow_runner,
                       pushed, heartbeat_ttl_s=2)
    assert agent.run(max_events=1) == 1
    assert seen and seen[0][0] and "res-set-0" in seen[0][1]


def test_sigterm_with_events_queued_then_restart_drops_nothing(broker: Broker,
                                                               tmp_path: Path) -> None:
    names = StreamNames.with_prefix(f"q{uuid.uuid4().hex[:6]}")
    shas = [f"{i:040x}" for i in (7, 8, 9)]
    for sha in shas:
        publish_event(broker.client(), names, sha)
    pushed: list[RunResult] = []
    suites = suites_dir(tmp_path, 1)
    holder: dict[str, Agent] = {}

    def stopping_runner(config: SessionConfig, suites: list[Suite]) -> list[RunResult]:
        holder["agent"].stop()  # SIGTERM during the first event's test: finish it, exit
        return run_suites(config, suites)

    first = make_agent(broker.client(), names, tmp_path, suites, stopping_runner, pushed)
    holder["agent"] = first
    first.run()
    assert len(pushed) == 1
    second = make_agent(broker.client(), names, tmp_path, suites, run_suites, pushed)
    assert second.run(max_events=2) == 2
    assert sorted(r.context.git.hash or "" for r in pushed) == shas  # each sha exactly once
    assert broker.client().xpending(names.builds, "platform:p1")["pending"] == 0
