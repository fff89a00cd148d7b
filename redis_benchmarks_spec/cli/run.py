"""``rbs run``: select suites and run them locally against a redis-server this command starts."""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.ab_args import add_ab_args, wants_ab
from redis_benchmarks_spec.cli.client_host_args import (
    add_client_host_args,
    check_client_host,
    client_host_from_args,
    say_network,
)
from redis_benchmarks_spec.cli.console import make_console, print_table
from redis_benchmarks_spec.cli.display import (
    RUN_FORMATS,
    finished_line,
    print_problems,
    print_rate_notes,
    render_results,
    results_table,
    summary_line,
)
from redis_benchmarks_spec.cli.errors import UsageError, sigterm_interrupts
from redis_benchmarks_spec.cli.profile_display import print_profiles
from redis_benchmarks_spec.cli.profiling import add_profiling_args, window_options
from redis_benchmarks_spec.cli.progress import RunProgress
from redis_benchmarks_spec.cli.run_checks import (
    check_run_args,
    check_test_names,
    check_topology,
    parse_cpus,
    selection_flags,
    server_env_arg,
)
from redis_benchmarks_spec.cli.run_commits import (
    add_commit_args,
    build_commits,
    resolve_commits,
    say_plan,
    wants_commits,
)
from redis_benchmarks_spec.cli.run_plan import print_plan
from redis_benchmarks_spec.cli.sweep import (
    add_sweep_args,
    check_sweep,
    check_sweep_points,
    paced_suites,
    report_sweep,
)
from redis_benchmarks_spec.common.paths import absolute_program
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import STATUS_FAILED, GitInfo, RunContext, RunResult
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.results.summary import session_dir, write_summary
from redis_benchmarks_spec.runner.session import (
    PlannedTest,
    SessionConfig,
    plan_tests,
    run_suites,
)
from redis_benchmarks_spec.runner.sweep import run_sweep
from redis_benchmarks_spec.suites.catalog import SuiteFilter, default_suites_dir
from redis_benchmarks_spec.suites.problems import ERROR
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import load_topologies
from redis_benchmarks_spec.suites.validate import Rejected, ValidatedCatalog, validate_catalog
from redis_benchmarks_spec.telemetry.cpu import SaturationThresholds


def add_selection_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("suite selection")
    g.add_argument("--suites-dir", type=Path, default=None,
                   help="directory of suite YAML files (default: the suites shipped with rbs, the repository's test-suites/)")
    g.add_argument("--test", action="append", default=[],
                   help="run this suite by name (repeatable, or comma-separated)")
    g.add_argument("--tests-regexp", default=".*", help="suites whose name matches")
    g.add_argument("--groups-regexp", default=".*", help="suites with a tested-group matching")
    g.add_argument("--commands-regexp", default=".*", help="suites with a tested-command matching")
    g.add_argument("--priority-min", type=int, default=None,
                   help="only suites whose priority is at least this")
    g.add_argument("--priority-max", type=int, default=None,
                   help="only suites whose priority is at most this")
    g.add_argument("--topology", default=None,
                   help="only this topology (e.g. oss-standalone-02-io-threads; default: each "
                        "suite's first topology, see --all-topologies)")
    g.add_argument("--all-topologies", action="store_true",
                   help="run each suite in every topology it lists (default: its first only)")


# a local run starts redis-server in a temporary directory on this machine's disk
LOCAL_CAPABILITIES = ("local-disk",)


def add_tool_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("tools")
    g.add_argument("--redis-server", default=None, type=absolute_program, help="redis-server binary (default: PATH)")
    g.add_argument("--redis-benchmark-bin", default=None, type=absolute_program, help="redis-benchmark (default: PATH)")
    g.add_argument("--memtier-bin", default=None, type=absolute_program,
                   help="memtier_benchmark (default: PATH, then .cache/tools/bin)")
    g.add_argument("--capability", action="append", default=None, metavar="NAME",
                   help="what this host offers for suites' required-runner-capabilities "
                        f"(repeatable; default: {', '.join(LOCAL_CAPABILITIES)}: a server "
                        "directory on local disk)")
    g.add_argument("--server-env", action="append", default=[], metavar="KEY=VALUE",
                   help="environment of every redis-server started (repeatable), e.g. "
                        "LD_LIBRARY_PATH=/opt/lib; servers otherwise get none of ours")
    g.add_argument("--test-time", type=int, default=None,
                   help="seconds per test, overriding each suite's duration (quick runs)")
    g.add_argument("--memory-only", action="store_true",
                   help="run each suite's preload and measure memory (INFO memory, MEMORY "
                        "STATS), without the load; with --baseline-server/--comparison-server "
                        "an A/B of memory")
    g.add_argument("--launcher", choices=["process", "docker"], default="process",
                   help="start redis-server as a local process or in a Docker container")
    g.add_argument("--cpus", default=None,
                   help="comma-separated CPU ids to allocate from (default: all this process may use)")
    g.add_argument("--strict-cpus", action="store_true",
                   help="skip a test whose topology and client need more CPUs than given, "
                        "instead of sharing cores (flagged shared-cores)")
    g.add_argument("--client-bound-client-pct", type=float, default=90.0,
                   help="client-bound flag: client CPU >= this %% of its cores ...")
    g.add_argument("--client-bound-server-pct", type=float, default=75.0,
                   help="... while the server is under this %% of one core")


def add_context_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("result tagging")
    g.add_argument("--platform", default="local", help="platform name results are tagged with")
    g.add_argument("--triggering-env", default="local",
                   help="the first path component of the datasink keys (default: local)")
    g.add_argument("--github-org", default="redis",
                   help="repository owner the runs are filed under (default: redis)")
    g.add_argument("--github-repo", default="redis",
                   help="repository the runs are filed under (default: redis)")
    g.add_argument("--branch", default=None, help="branch the server was built from")
    g.add_argument("--version-tag", dest="git_version", default=None, metavar="VERSION",
                   help="release version of the server (e.g. 7.0.15)")
    g.add_argument("--hash", dest="git_hash", default=None, help="commit sha of the server")
    g.add_argument("--build-variant", default="local",
                   help="build variant the server is filed under (default: local)")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("run", help="run benchmark suites against a local redis-server",
                       description="Run the selected suites, each against a fresh redis-server "
                                   "started on a free port, and print a result table.")
    add_selection_args(p)
    add_tool_args(p)
    add_context_args(p)
    p.add_argument("--results-dir", type=Path, default=None,
                   help="where result documents go, a timestamped folder per run (default: "
                        "results/; A/B sessions: results/ab/, kept apart from history)")
    p.add_argument("--dry-run", action="store_true", help="print the plan and exit")
    p.add_argument("--format", choices=RUN_FORMATS, default="table",
                   help="results (or, in A/B mode, the comparison) as a terminal table, JSON, "
                        "CSV or GitHub Markdown on stdout; progress lines go to stderr then")
    add_profiling_args(p)
    add_ab_args(p)
    add_commit_args(p)
    add_sweep_args(p)
    add_client_host_args(p)
    g = p.add_argument_group("datasink")
    g.add_argument("--datasink", default=None, metavar="URL",
                   help="push results to this RedisTimeSeries (default: the embedded datasink, "
                        "started on demand)")
    g.add_argument("--no-datasink", action="store_true", help="keep results on disk only")
    g.add_argument("--datasink-data-dir", type=Path, default=None,
                   help="data directory of the embedded datasink")
    p.set_defaults(func=cmd_run)


def select_suites(args: argparse.Namespace,
                  console: Console) -> tuple[list[Suite], list[Rejected]]:
    """The valid suites the selection flags pick, and the selected files the validator
    rejected (each named on ``console`` with its reason; they never run). Raises
    :class:`UsageError` when nothing valid is picked."""
    directory = args.suites_dir or default_suites_dir()
    catalog = validate_catalog(directory)
    tests = [t for item in args.test for t in item.split(",") if t]
    check_test_names(catalog, tests, directory)
    check_topology(args.topology, catalog, load_topologies())
    flt = SuiteFilter(tests=tests, tests_regexp=args.tests_regexp,
                      groups_regexp=args.groups_regexp, commands_regexp=args.commands_regexp,
                      priority_min=args.priority_min, priority_max=args.priority_max,
                      topology=args.topology)
    selected = flt.select(catalog.suites)
    skipped = catalog.rejected_matching(flt)
    print_selected_problems(console, catalog, selected, skipped)
    if not selected and args.topology:
        _no_suite_in_topology(args.topology, replace(flt, topology=None).select(catalog.suites))
    if not selected:
        why = f"; {len(skipped)} that match are invalid (above)" if skipped else ""
        raise UsageError(selection_flags(args), f"no valid suite of the {len(catalog.suites)} in "
                         f"{directory} matches{why}",
                         f"`rbs suites lint {directory}` shows every problem" if skipped else
                         "`rbs run --dry-run` without filters lists them all")
    return selected, skipped


def _no_suite_in_topology(topology: str, others: list[Suite]) -> None:
    """Raise naming ``--topology`` when the other filters select suites that list others."""
    if others:
        listed = sorted({t for s in others for t in s.topologies})
        raise UsageError(f"--topology {topology}", f"none of the {len(others)} suite(s) the "
                         f"other filters select lists it (they list: {', '.join(listed)})")


def print_selected_problems(console: Console, catalog: ValidatedCatalog, selected: list[Suite],
                            skipped: list[Rejected]) -> None:
    """Problems of the selected suites in full, a line per selected file that is skipped as
    invalid; of every other file, one line with a count."""
    for rejected in skipped:
        console.print(f"[red]{escape(rejected.line())}[/]", highlight=False, soft_wrap=True)
    paths = {s.path for s in selected}
    for problem in catalog.problems:
        if problem.path in paths:
            colour = "red" if problem.severity == ERROR else "yellow"
            console.print(f"[{colour}]{escape(str(problem))}[/]", highlight=False,
                          soft_wrap=True)
    shown = paths | {r.path for r in skipped}
    # a file that did not load has no name: it may be the suite asked for, so it is named
    for unread in [r for r in catalog.rejected if r.suite is None and r.path not in shown]:
        console.print(f"[yellow]not loaded, so never run: {escape(str(unread.path))}"
                      f": {escape(unread.reason)}[/]", highlight=False, soft_wrap=True)
        shown.add(unread.path)
    rest = [p for p in catalog.problems if p.path not in shown]
    if rest:
        files = len({p.path for p in rest})
        console.print(f"[dim]{len(rest)} problem(s) in {files} other file(s) not shown "
                      f"(rbs suites lint {escape(str(catalog.directory))})[/]",
                      highlight=False, soft_wrap=True)


def session_config(args: argparse.Namespace, results_dir: Path) -> SessionConfig:
    git = GitInfo(org=args.github_org, repo=args.github_repo, branch=args.branch,
                  version=args.git_version, hash=args.git_hash)
    context = RunContext(triggering_env=args.triggering_env, platform=args.platform,
                         build_variant=args.build_variant, git=git)
    return SessionConfig(
        tools=ToolPaths(redis_server=args.redis_server,
                        redis_benchmark=args.redis_benchmark_bin, memtier=args.memtier_bin),
        results_dir=results_dir, context=context, test_time=args.test_time,
        topology_filter=args.topology, launcher=args.launcher,
        first_topology_only=not args.all_topologies,
        cpus=parse_cpus(args.cpus), strict_cpus=args.strict_cpus,
        capabilities=frozenset(LOCAL_CAPABILITIES if args.capability is None
                               else args.capability),
        thresholds=SaturationThresholds(args.client_bound_client_pct,
                                        args.client_bound_server_pct),
        window=window_options(args), client_host=client_host_from_args(args),
        server_env=server_env_arg(args),
        memory_only=args.memory_only).with_catalogue()


def run_with_progress(console: Console, config: SessionConfig,
                      suites: list[Suite], repetitions: int = 1) -> list[RunResult]:
    """Run the session with a progress display: current test, one line per finished test.

    ``repetitions`` > 1 runs the whole selection round after round (so slow drifts of the
    machine spread over every test), each round in ``rep-NN/`` of the session.
    """
    planned = plan_tests(config, suites)  # the session's one plan
    with RunProgress(console, len(planned) * repetitions) as progress:
        config = replace(config, on_phase=progress.phase)

        def on_start(test: PlannedTest) -> None:
            topo = test.topology.name if test.topology else "?"
            progress.started(f"{test.suite.name} [{topo}]")

        def one_round(round_config: SessionConfig) -> list[RunResult]:
            return run_suites(round_config, suites, on_start=on_start, planned=planned,
                              on_result=lambda r: progress.finished(finished_line(r)))

        if repetitions == 1:
            return one_round(config)
        results: list[RunResult] = []
        for rep in range(repetitions):
            place = RunPlace(repetition=rep)
            results += one_round(replace(
                config, results_dir=run_folder(config.results_dir, place),
                context=replace(config.context, repetition=rep)))
        return results


def say_capabilities(console: Console, config: SessionConfig, suites: list[Suite]) -> None:
    """When a selected suite requires runner capabilities, say which ones were assumed."""
    wanted = sorted({c for s in suites for c in s.required_capabilities})
    if wanted and config.capabilities is not None:
        offered = ", ".join(sorted(config.capabilities)) or "none"
        console.print(f"runner capabilities assumed for this host: {escape(offered)} "
                      f"(selected suites require: {escape(', '.join(wanted))}; "
                      f"--capability sets them)", highlight=False, soft_wrap=True)


def say_first_topology(console: Console, config: SessionConfig, suites: list[Suite]) -> None:
    """Say which suites list more topologies than the one they run in by default."""
    if not config.first_topology_only or config.topology_filter:
        return
    more = [s for s in suites if len(s.topologies) > 1]
    if more:
        console.print(f"{len(more)} selected suite(s) list more than one topology; each runs "
                      f"in its first only ({escape(more[0].name)}: {escape(more[0].topologies[0])}"
                      f" of {escape(', '.join(more[0].topologies))}); --all-topologies runs "
                      f"every one, --topology NAME one", highlight=False, soft_wrap=True)


def check_runnable(config: SessionConfig, suites: list[Suite]) -> None:
    """Refuse to start when every planned test would be skipped (nothing to measure)."""
    planned = plan_tests(config, suites)
    reasons = sorted({t.skip_reason for t in planned if t.skip_reason})
    if planned and all(t.skip_reason for t in planned):
        raise UsageError("selection", f"all {len(planned)} selected test(s) would be "
                         f"skipped: {'; '.join(reasons)}")


def check_datasink(args: argparse.Namespace) -> None:
    """An explicit --datasink must answer and hold TimeSeries before anything runs."""
    if args.no_datasink or not args.datasink:
        return
    from redis_benchmarks_spec.cli.datasink import check_reachable
    from redis_benchmarks_spec.datasink.store import DatasinkConfig
    checks.redis_url("--datasink", args.datasink)
    check_reachable(DatasinkConfig(url=args.datasink))


def cmd_run(args: argparse.Namespace) -> int:
    """``rbs run``: 0 all ran ok, 1 a test failed, 2 usage or input error, 130 interrupted."""
    check_run_args(args)
    sweep = check_sweep(args)
    # the commits resolved (and the build variant set) before the session is configured
    commits = resolve_commits(args) if wants_commits(args) else None
    # stdout holds the results (the table, or a json/csv/markdown document alone); progress,
    # per-test lines, problems of suites and notes go to stderr
    console = make_console(stderr=True)
    out = make_console(stderr=args.format != "table")
    suites, skipped = select_suites(args, console)
    suites = paced_suites(args, suites)
    config = session_config(args, args.results_dir)
    say_capabilities(console, config, suites)
    say_first_topology(console, config, suites)
    if commits is not None:
        say_plan(console, commits)
    if args.dry_run:
        print_plan(config, suites, args, sweep)
        return 0
    check_runnable(config, suites)
    check_sweep_points(config, suites, sweep)
    check_datasink(args)
    if config.client_host is not None:
        check_client_host(config.client_host)
    if commits is not None:  # after every check: a build is the slow part
        with sigterm_interrupts():  # as Ctrl-C: a build's container is removed (compile.py)
            build_commits(console, args, commits)
        args.commit_plan = commits
    config = replace(config, results_dir=session_dir(args.results_dir))
    try:
        with sigterm_interrupts():
            if wants_ab(args):
                # the A/B's analysis is imported only here: a plain run starts without it
                from redis_benchmarks_spec.cli.ab import cmd_ab
                return cmd_ab(args, console, config, suites)  # its table goes to stdout
            if sweep is not None:
                results = run_sweep(config, suites, sweep,
                                    on_result=lambda r: console.print(finished_line(r),
                                                                      highlight=False))
            else:
                results = run_with_progress(console, config, suites, args.repetitions or 1)
    except KeyboardInterrupt:
        console.print("[red]interrupted: every process this run started has been stopped[/]")
        return 130
    code = report(out, args, config, results)
    if config.client_host is not None:
        say_network(console, results)
    if skipped:
        out.print(f"[red]{len(skipped)} selected suite file(s) not run: invalid "
                  f"(skipped, named above)[/]", highlight=False)
        code = max(code, 1)
    if sweep is not None:
        report_sweep(out, config, results)
    if not args.no_datasink and not push_to_datasink(console, args, results,
                                                     config.results_dir):
        code = max(code, 1)
    return code


def push_to_datasink(console: Console, args: argparse.Namespace,
                     results: list[RunResult], results_dir: Path) -> bool:
    """Push this session's results; when the datasink is down they stay on disk for `rbs
    datasink push` (a warning). False when it answered but history runs did not arrive."""
    from redis_benchmarks_spec.datasink.session_push import push_session
    from redis_benchmarks_spec.results.platform import valid_name
    from redis_benchmarks_spec.telemetry.platform_probe import record
    # this host's facts beside its results (a name that cannot key a record is left out)
    host = record(args.platform, "rbs run") if valid_name(args.platform) else None
    outcome = push_session(results_dir, args.datasink, args.datasink_data_dir, results,
                           platform=host)
    colour = "green" if outcome.ok else "red" if outcome.lost else "yellow"
    console.print(f"[{colour}]datasink: {escape(outcome.message)}[/]", highlight=False,
                  soft_wrap=True)
    return not outcome.lost


def report(console: Console, args: argparse.Namespace, config: SessionConfig,
           results: list[RunResult]) -> int:
    """Summary files, then the results in ``--format`` (documents on stdout), problems."""
    csv_path, json_path = write_summary(results, config.results_dir)
    if args.format == "table":
        print_table(console, results_table(results, title=f"Results ({config.results_dir})"))
    else:
        sys.stdout.write(render_results(results, args.format) + "\n")
        sys.stdout.flush()
    print_problems(console, results)
    print_rate_notes(console, results)
    print_profiles(console, results)
    console.print(summary_line(results), highlight=False)
    console.print(f"results: {escape(str(config.results_dir))}  (summary: {csv_path.name}, "
                  f"{json_path.name})", highlight=False, soft_wrap=True)
    return 1 if any(r.status == STATUS_FAILED for r in results) else 0
