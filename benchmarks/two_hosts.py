"""Client on one host, server on another: what the network path adds, in figures.

Runs one memtier GET suite (2 connections, 1 thread) with `rbs run`: over loopback as
always, then from a client "host" in another network namespace over a veth pair and SSH
(tests/twohost_net.py), then with a link delay added (tc netem, or the netfilter-queue
delay where the kernel has no netem). Prints ops/sec, p50 / p99 latency, the measured RTT
and flags per case, plus the 1-minute load average, since other work on the machine moves
every figure. Needs root (network namespaces).

    .venv/bin/python benchmarks/two_hosts.py [--test-time 5] [--delays 1,5,20]
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import tempfile
from pathlib import Path

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from redis_benchmarks_spec.results.document import RunResult, find_result_files
from tests.test_two_hosts import MEMTIER_SUITE, rbs_argv
from tests.twohost_net import TwoHosts

TEST = "memtier-twohost-get"


def run(argv: list[str], results: Path) -> RunResult:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(argv, capture_output=True, text=True, timeout=600, env=env,
                          check=False)
    if done.returncode != 0:
        raise SystemExit(f"rbs run failed ({done.returncode}):\n{done.stderr[-2000:]}")
    (result,) = [RunResult.read(p) for p in find_result_files(results)]
    return result


def line(case: str, result: RunResult) -> str:
    assert result.result is not None
    lat = result.result.totals.latency.percentiles_ms
    rtt = result.network.get("rtt_ms", {}).get("median")
    rtt_text = f"{rtt:8.3f}" if rtt is not None else "       -"
    return (f"{case:<28} {result.result.totals.ops_per_sec:>10,.0f} {lat.get('p50.00', 0):>9.3f} "
            f"{lat.get('p99.00', 0):>9.3f} {rtt_text} {os.getloadavg()[0]:>6.2f}  "
            f"{','.join(result.flags) or '-'}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--test-time", default="5")
    parser.add_argument("--delays", default="1,5,20", help="ms, each added on top of the last")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="rbs-two-hosts-") as tmp_text:
        tmp = Path(tmp_text)
        suites = tmp / "suites"
        suites.mkdir()
        (suites / f"{TEST}.yml").write_text(MEMTIER_SUITE)
        print(f"{'case':<28} {'ops/sec':>10} {'p50 ms':>9} {'p99 ms':>9} {'rtt ms':>8} "
              f"{'load1':>6}  flags")
        local = [sys.executable, "-m", "redis_benchmarks_spec.cli.main", "run",
                 "--suites-dir", str(suites), "--no-datasink", "--results-dir",
                 str(tmp / "loopback"), "--test", TEST, "--test-time", args.test_time]
        print(line("loopback (one host)", run(local, tmp / "loopback")), flush=True)
        hosts = TwoHosts(tmp)
        try:
            hosts.up()
            added = 0
            for step in [0, *[int(d) for d in args.delays.split(",")]]:
                if step:
                    hosts.remove_delay()
                    hosts.add_delay(step)
                    added = step
                out = tmp / f"two-hosts-{added}"
                argv = rbs_argv(hosts, suites, out, "--test", TEST,
                                "--test-time", args.test_time)
                print(line(f"two hosts, +{added} ms", run(argv, out)), flush=True)
        finally:
            hosts.down()
    return 0


if __name__ == "__main__":
    sys.exit(main())
