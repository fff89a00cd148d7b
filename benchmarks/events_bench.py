"""Event pipeline latency and throughput (issue 6).

(a) Trigger-to-pickup latency: a consumer blocks in ``GroupConsumer.read``; another thread
    XADDs a build event; latency = time from just before XADD to the moment ``read`` returns
    it. Median, p95 and max over N samples.
(b) Drain: 1,000 build events queued before the consumer starts; time for one
    ``GroupConsumer`` to read, decode and ACK them all. Checks 0 lost: acks == 1000, pending
    == 0, every event id seen exactly once.

Runs against a redis-server started on a free port and stopped by its own pid.
Usage: .venv/bin/python benchmarks/events_bench.py [--samples 200] [--events 1000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.events.consumer import GroupConsumer, publish
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent, event_id_for
from redis_benchmarks_spec.events.names import StreamNames

NAMES = StreamNames.with_prefix("bench")


def start_redis(workdir: Path) -> tuple[subprocess.Popen[bytes], int]:
    """A throwaway redis-server on a free port."""
    binary = shutil.which("redis-server")
    if not binary:
        sys.exit("redis-server not found (scripts/setup.sh installs it)")
    port = free_port()
    proc = subprocess.Popen([binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "",
                             "--appendonly", "no", "--dir", str(workdir)],
                            stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
    client = redis.Redis(port=port)
    if not wait_for(lambda: _pings(client), timeout=10):
        stop(proc)
        sys.exit(f"redis-server on port {port} did not start")
    return proc, port


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def stop(proc: subprocess.Popen[bytes]) -> None:
    """Stop the server we started, by its pid."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)


def event(i: int) -> BuildEvent:
    """A realistic build event."""
    request_id = f"req{i:06d}"
    return BuildEvent(
        id=event_id_for(request_id, "gcc:12.2.0-amd64-debian-bookworm-default"),
        request_id=request_id, org="redis", repo="redis", branch="unstable", sha=f"{i:040x}",
        commit_time_ms=1_700_000_000_000 + i,
        build_variant="gcc:12.2.0-amd64-debian-bookworm-default",
        artifact=ArtifactRef("redis", f"bench:artifact:{i}", "0" * 64, 3_500_000, chunks=4),
        redis_version="7.0.15", env={"REDIS_CFLAGS": "-g -fno-omit-frame-pointer"},
    )


def _send_later(producer: redis.Redis, n: int, sent: list[float]) -> None:
    time.sleep(0.002)  # let the consumer enter its blocking read
    sent.append(time.perf_counter())
    publish(producer, NAMES.builds, event(n))


def pickup_latency(port: int, samples: int) -> list[float]:
    """Seconds from XADD to the blocked consumer's read returning it."""
    consumer = GroupConsumer(redis.Redis(port=port), NAMES.builds, "platform:lat", "c1",
                             block_ms=2000, idle_claim_ms=60_000)
    producer = redis.Redis(port=port)
    out: list[float] = []
    for i in range(samples):
        sent: list[float] = []
        thread = threading.Thread(target=_send_later, args=(producer, i, sent))
        thread.start()
        entries = consumer.read()
        got = time.perf_counter()
        thread.join()
        if len(entries) != 1:
            raise RuntimeError(f"sample {i}: expected 1 entry, got {len(entries)}")
        consumer.ack(entries[0].id)
        out.append(got - sent[0])
    return out


def drain(port: int, count: int) -> tuple[float, int, int, int]:
    """Queue ``count`` events, then time one consumer through them: (s, acks, pending, seen)."""
    client = redis.Redis(port=port)
    stream = NAMES.builds + ":drain"
    pipe = client.pipeline(transaction=False)
    for i in range(count):
        pipe.xadd(stream, event(i).encode())  # type: ignore[arg-type]
    pipe.execute()
    consumer = GroupConsumer(client, stream, "platform:drain", "c1", block_ms=200,
                             idle_claim_ms=60_000, count=10)
    seen: set[str] = set()
    acks = 0
    t0 = time.perf_counter()
    while True:
        entries = consumer.read()
        if not entries:
            break
        for entry in entries:
            message = consumer.decode(entry, BuildEvent)
            if message is None:
                raise RuntimeError(f"entry {entry.id} was dead-lettered")
            seen.add(message.id)
            acks += consumer.ack(entry.id)
    elapsed = time.perf_counter() - t0 - 0.2  # the final empty read blocked block_ms
    pending = int(client.xpending(stream, "platform:drain")["pending"])
    return elapsed, acks, pending, len(seen)


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--samples", type=int, default=200)
    parser.add_argument("--events", type=int, default=1000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-events-bench-") as tmp:
        proc, port = start_redis(Path(tmp))
        try:
            lat = sorted(pickup_latency(port, args.samples))
            elapsed, acks, pending, seen = drain(port, args.events)
        finally:
            stop(proc)
    p95 = lat[int(0.95 * (len(lat) - 1))]
    print(f"trigger-to-pickup latency over {len(lat)} samples: median "
          f"{statistics.median(lat) * 1000:.2f} ms, p95 {p95 * 1000:.2f} ms, "
          f"max {lat[-1] * 1000:.2f} ms")
    lost = args.events - seen
    print(f"drain {args.events} queued events (read + decode + ack, 1 consumer): "
          f"{elapsed:.3f} s ({args.events / elapsed:.0f} events/s); acks {acks}, "
          f"pending {pending}, distinct events {seen}, lost {lost}")
    return 0 if (acks == args.events and pending == 0 and lost == 0) else 1


if __name__ == "__main__":
    sys.exit(main())
