"""The webhook receiver under idle-connection pressure (issue 10).

Starts a throwaway broker and a real ``rbs api`` (waitress), opens N idle TCP connections
(half of them half-open: request headers started, never finished), then times M valid signed
deliveries, each a distinct labelled pull-request payload. GitHub gives up after 10 s; the
target is an answer within 1 s.

Usage: .venv/bin/python benchmarks/webhook_bench.py [--idle 200] [--deliveries 20]
"""

from __future__ import annotations

import argparse
import http.client
import json
import os
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from redis_benchmarks_spec.api.webhook import signature_for
from redis_benchmarks_spec.common.process import free_port, wait_for

sys.path.insert(0, str(Path(__file__).resolve().parent))
from events_bench import start_redis, stop  # the same throwaway broker

SECRET = "bench-secret"
SAMPLE = Path(__file__).resolve().parents[1] / "tests" / "fixtures" / "github" / \
    "event_webhook_labelled_pr.json"
RBS = str(Path(sys.executable).parent / "rbs")


def post(port: int, body: bytes) -> int:
    conn = http.client.HTTPConnection("127.0.0.1", port, timeout=15)
    try:
        conn.request("POST", "/webhook", body=body, headers={
            "X-GitHub-Event": "pull_request", "X-GitHub-Delivery": os.urandom(8).hex(),
            "X-Hub-Signature-256": signature_for(SECRET.encode(), body)})
        return conn.getresponse().status
    finally:
        conn.close()


def healthy(port: int) -> bool:
    try:
        conn = http.client.HTTPConnection("127.0.0.1", port, timeout=2)
        conn.request("GET", "/healthz")
        return conn.getresponse().status == 200
    except OSError:
        return False


def measure(port: int, idle: int, deliveries: int) -> list[float]:
    held = []
    for i in range(idle):
        s = socket.create_connection(("127.0.0.1", port), timeout=5)
        if i % 2:
            s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
        held.append(s)
    data = json.loads(SAMPLE.read_bytes())
    times = []
    try:
        for i in range(deliveries):
            data["pull_request"]["head"]["sha"] = f"{i + 1:040x}"
            started = time.perf_counter()
            status = post(port, json.dumps(data).encode())
            times.append(time.perf_counter() - started)
            if status != 201:
                sys.exit(f"delivery {i} answered {status}")
    finally:
        for s in held:
            s.close()
    return times


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle", type=int, default=200)
    parser.add_argument("--deliveries", type=int, default=20)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        broker, broker_port = start_redis(Path(tmp))
        port = free_port()
        env = {**os.environ, "RBS_WEBHOOK_SECRET": SECRET}
        api = subprocess.Popen([RBS, "api", "--broker", f"redis://127.0.0.1:{broker_port}",
                                "--port", str(port), "--stream-prefix", "bench"], env=env,
                               stdout=subprocess.DEVNULL, stderr=subprocess.STDOUT)
        try:
            if not wait_for(lambda: healthy(port), timeout=30):
                sys.exit("rbs api did not start")
            times = measure(port, args.idle, args.deliveries)
        finally:
            stop(api)
            stop(broker)
    print(f"{args.deliveries} valid deliveries with {args.idle} idle connections open: "
          f"median {statistics.median(times) * 1000:.1f} ms, max {max(times) * 1000:.1f} ms "
          f"(target: under 1000 ms)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
