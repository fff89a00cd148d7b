"""Concurrency to the limits of this host (issue 24): a real memtier_benchmark sweep of
connections up to 10,000 and beyond, each point under the minimum rule, and its report.

Runs ``rbs run --sweep connections=...`` on a memtier GET/SET suite (1:10, 32-byte values,
10,000 keys; memtier's 4 threads, so -c = connections / 4) against a fresh redis-server per
point, then prints per point: connections, requests per connection (and the rule's minimum),
measured and wall seconds, ops/sec, p50/p99/p99.9/p99.99 ms, whether the point met the
minimum, the limits raised (maxclients, open files of server and tool) and what else ran on
the pinned cores during the point (the project's disturbed flag and foreign CPU), with the
host's load average before and after. It also writes the HTML report of the session.

Usage: .venv/bin/python benchmarks/concurrency_sweep.py [--connections 10,100,...,19500]
       [--min-requests-per-connection 100] [--warmup-seconds 2] [--test-time 5]
Run it alone (``flock /tmp/rbs-heavy.lock ...``): tens of thousands of connections on two
cores measure the machine, not only Redis.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from redis_benchmarks_spec.results.document import RunResult, find_result_files

SUITE = """
version: 0.4
name: memtier-connections-get-set-32B
description: GET/SET 10:1 on 10,000 keys of 32 bytes, for connection sweeps
tested-commands: [get, set]
redis-topologies: [oss-standalone]
clientconfig:
  tool: memtier_benchmark
  arguments: --ratio 1:10 --key-pattern R:R --key-maximum 10000 -d 32 -t 4 -c 50 --hide-histogram
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
DEFAULT_POINTS = "10,100,1000,5000,10000,19500"


def _load() -> str:
    return " ".join(f"{v:.2f}" for v in os.getloadavg())


def _ms(doc: RunResult, label: str) -> str:
    assert doc.result is not None
    value = doc.result.totals.latency.percentiles_ms.get(label)
    return "-" if value is None else f"{value:,.2f}"


def _row(doc: RunResult) -> str:
    conc = doc.concurrency
    if doc.result is None or not conc:
        return f"{doc.sweep.get('value', '?'):>7}  FAILED: {doc.reason}"
    took = conc["limits"].get("server_took") or {}
    foreign = doc.cpu.get("foreign")
    beside = f"{foreign.mean_pct:.0f}%" if foreign else "-"
    return (f"{conc['connections']:>7,} {conc['requests_per_connection']:>9,.1f} "
            f"{conc['rule']['min_requests_per_connection']:>5,} "
            f"{conc['duration_s'] or 0:>7.1f} {conc['wall_s'] or 0:>7.1f} "
            f"{doc.result.totals.ops_per_sec:>9,.0f} {_ms(doc, 'p50.00'):>9} "
            f"{_ms(doc, 'p99.00'):>9} {_ms(doc, 'p99.90'):>9} {_ms(doc, 'p99.99'):>9} "
            f"{'yes' if conc['meets_minimum'] else 'NO':>4} "
            f"{took.get('maxclients') or '-':>7} {took.get('nofile') or '-':>7} "
            f"{conc['limits']['client_nofile']['granted']:>7} {beside:>6} "
            f"{'disturbed' if 'disturbed' in doc.flags else ''}")


HEADER = (f"{'conns':>7} {'req/conn':>9} {'min':>5} {'run s':>7} {'wall s':>7} "
          f"{'ops/sec':>9} {'p50 ms':>9} {'p99 ms':>9} {'p99.9 ms':>9} {'p99.99 ms':>9} "
          f"{'met':>4} {'maxcli':>7} {'srv nof':>7} {'cli nof':>7} {'beside':>6}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--connections", default=DEFAULT_POINTS)
    parser.add_argument("--min-requests-per-connection", default="100")
    parser.add_argument("--warmup-seconds", default="2")
    parser.add_argument("--test-time", default="5")
    parser.add_argument("--results-dir", default=None)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        suites = Path(tmp) / "suites"
        suites.mkdir()
        (suites / "memtier-connections-get-set-32B.yml").write_text(SUITE)
        out = Path(args.results_dir or Path(tmp) / "results")
        print(f"load average before: {_load()}", flush=True)
        run = subprocess.run(
            [str(ROOT / ".venv" / "bin" / "rbs"), "run", "--suites-dir", str(suites),
             "--results-dir", str(out), "--no-datasink", "--sweep",
             f"connections={args.connections}", "--min-requests-per-connection",
             args.min_requests_per_connection, "--warmup-seconds", args.warmup_seconds,
             "--test-time", args.test_time], capture_output=True, text=True, timeout=7200,
            check=False)
        print(f"load average after:  {_load()}")
        if run.returncode != 0:
            print(run.stdout + run.stderr)
            return run.returncode
        docs = sorted((RunResult.read(p) for p in find_result_files(out)),
                      key=lambda d: int(d.sweep["value"]))
        print(HEADER)
        for doc in docs:
            print(_row(doc))
        knee = [line for line in run.stdout.splitlines() if line.startswith("knee of")]
        print("\n".join(knee))
        session = next(out.rglob("sweep.json")).parent
        page = (Path(args.results_dir) if args.results_dir else Path.cwd()) / \
            "concurrency-sweep.html"
        subprocess.run([str(ROOT / ".venv" / "bin" / "rbs"), "report", str(session),
                        "--output", str(page)], check=True, timeout=600, capture_output=True)
        print(f"report: {page}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
