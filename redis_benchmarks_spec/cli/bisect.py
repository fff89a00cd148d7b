"""``rbs bisect --good SHA --bad SHA --test T --local --repo PATH``: the first commit of a
range that makes a test slower. Parsing and printing only: :mod:`bisection.local`."""

from __future__ import annotations

import argparse
import json
from pathlib import Path

from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC, CompareOptions
from redis_benchmarks_spec.bisection.local import BisectError, BisectPlan, bisect
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.ab import parse_duration
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.summary import session_dir
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog

DEFAULT_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the first commit of a range that slows a test",
                       description=__doc__)
    p.add_argument("--good", required=True, help="a commit without the slowdown")
    p.add_argument("--bad", required=True, help="a later commit with it")
    p.add_argument("--test", required=True, help="suite name")
    p.add_argument("--local", action="store_true",
                   help="build and benchmark on this machine (the only mode so far)")
    p.add_argument("--repo", type=Path, default=Path("."), help="git repository of Redis")
    p.add_argument("--suites-dir", type=Path, default=None)
    p.add_argument("--build-variant", default=DEFAULT_VARIANT)
    p.add_argument("--metric", default=DEFAULT_METRIC)
    p.add_argument("--repetitions", type=int, default=4, help="interleaved pairs per probe")
    p.add_argument("--max-builds", type=int, default=12)
    p.add_argument("--time-budget", default=None, metavar="DURATION", help="e.g. 2h")
    p.add_argument("--test-time", type=int, default=None, help="seconds per run")
    p.add_argument("--work-dir", type=Path, default=Path(".cache") / "bisect",
                   help="work tree, built binaries (reused by later bisections) and runs")
    p.add_argument("--format", choices=("table", "json"), default="table")
    p.set_defaults(func=cmd_bisect)


def _plan(args: argparse.Namespace) -> BisectPlan:
    if not args.local:
        raise UsageError("--local", "bisecting through the builder and agents is not "
                         "implemented yet", "give --local to build and benchmark here")
    checks.existing_dir("--repo", args.repo)
    suites_dir = args.suites_dir or default_suites_dir()
    suite = load_catalog(suites_dir).by_name(args.test)
    if suite is None:
        raise UsageError(f"--test {args.test}", f"no suite of that name in {suites_dir}")
    variant = load_variants().get(args.build_variant)
    if variant is None:
        raise UsageError(f"--build-variant {args.build_variant}", "unknown build variant")
    if args.repetitions < 2 or args.max_builds < 2:
        raise UsageError("--repetitions/--max-builds", "must be at least 2")
    work = args.work_dir.resolve()
    session = SessionConfig(tools=ToolPaths(), results_dir=session_dir(work / "runs"),
                            test_time=args.test_time)
    return BisectPlan(repo=args.repo, good=args.good, bad=args.bad, suite=suite,
                      variant=variant, work_dir=work, session=session,
                      options=CompareOptions(metric=args.metric),
                      repetitions=args.repetitions, max_builds=args.max_builds,
                      time_budget_s=parse_duration(args.time_budget))


def cmd_bisect(args: argparse.Namespace) -> int:
    """0 when the first bad commit is found, 1 when not (budget, no regression), 2 usage."""
    plan = _plan(args)
    console = make_console(stderr=args.format == "json")
    try:
        outcome = bisect(plan, say=lambda line: console.print(escape(line), highlight=False))
    except BisectError as exc:
        raise UsageError("rbs bisect", str(exc)) from None
    if args.format == "json":
        print(json.dumps({"first_bad": outcome.first_bad, "reason": outcome.reason,
                          "builds": outcome.builds, "commits": outcome.commits,
                          "range_left": outcome.range_left,
                          "probes": [vars(p) for p in outcome.probes]}, indent=2))
    elif outcome.first_bad:
        console.print(f"first bad commit: {outcome.first_bad} ({outcome.builds} builds)",
                      highlight=False)
    else:
        console.print(f"not found: {outcome.reason}; still between {outcome.range_left}",
                      highlight=False)
    return 0 if outcome.first_bad else 1
