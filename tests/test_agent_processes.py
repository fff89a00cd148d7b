"""Agents as real `rbs agent` processes: kill -9 mid-test, claim by the other agent of the
platform, results in a real datasink with no duplicate points."""

from __future__ import annotations

import os
import signal
import subprocess
import time
import uuid
from pathlib import Path

import redis

from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.names import StreamNames
from tests.cli import RBS, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (registers the fixture)
    datasink_fixture,
    series_of_test,
)
from tests.pipeline_fixtures import SUITE, publish_event
from tests.procs import descendants


def start_agent(tmp: Path, broker: str, sink: str, prefix: str, consumer: str,
                suites: Path) -> subprocess.Popen[bytes]:
    log = (tmp / f"{consumer}.log").open("wb")
    return subprocess.Popen(
        [RBS, "agent", "--broker", broker, "--stream-prefix", prefix, "--platform", "p1",
         "--consumer", consumer, "--idle-claim-ms", "3000", "--block-ms", "500",
         "--suites-dir", str(suites), "--datasink", sink, "--work-dir", str(tmp / consumer),
         "--results-dir", str(tmp / f"results-{consumer}")],
        stdout=log, stderr=subprocess.STDOUT)


def wait_for_child(proc: subprocess.Popen[bytes], name: str, timeout: float = 60) -> list[int]:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        kids = descendants(proc.pid)
        if any(n == name for _, n, _ in kids):
            return [k.pid for k, _, _ in kids]
        time.sleep(0.1)
    raise AssertionError(f"{name} never started under pid {proc.pid}")


def points(sink: redis.Redis, test: str) -> dict[str, int]:
    keys = series_of_test(sink, test)
    return {k.decode(): len(sink.execute_command("TS.RANGE", k, "-", "+")) for k in keys}


def test_kill_9_mid_test_is_recovered_by_the_other_agent(redis_server, datasink: EmbeddedDatasink,
                                                          tmp_path: Path) -> None:
    prefix = f"k{uuid.uuid4().hex[:6]}"
    names = StreamNames.with_prefix(prefix)
    suites = tmp_path / "suites"
    suites.mkdir()
    test = f"kill9-set-{prefix}"
    write_suite(suites, "s", SUITE.format(name=test, n=300_000))
    sink = datasink.client()
    publish_event(redis_server.client(), names, "e" * 40)
    first = start_agent(tmp_path, redis_server.url, datasink.url, prefix, "agent-a", suites)
    orphans: list[int] = []
    second = None
    try:
        orphans = wait_for_child(first, "redis-benchmark")
        os.kill(first.pid, signal.SIGKILL)
        first.wait(timeout=10)
        for pid in orphans:  # the dead agent's server and client, stopped by their pids
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        assert points(sink, test) == {}  # the killed run never reached the datasink
        second = start_agent(tmp_path, redis_server.url, datasink.url, prefix, "agent-b",
                             suites)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and not points(sink, test):
            time.sleep(0.5)
        time.sleep(2.0)  # a duplicate push would land now
        series = points(sink, test)
        assert series, (tmp_path / "agent-b.log").read_text()[-2000:]
        assert set(series.values()) == {1}, series  # one point per series: no duplicates
        assert any("/by.hash/" in k and ("e" * 40) in k for k in series), series
        assert any("/by.branch/" in k and "/unstable/" in k for k in series), series
        client = redis_server.client()
        assert client.xpending(names.builds, "platform:p1")["pending"] == 0
        second.send_signal(signal.SIGTERM)
        assert second.wait(timeout=60) == 0  # SIGTERM: clean exit
    finally:
        for proc in (first, second):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)


def test_sigterm_mid_test_finishes_it_and_a_restart_does_the_rest(redis_server,
                                                                  datasink: EmbeddedDatasink,
                                                                  tmp_path: Path) -> None:
    prefix = f"s{uuid.uuid4().hex[:6]}"
    names = StreamNames.with_prefix(prefix)
    suites = tmp_path / "suites"
    suites.mkdir()
    tests = [f"term-{i}-{prefix}" for i in range(2)]
    for i, test in enumerate(tests):
        write_suite(suites, f"s{i}", SUITE.format(name=test, n=100_000))
    sink = datasink.client()
    publish_event(redis_server.client(), names, "5" * 40)
    first = start_agent(tmp_path, redis_server.url, datasink.url, prefix, "agent-a", suites)
    again = None
    try:
        wait_for_child(first, "redis-benchmark")
        first.send_signal(signal.SIGTERM)
        assert first.wait(timeout=120) == 0  # the running test was finished, then a clean exit
        finished = [t for t in tests if points(sink, t)]
        assert len(finished) == 1  # the test under way reached the datasink, the next did not
        client = redis_server.client()
        assert client.xpending(names.builds, "platform:p1")["pending"] == 1  # handed back
        again = start_agent(tmp_path, redis_server.url, datasink.url, prefix, "agent-a", suites)
        deadline = time.monotonic() + 120
        while time.monotonic() < deadline and \
                client.xpending(names.builds, "platform:p1")["pending"]:
            time.sleep(0.3)
        for test in tests:
            series = points(sink, test)
            assert series and set(series.values()) == {1}, (test, series)
        again.send_signal(signal.SIGTERM)
        assert again.wait(timeout=60) == 0
    finally:
        for proc in (first, again):
            if proc is not None and proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
