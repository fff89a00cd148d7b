"""Agent intake overhead and exactly-once delivery at volume (issue 6, item 5).

N build events are queued on a real broker (redis-server on a free port, stopped by its pid);
two agents of platform ``p1`` and one of ``p2`` drain them. The runner is an instant stand-in
(benchmark time is not what is measured here): every other step is real (decode, platform
and cancel checks, ledger, status hash, artifact fetch + sha256 + unpack, keepalive, ACK).

Prints: the pickup latency of one event published to idle agents (XADD -> runner called),
the time to drain N events, per-event overhead, and the exactly-once check per platform
(each event's test run once per platform, nothing pending).

Usage: .venv/bin/python benchmarks/agent_bench.py [--events 1000]
"""

from __future__ import annotations

import argparse
import hashlib
import io
import statistics
import sys
import tarfile
import tempfile
import threading
import time
from collections import Counter
from dataclasses import replace
from pathlib import Path

import redis

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.builder.compile import Artifact
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent, event_id_for, new_id
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite

sys.path.insert(0, str(Path(__file__).resolve().parent))
from events_bench import start_redis, stop  # the same throwaway broker

NAMES = StreamNames.with_prefix("agentbench")
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
PROBES = 20
SUITE = """name: bench-noop
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -n 1 -t set
"""


class Recorder:
    """The stand-in runner: notes who ran what, and when."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.runs: list[tuple[str, str]] = []  # (platform, sha)
        self.called_at: dict[tuple[str, str], float] = {}

    def runner(self, config: SessionConfig, suites: list[Suite]) -> list[RunResult]:
        key = (config.context.platform, config.context.git.hash or "")
        with self.lock:
            self.called_at.setdefault(key, time.perf_counter())
            self.runs.append(key)
        return [RunResult(test_name=s.name, run_id=new_id(), status="ok",
                              context=config.context) for s in suites]


def tiny_artifact() -> Artifact:
    """A valid artifact tarball (one small 'redis-server' file): fetch and unpack are real."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        body = b"#!/bin/sh\necho 'Redis server v=0.0.0'\n"
        info = tarfile.TarInfo("redis-server")
        info.size = len(body)
        tar.addfile(info, io.BytesIO(body))
    data = buf.getvalue()
    return Artifact(data=data, sha256=hashlib.sha256(data).hexdigest(), variant=VARIANT,
                    env={}, redis_version="0.0.0", compiler_version="none", build_seconds=0)


def event(client: redis.Redis, ref: ArtifactRef, sha: str) -> BuildEvent:
    request_id = new_id()
    # the artifact is signed for each commit it is announced for (agents check the MAC)
    signed = replace(ref, mac=signing.mac(signing.load_key(), sha, VARIANT, ref.sha256,
                                          ref.size_bytes))
    return BuildEvent(id=event_id_for(request_id, VARIANT), request_id=request_id,
                      org="redis", repo="redis", branch="unstable", sha=sha,
                      commit_time_ms=0, build_variant=VARIANT, artifact=signed,
                      redis_version="0.0.0")


def make_agents(port: int, work: Path, recorder: Recorder) -> list[Agent]:
    suites = work / "suites"
    suites.mkdir()
    (suites / "noop.yml").write_text(SUITE)
    agents = []
    for platform, name in (("p1", "p1-a"), ("p1", "p1-b"), ("p2", "p2-a")):
        config = AgentConfig(names=NAMES, platform=platform, consumer=name, suites_dir=suites,
                             work_dir=work / name, results_dir=work / f"r-{name}",
                             block_ms=100, idle_claim_ms=60_000)
        agents.append(Agent(redis.Redis(port=port, socket_timeout=10), config,
                            lambda results: None, recorder.runner))
    return agents


def pickup_latencies(client: redis.Redis, ref: object, recorder: Recorder,
                     samples: int) -> list[float]:
    """Seconds from XADD of one event to the runner call of an idle p1 agent, per sample."""
    out = []
    for i in range(samples):
        time.sleep(0.2)  # agents are back in their blocking read
        sha = f"fe{i:038x}"  # probes: hex shas apart from the batch
        start = time.perf_counter()
        publish(client, NAMES.builds, event(client, ref, sha))
        while ("p1", sha) not in recorder.called_at or ("p2", sha) not in recorder.called_at:
            assert time.perf_counter() - start < 10, "no agent picked the event up"
            time.sleep(0.001)
        out.append(recorder.called_at[("p1", sha)] - start)
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--events", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-agent-bench-") as tmp:
        work = Path(tmp)
        proc, port = start_redis(work)
        try:
            return run(port, work, args.events)
        finally:
            stop(proc)


def run(port: int, work: Path, n: int) -> int:
    client = redis.Redis(port=port, socket_timeout=10)
    ref = artifacts.store(client, artifacts.artifact_key(NAMES.prefix, "f" * 40, VARIANT),
                          tiny_artifact(), artifacts.Signer(signing.load_key(), "f" * 40,
                                                            VARIANT))
    recorder = Recorder()
    agents = make_agents(port, work, recorder)
    threads = [threading.Thread(target=a.run, daemon=True) for a in agents]
    for t in threads:
        t.start()
    latencies = pickup_latencies(client, ref, recorder, PROBES)
    shas = [f"{i:040x}" for i in range(1, n + 1)]
    pipe = client.pipeline(transaction=False)
    for sha in shas:
        pipe.xadd(NAMES.builds, event(client, ref, sha).encode())  # type: ignore[arg-type]
    start = time.perf_counter()
    pipe.execute()
    while len(recorder.runs) < 2 * (PROBES + n) and time.perf_counter() - start < 600:
        time.sleep(0.01)
    elapsed = time.perf_counter() - start
    for a in agents:
        a.stop()
    for t in threads:
        t.join(timeout=30)
    return report(client, recorder, shas, latencies, elapsed)


def report(client: redis.Redis, recorder: Recorder, shas: list[str], latencies: list[float],
           elapsed: float) -> int:
    counts = Counter(recorder.runs)
    per_platform = {p: sum(1 for (pp, s) in counts if pp == p and s in set(shas))
                    for p in ("p1", "p2")}
    duplicates = sum(c - 1 for c in counts.values() if c > 1)
    pending = {g: client.xpending(NAMES.builds, g)["pending"]
               for g in ("platform:p1", "platform:p2")}
    n = len(shas)
    ms = sorted(x * 1000 for x in latencies)
    print(f"pickup latency (XADD -> runner called, idle agents, {len(ms)} samples): "
          f"median {statistics.median(ms):.1f} ms, max {ms[-1]:.1f} ms")
    print(f"drain: {n} events x 2 platforms (3 agents) in {elapsed:.2f} s "
          f"= {elapsed / n * 1000:.1f} ms per event, {2 * n / elapsed:.0f} event-runs/s")
    print(f"runs per platform: {per_platform}, duplicates: {duplicates}, pending: {pending}")
    ok = per_platform == {"p1": n, "p2": n} and duplicates == 0 and not any(pending.values())
    print("exactly once per platform, 0 lost:", "yes" if ok else "NO")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
