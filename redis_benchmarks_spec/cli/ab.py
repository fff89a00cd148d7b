"""``rbs run --baseline-server A --comparison-server B --repetitions N``: interleaved A/B.

Parsing and printing only; the runs are :mod:`redis_benchmarks_spec.runner.ab`, the
statistics :mod:`redis_benchmarks_spec.analysis.compare`.
"""

from __future__ import annotations

import argparse
import shlex
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import CompareOptions, compare_paired
from redis_benchmarks_spec.analysis.context import (
    CompareContext,
    context_from_results,
    side_from_results,
)
from redis_benchmarks_spec.analysis.sequential import (
    OBRIEN_FLEMING,
    SPENDING_FUNCTIONS,
    SequentialPlan,
)
from redis_benchmarks_spec.analysis.sequential_compare import (
    SEQUENTIAL_RECORD,
    SequentialRecord,
)
from redis_benchmarks_spec.analysis.verdict import default_noise_floor
from redis_benchmarks_spec.cli.compare import write_report
from redis_benchmarks_spec.cli.progress import RunProgress
from redis_benchmarks_spec.results.comparison_key import with_topology
from redis_benchmarks_spec.runner.ab import (
    ABConfig,
    ABRun,
    Side,
    disturbed_problems,
    paired_samples,
    run_ab,
)
from redis_benchmarks_spec.runner.adaptive import (
    ABPairSource,
    AdaptiveOutcome,
    AdaptivePlan,
    until_decided,
)
from redis_benchmarks_spec.runner.metric_choice import AUTO, THROUGHPUT_METRIC, MetricChoice
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests
from redis_benchmarks_spec.suites.suite import Suite

DEFAULT_REPETITIONS = 10
#: first round of --until-decided: the t interval needs 5 pairs, 6 leave a spare
DEFAULT_FIRST_ROUND = 6


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
                   help=f"A/B: runs per side per suite (default {DEFAULT_REPETITIONS}; "
                        f"the first round with --until-decided, default {DEFAULT_FIRST_ROUND}); "
                        "without A/B: results per test, in rounds of the whole selection")
    g.add_argument("--metric", default=None,
                   help=f"metric the verdicts are on, or '{AUTO}': the server's CPU time per "
                        "command when the client was the bottleneck, else Ops/sec (default "
                        f"{AUTO} with --until-decided, {THROUGHPUT_METRIC} otherwise)")
    g.add_argument("--noise-floor", type=float, default=None,
                   help="percent (default 2, 0.5 for instruction counts)")
    g.add_argument("--alpha", type=float, default=0.05)
    g.add_argument("--instructions-noise-floor", type=float, default=None, metavar="PCT",
                   help="noise floor of instructions per op with --profilers instructions "
                        "(default 0.5)")
    g.add_argument("--fail-on-regression", action="store_true")
    g.add_argument("--until-decided", action="store_true",
                   help="after the first --repetitions pairs, give the tests still UNKNOWN more "
                        "pairs in rounds until decided (group-sequential design, "
                        "docs/statistics.md; on a shared machine runs of --test-time 10 or "
                        "more decide about 4x faster than 2 s runs)")
    g.add_argument("--max-repetitions", type=int, default=40,
                   help="--until-decided: most pairs per test")
    g.add_argument("--round-repetitions", type=int, default=4,
                   help="--until-decided: pairs added per round")
    g.add_argument("--time-budget", default=None, metavar="DURATION",
                   help="--until-decided: start no pair after this long (e.g. 900, 30m, 2h)")
    g.add_argument("--spending", choices=list(SPENDING_FUNCTIONS), default=OBRIEN_FLEMING,
                   help="--until-decided: Lan-DeMets alpha-spending function")
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


def _options(args: argparse.Namespace, choice: MetricChoice) -> CompareOptions:
    metric = choice.metric or THROUGHPUT_METRIC
    floor = args.noise_floor if args.noise_floor is not None else default_noise_floor(metric)
    return CompareOptions(noise_floor_pct=floor, alpha=args.alpha, metric=metric)


def _shown(run: ABRun, choice: MetricChoice) -> str:
    """A run's value of the deciding metric (Ops/sec until ``auto`` has chosen)."""
    r = run.result
    metric = choice.metric or THROUGHPUT_METRIC
    value = r.metrics.get(metric)
    if value is None:
        return r.status
    return f"{value:,.3f} {metric}" if metric != THROUGHPUT_METRIC else f"{value:,.0f}"


def _run_with_progress(console: Console, ab: ABConfig, suites: list[Suite],
                       choice: MetricChoice) -> list[ABRun]:
    """The A/B runs with the current side, repetition and test shown; a line per run."""
    reps = ab.repetitions
    total = 2 * reps * len(plan_tests(ab.session, suites))
    with RunProgress(console, total) as progress:
        ab.session.on_phase = progress.phase  # both sides' sessions are copies of this one

        def on_start(side: str, rep: int, suite: Suite) -> None:
            progress.started(f"rep {rep + 1}/{reps} {side} {suite.name}")

        def on_run(run: ABRun) -> None:
            progress.finished(f"rep {run.repetition + 1:>2}/{reps} {run.side:<10} "
                              f"{escape(with_topology(run.result))}: {_shown(run, choice)}")

        return run_ab(ab, suites, on_run=on_run, on_start=on_start)


def cmd_ab(args: argparse.Namespace, console: Console, config: SessionConfig,
           suites: list[Suite]) -> int:
    """Run the interleaved A/B session (both servers were checked by ``run_checks``)."""
    default = DEFAULT_FIRST_ROUND if args.until_decided else DEFAULT_REPETITIONS
    repetitions = args.repetitions or default
    ab = ABConfig(
        session=config,
        baseline=Side("baseline", args.baseline_server, shlex.split(args.baseline_server_args)),
        comparison=Side("comparison", args.comparison_server,
                        shlex.split(args.comparison_server_args)),
        repetitions=repetitions)

    choice = MetricChoice(args.metric or (AUTO if args.until_decided else THROUGHPUT_METRIC),
                          config.thresholds)
    if args.until_decided:
        runs: list[ABRun] = []
        outcome = _until_decided(args, ab, suites, runs, choice, _round_printer(console, args,
                                                                                 choice))
        report = outcome.report
        failed = [r.result for r in runs if not r.result.ok]
        report.problems.extend(f"{with_topology(r)}: {r.reason}" for r in failed)
    else:
        runs = _run_with_progress(console, ab, suites, choice)
        failed = [r.result for r in runs if not r.result.ok]
        pairs = paired_samples(runs, choice.resolve(runs))
        problems = [f"{with_topology(r)}: {r.reason}" for r in failed]
        report = compare_paired({t: p for t, p in pairs.items() if p},
                                _options(args, choice), problems)
    options = _options(args, choice)
    disturbed = disturbed_problems([r.result for r in runs])
    report.problems.extend(disturbed)
    for line in disturbed:
        console.print(f"[yellow]DISTURBED[/] {escape(line)}", highlight=False, soft_wrap=True)
    if choice.why:
        report.method = f"{report.method}; metric {choice.metric}: {choice.why}"
        console.print(f"metric {escape(str(choice.metric))}: {escape(choice.why)}",
                      highlight=False, soft_wrap=True)
    for result in failed:
        console.print(f"[red]FAILED[/] {escape(with_topology(result))}: {escape(result.reason)}",
                      highlight=False, soft_wrap=True)
    report.context = ab_context(ab, runs)
    write_report(report, args.format, None)
    profilers = config.window.profilers.names
    if profilers:
        from redis_benchmarks_spec.cli.ab_profiles import print_profile_ab, profile_ab_report
        extra = profile_ab_report(runs, profilers, args.alpha, config.results_dir,
                                  args.instructions_noise_floor)
        print_profile_ab(console, report, extra)
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


def _round_printer(console: Console, args: argparse.Namespace,
                   choice: MetricChoice) -> Callable[[ABRun], None]:
    """One line per run of --until-decided (rounds have no total known in advance)."""
    def on_run(run: ABRun) -> None:
        console.print(f"pair {run.repetition + 1:>2}/{args.max_repetitions} {run.side:<10} "
                      f"{escape(with_topology(run.result))}: {_shown(run, choice)}",
                      highlight=False)
    return on_run


def _until_decided(args: argparse.Namespace, ab: ABConfig, suites: list[Suite],
                   runs: list[ABRun], choice: MetricChoice,
                   on_run: Callable[[ABRun], None]) -> AdaptiveOutcome:
    options = _options(args, choice)
    plan = AdaptivePlan(SequentialPlan(args.max_repetitions, args.alpha, args.spending),
                        options, first_round=ab.repetitions,
                        round_pairs=args.round_repetitions,
                        time_budget_s=parse_duration(args.time_budget))
    source = ABPairSource(ab, suites, choice, runs, on_run)
    outcome = until_decided(source.tests, source, plan, choice=choice)
    done = outcome.progress.values()
    record = SequentialRecord(plan.design, choice.metric or THROUGHPUT_METRIC,
                              {p.test: p.looks for p in done},
                              {p.test: p.stop_reason for p in done},
                              {p.test: len(p.pairs) for p in done}, choice.why)
    (ab.session.results_dir / SEQUENTIAL_RECORD).write_text(record.to_json())
    return outcome


def parse_duration(text: str | None) -> float | None:
    """``900``, ``90s``, ``30m``, ``2h`` as seconds (validated by ``run_checks``)."""
    if text is None:
        return None
    text = text.strip().lower()
    scale = {"s": 1, "m": 60, "h": 3600}.get(text[-1:], 0)
    number = text[:-1] if scale else text
    return float(number) * (scale or 1)
