"""What a datasink push costs the agent, in instructions: a figure the neighbours on a shared
machine do not move (CPU seconds there moved by +-20 % between runs of the same code).

The 8 agents' pushes of history_scale.py (benchmarks/history_lab.py: each agent's share of
COMMITS x 4 platforms x SUITES, a commit at a time, with the neighbour's re-pushes), made one
after another by one process against a real datasink, under callgrind (``valgrind
--tool=callgrind``, the redis-server it starts is not traced). The process runs twice, once
building the runs only and once building and pushing them: the difference, per point
pushed, is the push.

Usage: .venv/bin/python benchmarks/push_instructions.py [--commits 4] [--suites 40]
(about a minute on 2 cores: two runs under valgrind)
"""

from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from history_lab import AgentJob, LabShape, agent_runs

AGENTS = 8


def work(shape: LabShape, push: bool) -> int:
    """Build every agent's runs, and push them if ``push``; the points pushed."""
    import redis

    from redis_benchmarks_spec.common.process import free_port
    from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
    from redis_benchmarks_spec.datasink.writer import push_results

    with tempfile.TemporaryDirectory(prefix="rbs-push-instructions-") as tmp:
        sink = EmbeddedDatasink(Path(tmp), port=free_port())
        sink.up()
        try:
            client = redis.Redis.from_url(sink.url, socket_timeout=600)
            runs = {a: agent_runs(AgentJob(sink.url, shape, a, AGENTS)) for a in range(AGENTS)}
            known: dict[int, set[str]] = {a: set() for a in range(AGENTS)}
            points = 0
            for commit in range(shape.commits if push else 0):
                for agent in range(AGENTS):
                    own, again = runs[agent][commit]
                    points += push_results(client, own, known_series=known[agent]).datapoints
                    if again:
                        push_results(client, again, known_series=known[agent])
            return points
        finally:
            sink.down()


def instructions(args: argparse.Namespace, mode: str) -> tuple[int, int]:
    """(instructions, points) of this script run in ``mode`` under callgrind."""
    with tempfile.TemporaryDirectory(prefix="rbs-callgrind-") as tmp:
        out = subprocess.run(
            ["valgrind", "--tool=callgrind", f"--callgrind-out-file={tmp}/cg.out",
             sys.executable, __file__, "--commits", str(args.commits), "--suites",
             str(args.suites), "--mode", mode],
            capture_output=True, text=True, timeout=1800, check=True,
            env={**os.environ, "PYTHONHASHSEED": "0"})
    found = re.search(r"Collected : (\d+)", out.stderr)
    points = re.search(r"points (\d+)", out.stdout)
    if not found or not points:
        raise SystemExit(f"callgrind printed no count:\n{out.stderr[-2000:]}")
    return int(found.group(1)), int(points.group(1))


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--commits", type=int, default=4)
    parser.add_argument("--suites", type=int, default=40)
    parser.add_argument("--mode", choices=("build", "push"), help=argparse.SUPPRESS)
    args = parser.parse_args()
    shape = LabShape(args.commits, 4, args.suites, 5, end_ms=1_780_000_000_000)
    if args.mode:
        print(f"points {work(shape, args.mode == 'push')}")
        return 0
    built, _ = instructions(args, "build")
    pushed, points = instructions(args, "push")
    print(f"push of {points:,} points by {AGENTS} agents' shares ({args.commits} commits x 4 "
          f"platforms x {args.suites} suites): {(pushed - built) / 1e6:,.1f} M instructions "
          f"= {(pushed - built) / points / 1000:,.1f} K a point")
    return 0


if __name__ == "__main__":
    sys.exit(main())
