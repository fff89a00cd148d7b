"""``rbs run --dry-run``: what the run would do, on stdout (a line a test and a total, or one
JSON document with ``--format json``); nothing is started."""

from __future__ import annotations

import argparse
import json

from rich.markup import escape

from redis_benchmarks_spec.analysis.session_runs import SIDES as AB_SIDES
from redis_benchmarks_spec.cli.ab_args import ab_repetitions, counted, max_pairs, wants_ab
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.runner.session import PlannedTest, SessionConfig, plan_tests
from redis_benchmarks_spec.runner.sweep import Sweep
from redis_benchmarks_spec.suites.suite import Suite


def print_plan(config: SessionConfig, suites: list[Suite], args: argparse.Namespace,
               sweep: Sweep | None) -> None:
    """Each planned test with its topology, tools and suite arguments (or why it would be
    skipped), then how many runs the repetitions and sweep values make."""
    tests = plan_tests(config, suites)
    ab = wants_ab(args)
    rounds = ab_repetitions(args, config) if ab else args.repetitions or 1
    values = list(sweep.values) if sweep else []
    runnable = [t for t in tests if not t.skip_reason]
    sides = len(AB_SIDES) if ab else 1
    runs = len(runnable) * rounds * max(1, len(values)) * sides
    # an A/B re-runs disturbed pairs, and --until-decided adds rounds: up to max_pairs each
    most = len(runnable) * max_pairs(args, rounds, counted(config)) * sides if ab else runs
    if args.format == "json":
        print(json.dumps({
            "tests": [_record(t) for t in tests], "repetitions": rounds,
            "sweep": {"param": sweep.param, "values": values} if sweep else None,
            "test_time": args.test_time, "sides": sides, "runs": runs, "max_runs": most},
            indent=2))
        return
    console = make_console()
    for test in tests:
        topology = test.topology.name if test.topology else "?"
        arguments = " | ".join(c.arguments for c in test.suite.clientconfigs)
        note = f"  [yellow]skip: {escape(test.skip_reason)}[/]" if test.skip_reason else ""
        console.print(f"{escape(test.suite.name)} {escape(f'[{topology}]')} "
                      f"{','.join(test.suite.tools)}: {escape(arguments)}{note}",
                      highlight=False, soft_wrap=True)
    line = _total(len(runnable), rounds, sweep, runs, args.test_time)
    if ab:
        line = line.replace(" = ", f" x {sides} sides (A/B) = ", 1) + \
            _ab_note(args, runs, most)
    console.print(line, highlight=False, soft_wrap=True)


def _ab_note(args: argparse.Namespace, runs: int, most: int) -> str:
    if most <= runs:
        return ""
    why = "more rounds until each test is decided" if args.until_decided else \
        "disturbed pairs re-run"
    return f"; up to {most} run(s) with {why}"


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
