"""Runner fidelity and orchestration overhead (issue 2).

(a) Fidelity: ops/sec that ``rbs run`` reports for a SET suite divided by ops/sec of the
    same redis-benchmark command run by hand against a hand-started redis-server with the same
    pinning (server on the first allocated core, client on the next). Runs are interleaved
    (rbs, hand, rbs, hand, ...) so drift in machine load hits both sides alike. Median of N.
(b) Overhead per test: wall time of one test run minus the client tool's own runtime, preload
    excluded (oss-standalone). Median of N.

Usage: .venv/bin/python benchmarks/runner_bench.py [--runs 5] [--requests 300000]
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.loadgen.redis_benchmark import parse_csv
from redis_benchmarks_spec.runner.cpus import CpuAllocator
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog

ARGS = "-c 50 -r 100000 -d 100 -t set"
SUITE = """
version: 0.4
name: bench-set-100B
dbconfig:
  configuration-parameters:
    save: '""'
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: {args} -n {n}
"""


def by_hand(n: int, server_cpu: int, client_cpu: int, workdir: Path) -> float:
    """Start redis-server and redis-benchmark ourselves with taskset, same args as the suite."""
    port = free_port()
    server = subprocess.Popen(
        ["taskset", "-c", str(server_cpu), shutil.which("redis-server") or "redis-server",
         "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", str(workdir)],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        client = redis.Redis(port=port)
        wait_for(lambda: _pings(client), 10)
        out = subprocess.run(
            ["taskset", "-c", str(client_cpu), "redis-benchmark", "-h", "127.0.0.1", "-p",
             str(port), "--csv", *ARGS.split(), "-n", str(n)],
            capture_output=True, text=True, timeout=600, check=True)
        return parse_csv(out.stdout, "by-hand").totals.ops_per_sec
    finally:
        server.terminate()
        server.wait(timeout=10)


def _pings(client: redis.Redis) -> bool:
    try:
        return bool(client.ping())
    except redis.ConnectionError:
        return False


def via_rbs(suites: Path, out: Path) -> tuple[float, float]:
    """One rbs test run: (ops/sec, overhead seconds)."""
    config = SessionConfig(tools=ToolPaths(), results_dir=out)
    start = time.monotonic()
    results = run_suites(config, load_catalog(suites).suites)
    wall = time.monotonic() - start
    r = results[0]
    if not r.ok or r.result is None:
        raise RuntimeError(f"rbs run failed: {r.reason}")
    overhead = wall - (r.tool_duration_s or 0.0) - (r.preload_duration_s or 0.0)
    return r.result.totals.ops_per_sec, overhead


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--requests", type=int, default=300_000)
    args = parser.parse_args()
    plan = CpuAllocator().plan(1, 1)
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp)
        suites = root / "suites"
        suites.mkdir()
        (suites / "bench.yml").write_text(SUITE.format(args=ARGS, n=args.requests))
        rbs_ops, hand_ops, overheads = [], [], []
        for i in range(args.runs):
            # alternate which side goes first (ABBA) so machine drift does not favour one
            if i % 2:
                hand_ops.append(by_hand(args.requests, plan.server[0], plan.client[0], root))
            ops, overhead = via_rbs(suites, root / f"out{i}")
            rbs_ops.append(ops)
            overheads.append(overhead)
            if not i % 2:
                hand_ops.append(by_hand(args.requests, plan.server[0], plan.client[0], root))
            print(f"run {i + 1}: rbs {ops:,.0f} ops/s, by hand {hand_ops[-1]:,.0f} ops/s, "
                  f"overhead {overhead:.3f} s", flush=True)
    ratio = statistics.median(rbs_ops) / statistics.median(hand_ops)
    print(f"pinning: server cpu {plan.server}, client cpu {plan.client}")
    print(f"fidelity (median rbs / median by hand, {args.runs} runs each): {ratio:.3f}  "
          f"(target 0.97-1.03)")
    print(f"orchestration overhead per test (median): {statistics.median(overheads):.3f} s  "
          f"(min {min(overheads):.3f}, max {max(overheads):.3f}; target < 1.0 s)")


if __name__ == "__main__":
    main()
