"""``rbs run --dry-run``: what the run would do, on stdout (a line a test and a total, or one
JSON document with ``--format json``); nothing is started."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.runner.session import PlannedTest, SessionConfig, plan_tests
from redis_benchmarks_spec.runner.sweep import Sweep
from redis_benchmarks_spec.suites.suite import Suite


def print_plan(config: SessionConfig, suites: list[Suite], args: argparse.Namespace,
               sweep: Sweep | None) -> None:
    """Each planned test with its topology, tools and suite arguments (or why it would be
    skipped), then how many runs the repetitions and sweep values make."""
    tests = plan_tests(config, suites)
    rounds = args.repetitions or 1
    values = list(sweep.values) if sweep else []
    runnable = [t for t in tests if not t.skip_reason]
    runs = len(runnable) * rounds * max(1, len(values))
    if args.format == "json":
        print(json.dumps({
            "tests": [_record(t) for t in tests], "repetitions": rounds,
            "sweep": {"param": sweep.param, "values": values} if sweep else None,
            "test_time": args.test_time, "runs": runs}, indent=2))
        return
    console = make_console()
    for test in tests:
        topology = test.topology.name if test.topology else "?"
        arguments = " | ".join(c.arguments for c in test.suite.clientconfigs)
        note = f"  [yellow]skip: {escape(test.skip_reason)}[/]" if test.skip_reason else ""
        console.print(f"{escape(test.suite.name)} {escape(f'[{topology}]')} "
                      f"{','.join(test.suite.tools)}: {escape(arguments)}{note}",
                      highlight=False, soft_wrap=True)
    console.print(_total(len(runnable), rounds, sweep, runs, args.test_time), highlight=False,
                  soft_wrap=True)


def _record(test: PlannedTest) -> dict[str, object]:
    return {"test": test.suite.name, "topology": test.topology.name if test.topology else "?",
            "tools": list(test.suite.tools),
            "arguments": [c.arguments for c in test.suite.clientconfigs],
            "skip": test.skip_reason or None}


def _total(tests: int, rounds: int, sweep: Sweep | None, runs: int,
           test_time: int | None) -> str:
    parts = [f"{tests} test(s)"]
    if rounds > 1:
        parts.append(f"x {rounds} repetitions")
    if sweep:
        parts.append(f"x {len(sweep.values)} {sweep.param} values "
                     f"({','.join(str(v) for v in sweep.values)})")
    line = f"plan: {' '.join(parts)} = {runs} run(s)"
    if test_time:
        line += (f"; --test-time {test_time}: each client's duration (or redis-benchmark's -n) "
                 "is set when it runs, the arguments above are the suite's")
    return line
