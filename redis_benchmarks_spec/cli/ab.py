"""``rbs run --baseline-server A --comparison-server B --repetitions N``: interleaved A/B.

Parsing and printing only; the session (plan, runs, verdicts) is
:mod:`redis_benchmarks_spec.runner.ab_session`, the verdicts
:mod:`redis_benchmarks_spec.analysis.engine`.
"""

from __future__ import annotations

import argparse
import shlex
from dataclasses import replace

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.engine import MEMORY_METRIC, SessionPriors
from redis_benchmarks_spec.analysis.noise import NoiseBook, family_of, timed_metrics
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.cli.ab_args import ab_repetitions, counted, max_pairs, parse_duration
from redis_benchmarks_spec.cli.compare import write_report
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import EXIT_FAILED, UsageError
from redis_benchmarks_spec.cli.progress import RunProgress
from redis_benchmarks_spec.cli.run_commits import ab_sides
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.inputs import noise_file
from redis_benchmarks_spec.results.comparison_key import with_topology
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import PROFILED, under_profiler
from redis_benchmarks_spec.runner.ab import ABConfig, ABRun, Side, ab_tests
from redis_benchmarks_spec.runner.ab_session import (
    ABSessionPlan,
    ABSessionResult,
    run_session,
    with_rounds,
)
from redis_benchmarks_spec.runner.metric_choice import AUTO, THROUGHPUT_METRIC
from redis_benchmarks_spec.runner.preflight import ServerSide, preflight
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite


def _shown(run: ABRun, metric: str | None) -> str:
    """A run's value of the metric that judges it, with its unit (Ops/sec until ``auto`` has
    chosen): instructions per op of a run under callgrind, whose timed figures are no speed
    (the engine judges its count, ``analysis.engine``)."""
    r = run.result
    metric = metric or THROUGHPUT_METRIC
    if under_profiler(r.flags, metric):
        if r.metrics.get(INSTRUCTIONS_METRIC) is None:
            return f"{r.status} ({PROFILED}: no speed measured)"
        metric = INSTRUCTIONS_METRIC
    value = r.metrics.get(metric)
    return r.status if value is None else with_unit(value, metric)


def with_unit(value: float, name: str) -> str:
    """``2,315 instructions/op``, ``30,722 ops/sec``, ``0.412 ms``: the catalogue's unit."""
    unit = catalogued(name).unit + ("/op" if name.endswith("_per_op") else "")
    number = f"{value:,.0f}" if abs(value) >= 100 else f"{value:,.3g}"
    return f"{number} {unit}"


def _noise_book(args: argparse.Namespace) -> NoiseBook | None:
    if args.no_noise_prior:
        return None
    try:
        return noise_file.load(args.noise_file)
    except noise_file.NoiseBookError as exc:
        raise UsageError("--noise-file", str(exc), "fix or remove the file, or give "
                         "--no-noise-prior") from None


def _say_aa(console: Console, book: NoiseBook | None, result: ABSessionResult) -> None:
    """An A/A session's spreads went into the noise book (``runner.ab_files``): say where."""
    if book is not None and result.noise_recorded:
        console.print(f"noise: an A/A session (the same binary on both sides): "
                      f"{result.noise_recorded} test/metric spread(s) recorded in "
                      f"{escape(str(book.path))}", highlight=False)


def _plan(args: argparse.Namespace, config: SessionConfig, suites: list[Suite],
          priors: SessionPriors) -> ABSessionPlan:
    repetitions = ab_repetitions(args, config)
    commits = ab_sides(args)  # an A/B of two commits: each side filed under its commit
    gits = commits[0] if commits else (None, None)
    ab = ABConfig(
        session=config,
        baseline=Side("baseline", args.baseline_server, shlex.split(args.baseline_server_args),
                      git=gits[0]),
        comparison=Side("comparison", args.comparison_server,
                        shlex.split(args.comparison_server_args), git=gits[1]),
        repetitions=repetitions)
    metric = MEMORY_METRIC if config.memory_only else \
        args.metric or (AUTO if args.until_decided else THROUGHPUT_METRIC)
    plan = ABSessionPlan(
        ab, suites, metric=metric,
        alpha=args.alpha, noise_floor_pct=args.noise_floor,
        instructions_floor_pct=args.instructions_noise_floor,
        max_pairs=max_pairs(args, repetitions, counted(config)), priors=priors,
        side_labels=commits[1] if commits else None,
        # under --profilers instructions the deciding evidence is the instruction count,
        # which keeps every pair: timed pairs of a server under callgrind are not re-run
        replace_disturbed=not counted(config))
    if not args.until_decided:
        return plan
    design = SequentialPlan(max_pairs(args, repetitions), args.alpha, args.spending)
    return with_rounds(plan, design, args.round_repetitions, parse_duration(args.time_budget))


def _run(console: Console, plan: ABSessionPlan) -> ABSessionResult:
    """The session with a line per run (a progress bar when the pair count is known)."""
    metric = None if plan.metric == AUTO else plan.metric
    if plan.rounds is not None:
        def on_pair(run: ABRun) -> None:
            console.print(f"pair {(run.repetition or 0) + 1:>2}/{plan.max_pairs} "
                          f"{run.side:<10} {escape(with_topology(run.result))}: "
                          f"{_shown(run, metric)}", highlight=False)
        return run_session(plan, on_run=on_pair)
    reps = plan.config.repetitions
    tests = ab_tests(plan.config.session, plan.suites)
    with RunProgress(console, 2 * reps * len(tests)) as progress:
        # both sides' sessions are variants of this one
        session = replace(plan.config.session, on_phase=progress.phase)
        plan = replace(plan, config=replace(plan.config, session=session))

        def on_start(side: str, rep: int, suite: Suite) -> None:
            progress.started(f"rep {rep + 1}/{reps} {side} {suite.name}")

        def on_run(run: ABRun) -> None:
            progress.finished(f"rep {(run.repetition or 0) + 1:>2}/{reps} {run.side:<10} "
                              f"{escape(with_topology(run.result))}: {_shown(run, metric)}")

        return run_session(plan, on_run=on_run, on_start=on_start)


def cmd_ab(args: argparse.Namespace, console: Console, config: SessionConfig,
           suites: list[Suite]) -> int:
    """Run the interleaved A/B session (both servers were checked by ``run_checks``).
    ``console`` (stderr) takes progress and notes; the report and result paths go to
    stdout."""
    _preflight(args, config, suites)
    book = _noise_book(args)
    tests = ab_tests(config, suites)
    labels = [t.key for t in tests]
    priors = book.session_priors(config.context.platform, labels) if book else {}
    plan = _plan(args, config, suites, priors)
    if book is not None:  # the session writes what it judged with, and an A/A's spreads
        noise = book.session_noise(
            config.context.platform, {t.key: family_of(t.suite.tested_groups) for t in tests},
            timed_metrics(plan.metric))
        plan = replace(plan, host_noise=noise, noise_book=book)
    result = _run(console, plan)
    report = result.report
    if args.format != "table":  # the table's problems say them (cli.compare.write_report)
        for line in result.disturbed:
            console.print(f"[yellow]DISTURBED[/] {escape(line)}", highlight=False)
    if result.metric_why:
        console.print(f"metric {escape(report.options.metric)}: {escape(result.metric_why)}",
                      highlight=False)
    for failed in result.failed:
        console.print(f"[red]FAILED[/] {escape(with_topology(failed))}: {escape(failed.reason)}",
                      highlight=False)
    _say_aa(console, book, result)
    write_report(report, args.format, None)
    out = make_console(stderr=args.format != "table")  # results on stdout, as rbs run
    if report.memory is not None and args.format == "table":
        write_report(report.memory, "table", None)
    _profiles(out, config, result)
    out.print(f"results: {escape(str(config.results_dir))}", highlight=False)
    if args.html:
        from redis_benchmarks_spec.analysis.report_data import from_runs
        from redis_benchmarks_spec.cli.report import write_html
        data = from_runs(f"A/B session {config.results_dir}", result.runs, report)
        out.print(f"report: {escape(str(write_html(data, args.html)))}", highlight=False,
                  soft_wrap=True)
    return _exit_code(args, console, report, result.failed)


def _preflight(args: argparse.Namespace, config: SessionConfig, suites: list[Suite]) -> None:
    """Both servers start and answer once, and the suites' tools run once, before the first
    pair (runner/preflight.py); a dead side is one line naming it, its binary and why."""
    if config.launcher != "process":
        return  # a container's server is checked by its own launcher
    sides = [ServerSide(name, binary, [*config.server_args, *shlex.split(extra)],
                        config.server_env)
             for name, binary, extra in (
                 ("baseline", args.baseline_server, args.baseline_server_args),
                 ("comparison", args.comparison_server, args.comparison_server_args))]
    tools_here = suites if config.client_host is None else []  # remote tools: their host's
    problems = preflight(sides, config.tools, tools_here)
    if problems:
        flag = "--comparison-server" if problems[0].startswith("comparison side") else \
            "--baseline-server" if problems[0].startswith("baseline side") else "tools"
        raise UsageError(flag, "; ".join(problems),
                         "--server-env KEY=VALUE gives servers an environment")


def _profiles(console: Console, config: SessionConfig, result: ABSessionResult) -> None:
    profilers = config.window.profilers.names
    if not profilers:
        return
    from redis_benchmarks_spec.cli.ab_profiles import print_profile_ab, profile_ab_report
    extra = profile_ab_report(result.runs, profilers, result.report, config.results_dir)
    print_profile_ab(console, result.report, extra)


def _exit_code(args: argparse.Namespace, console: Console, report: ComparisonReport,
               failed: list[RunResult]) -> int:
    """1: a run failed; with --fail-on-regression also a REGRESSION, or a test left BUSY
    (its pairs were disturbed: CI must not read that as a pass); an empty comparison is
    never a success."""
    if not report.rows:
        console.print("[red]no test was compared[/]: nothing ran on both sides",
                      highlight=False)
        return EXIT_FAILED
    if failed:
        return EXIT_FAILED
    if not args.fail_on_regression:
        return 0
    counted = report.counted
    if counted is not None and counted.has_regression:
        return EXIT_FAILED
    # instruction counts, when taken, are the evidence: a timed metric left BUSY beside
    # them (a server under callgrind) does not fail the check
    if report.has_busy and (counted is None or counted.has_busy):
        console.print("[red]BUSY[/]: a test could not be decided because other processes "
                      "disturbed its pairs; rerun on a quieter machine or with a larger "
                      "--max-repetitions", highlight=False, soft_wrap=True)
        return EXIT_FAILED
    return EXIT_FAILED if report.has_regression and counted is None else 0
