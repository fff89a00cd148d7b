"""``rbs run --baseline-server A --comparison-server B --repetitions N``: interleaved A/B.

Parsing and printing only; the runs are :mod:`redis_benchmarks_spec.runner.ab`, the
statistics :mod:`redis_benchmarks_spec.analysis.compare`.
"""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import CompareOptions, compare_paired
from redis_benchmarks_spec.analysis.context import (
    CompareContext,
    context_from_results,
    side_from_results,
)
from redis_benchmarks_spec.cli.compare import write_report
from redis_benchmarks_spec.cli.progress import RunProgress
from redis_benchmarks_spec.runner.ab import ABConfig, ABRun, Side, paired_samples, run_ab
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests
from redis_benchmarks_spec.suites.suite import Suite

DEFAULT_REPETITIONS = 10


def add_ab_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("interleaved A/B (both servers required)")
    g.add_argument("--baseline-server", default=None, help="redis-server binary of side A")
    g.add_argument("--comparison-server", default=None, help="redis-server binary of side B")
    g.add_argument("--baseline-server-args", default="",
                   help="extra redis-server arguments for side A only")
    g.add_argument("--comparison-server-args", default="",
                   help="extra redis-server arguments for side B only (e.g. a deliberate "
                        "slowdown for calibration)")
    g.add_argument("--repetitions", type=int, default=None,
                   help=f"runs per side per suite (default {DEFAULT_REPETITIONS})")
    g.add_argument("--metric", default="ALL_STATS.Totals.Ops/sec")
    g.add_argument("--noise-floor", type=float, default=2.0, help="percent")
    g.add_argument("--alpha", type=float, default=0.05)
    g.add_argument("--fail-on-regression", action="store_true")
    g.add_argument("--html", type=Path, metavar="FILE",
                   help="also write a self-contained HTML report with plots to FILE")


def ab_context(ab: ABConfig, runs: list[ABRun]) -> CompareContext:
    """The report header of an A/B session: each side's server binary, commits, versions."""
    docs = {side.name: [r.result for r in runs if r.side == side.name and r.result.ok]
            for side in (ab.baseline, ab.comparison)}
    return context_from_results(
        side_from_results(f"redis-server {ab.baseline.redis_server}", docs[ab.baseline.name]),
        side_from_results(f"redis-server {ab.comparison.redis_server}",
                          docs[ab.comparison.name]),
        docs[ab.baseline.name] + docs[ab.comparison.name], paired=True)


def wants_ab(args: argparse.Namespace) -> bool:
    return bool(args.baseline_server or args.comparison_server)


def _run_with_progress(console: Console, ab: ABConfig, suites: list[Suite],
                       metric: str) -> list[ABRun]:
    """The A/B runs with the current side, repetition and test shown; a line per run."""
    reps = ab.repetitions
    total = 2 * reps * len(plan_tests(ab.session, suites))
    with RunProgress(console, total) as progress:
        def on_start(side: str, rep: int, suite: Suite) -> None:
            progress.started(f"rep {rep + 1}/{reps} {side} {suite.name}")

        def on_run(run: ABRun) -> None:
            r = run.result
            value = r.metrics.get(metric)
            shown = f"{value:,.0f}" if value is not None else r.status
            progress.finished(f"rep {run.repetition + 1:>2}/{reps} {run.side:<10} "
                              f"{escape(r.test_name)}: {shown}")

        return run_ab(ab, suites, on_run=on_run, on_start=on_start)


def cmd_ab(args: argparse.Namespace, console: Console, config: SessionConfig,
           suites: list[Suite]) -> int:
    """Run the interleaved A/B session (both servers were checked by ``run_checks``)."""
    repetitions = args.repetitions or DEFAULT_REPETITIONS
    ab = ABConfig(
        session=config,
        baseline=Side("baseline", args.baseline_server, shlex.split(args.baseline_server_args)),
        comparison=Side("comparison", args.comparison_server,
                        shlex.split(args.comparison_server_args)),
        repetitions=repetitions)

    runs = _run_with_progress(console, ab, suites, args.metric)
    failed = [r.result for r in runs if not r.result.ok]
    for result in failed:
        console.print(f"[red]FAILED[/] {escape(result.test_name)}: {escape(result.reason)}",
                      highlight=False, soft_wrap=True)
    pairs = paired_samples(runs, args.metric)
    options = CompareOptions(noise_floor_pct=args.noise_floor, alpha=args.alpha,
                             metric=args.metric)
    problems = [f"{r.test_name}: {r.reason}" for r in failed]
    report = compare_paired({t: p for t, p in pairs.items() if p}, options, problems)
    report.context = ab_context(ab, runs)
    write_report(report, args.format, None)
    console.print(f"results: {escape(str(config.results_dir))}", highlight=False,
                  soft_wrap=True)
    if args.html:
        from redis_benchmarks_spec.analysis.report_data import from_ab_session
        from redis_benchmarks_spec.cli.report import write_html
        data = from_ab_session(config.results_dir, options)
        console.print(f"report: {escape(str(write_html(data, args.html)))}", highlight=False,
                      soft_wrap=True)
    if failed:
        return 1
    return 1 if args.fail_on_regression and report.has_regression else 0
