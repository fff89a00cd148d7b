"""``rbs compare``: baseline vs comparison per test, with intervals and honest verdicts.

Two sources: two local results directories (``--baseline-dir``/``--comparison-dir``), or
the datasink (``--datasink URL`` or the running embedded one) selected by branch, version
or hash per side, scoped by platform, topology, build variant, last N points or a date
range, and read the way the pull-request comment and reports read them.
"""

# This module parses flags and prints; the datasink is read by inputs/comparison_series.py
# (the one reader of compare, the pull-request comment and reports).

from __future__ import annotations

import argparse
import sys
from dataclasses import replace
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.changepoints import ChangePointError
from redis_benchmarks_spec.analysis.compare import (
    DEFAULT_METRIC,
    CompareOptions,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.engine import catalogue_options
from redis_benchmarks_spec.analysis.report import (
    hidden_note,
    hosts_rich_table,
    rich_tables,
    to_json,
    to_markdown,
)
from redis_benchmarks_spec.analysis.verdict import default_noise_floor
from redis_benchmarks_spec.cli import checks, folder_checks
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli.compare_sides import (
    CompareUsageError,
    DatasinkSamples,
    Samples,
    across_platforms,
    compare_context,
    judged,
    lab_and_session,
    selector,
    side_of,
    side_platform,
)
from redis_benchmarks_spec.cli.console import export_console, make_console, print_table
from redis_benchmarks_spec.cli.errors import EXIT_FAILED, EXIT_USAGE, UsageError
from redis_benchmarks_spec.cli.floor_help import FLOOR_HELP
from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.datasink import reader
from redis_benchmarks_spec.inputs import side_binaries
from redis_benchmarks_spec.inputs.comparison_series import (
    SIDES,
    SidesQuery,
    platforms_with,
    read_sides,
)
from redis_benchmarks_spec.inputs.platform_context import hosts_of
from redis_benchmarks_spec.results.platform import valid_name

#: exit codes: 1 is reserved for --fail-on-regression, so CI can tell "slower" from "broken"
EXIT_REGRESSION = EXIT_FAILED


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare a baseline and a comparison build per test",
                       description=__doc__)
    _add_source_args(p)
    datasink_cli.add_remote_args(p)
    datasink_cli.add_embedded_args(p)
    _add_filter_args(p)
    _add_decision_args(p)
    _add_output_args(p)
    p.set_defaults(func=cmd_compare)


def _add_source_args(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("sources")
    src.add_argument("--baseline-dir", type=Path, help="results directory of the baseline")
    src.add_argument("--comparison-dir", type=Path, help="results directory of the comparison")
    for side in ("baseline", "comparison"):
        group = src.add_mutually_exclusive_group()
        for what in ("branch", "version", "hash"):
            group.add_argument(f"--{side}-{what}", metavar=what.upper(),
                               help=f"{side} build by git {what} (datasink)")


def _add_filter_args(p: argparse.ArgumentParser) -> None:
    flt = p.add_argument_group("scope")
    flt.add_argument("--platform", help="platform label of both sides (datasink)")
    flt.add_argument("--baseline-platform", metavar="PLATFORM",
                     help="the baseline's platform (datasink): with --comparison-platform, "
                          "platforms side by side (unpaired runs from two hosts); a missing "
                          "--comparison-* build selector means the baseline's build")
    flt.add_argument("--comparison-platform", metavar="PLATFORM",
                     help="the comparison's platform (datasink)")
    flt.add_argument("--topology", help="topology, e.g. oss-standalone (datasink)")
    flt.add_argument("--build-variant", help="build variant label (datasink)")
    flt.add_argument("--tests-regexp", default=".*", help="regexp on test names")
    flt.add_argument("--groups-regexp", help="regexp on tested groups")
    flt.add_argument("--commands-regexp", help="regexp on tested commands")
    flt.add_argument("--metric", default=DEFAULT_METRIC,
                     help=f"metric to compare (default {DEFAULT_METRIC}); latency metrics "
                          "are lower-is-better")
    flt.add_argument("--last-n", type=int, help="last N points per side (datasink)")
    flt.add_argument("--baseline-window", choices=("change-point", "all"),
                     default="change-point",
                     help="with --baseline-branch and no --last-n: each test's baseline is "
                          "its points after the last change point (rbs changepoints), or all")
    flt.add_argument("--from-date", help="start of the time range, ISO date (datasink)")
    flt.add_argument("--to-date", help="end of the time range, ISO date (datasink)")


def noise_floor(args: argparse.Namespace) -> float:
    """``--noise-floor``, or the metric's floor in the catalogue (``common.metrics``)."""
    return args.noise_floor if args.noise_floor is not None else default_noise_floor(args.metric)



def _add_decision_args(p: argparse.ArgumentParser) -> None:
    dec = p.add_argument_group("decision")
    dec.add_argument("--noise-floor", type=float, default=None, metavar="PCT",
                     help=f"changes within +/- PCT %% are never flagged (default: "
                          f"{FLOOR_HELP})")
    dec.add_argument("--alpha", type=float, default=0.05,
                     help="false discovery rate for Benjamini-Hochberg (default 0.05)")


def _add_output_args(p: argparse.ArgumentParser) -> None:
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("table", "markdown", "json"), default="table",
                     help="terminal table, GitHub Markdown (a PR comment) or JSON")
    out.add_argument("--output", type=Path, metavar="FILE", help="write the report to FILE")
    out.add_argument("--html", type=Path, metavar="FILE",
                     help="also write a self-contained HTML report with plots to FILE")
    out.add_argument("--fail-on-regression", action="store_true",
                     help="exit 1 when any test is a REGRESSION")


def _uses_datasink(args: argparse.Namespace) -> bool:
    selectors = [getattr(args, f"{side}_{what}") for side in ("baseline", "comparison")
                 for what in ("branch", "version", "hash")]
    return bool(args.datasink) or any(selectors)


def _query(args: argparse.Namespace) -> tuple[SidesQuery, dict[str, str | None]]:
    """What the flags ask of the datasink, and each side's platform."""
    platforms = {side: side_platform(args, side) for side in SIDES}
    return SidesQuery(
        selector(args, side_of(args, "baseline"), platforms["baseline"]),
        selector(args, side_of(args, "comparison"), platforms["comparison"]),
        change_point_window=_change_point_window(args),
        keep=NameFilter(args.tests_regexp, args.groups_regexp, args.commands_regexp)), platforms


def samples_from_datasink(args: argparse.Namespace) -> DatasinkSamples:
    """Samples per test from the datasink (``inputs.comparison_series``: one TS.MRANGE per
    side), and the named platforms' records (``inputs.platform_context``)."""
    query, platforms = _query(args)
    with datasink_cli.datasink_client(args) as client:
        try:
            found = read_sides(client, query)
        except reader.AmbiguousSelectorError as exc:
            raise CompareUsageError(str(exc)) from None
        except ChangePointError as exc:
            raise UsageError("--baseline-window change-point", str(exc),
                             "or give --baseline-window all / --last-n N") from None
        for side in SIDES:
            if not found.side(side):
                raise _empty_side(args, client, side, platforms[side])
        hosts, flags, problems = hosts_of(client, platforms, found.newest_ms())
        deps = {side: side_binaries.of_series(client, found.side(side), args.metric)
                for side in SIDES}
        base, comp = ({r: found.side(side)[r] for r in found.rows if r in found.side(side)}
                      for side in SIDES)
        # the lab's stored A/B of both commits, and the other rows' A/B session if any
        lab, left_out, session, rest = lab_and_session(client, (base, comp), args.metric)
    samples = found.samples()
    problems += [*found.notes, *left_out, *(
        f"{test}: no points on the {'baseline' if not b else 'comparison'} side in the "
        "datasink" for test, (b, c) in samples.items() if not b or not c)]
    return DatasinkSamples(samples, problems, hosts, flags, deps, session, rest, lab)


def _empty_side(args: argparse.Namespace, client: Any, side: str,
                platform: str | None) -> CompareUsageError:
    """A side that selects no series at all: an error naming what it asked for and, when
    it named a platform, the platforms that have results (a mistyped platform is no table
    of unknowns)."""
    chosen = side_of(args, side)
    asked = f"{chosen.kind} {chosen.value}" + (f" on platform {platform}" if platform else "")
    problem = f"no series of {args.metric} for {asked}"
    if not platform:
        return CompareUsageError(problem, what=f"--{side}-{chosen.kind} {chosen.value}")
    known = platforms_with(client, args.metric)
    flag = f"--{side}-platform" if getattr(args, f"{side}_platform") else "--platform"
    return CompareUsageError(problem, f"platforms with results: {', '.join(known) or 'none'}",
                             what=f"{flag} {platform}")


def _change_point_window(args: argparse.Namespace) -> bool:
    """The baseline is a branch cut at its last change point. Not across platforms: there
    both sides are the same builds, so both keep the same window (all, or --last-n)."""
    return bool(args.baseline_branch) and args.last_n is None and \
        args.baseline_window == "change-point" and not across_platforms(args)


def _check_args(args: argparse.Namespace) -> None:
    for option in ("tests_regexp", "groups_regexp", "commands_regexp"):
        checks.regexp("--" + option.replace("_", "-"), getattr(args, option))
    for flag, path in (("--baseline-dir", args.baseline_dir),
                       ("--comparison-dir", args.comparison_dir)):
        if path is not None:
            checks.existing_dir(flag, path)
    if args.output is not None:
        checks.output_file("--output", args.output)
    if args.last_n is not None and args.last_n < 1:
        raise UsageError(f"--last-n {args.last_n}", "must be at least 1")
    for flag in ("--platform", "--baseline-platform", "--comparison-platform"):
        value = getattr(args, flag[2:].replace("-", "_"))
        if value is not None and not valid_name(value):
            raise UsageError(f"{flag} {value!r}", "is not a platform name ([A-Za-z0-9._:-]+)")


def _samples(args: argparse.Namespace) -> DatasinkSamples:
    if _uses_datasink(args):
        return samples_from_datasink(args)
    raise CompareUsageError("give --baseline-dir/--comparison-dir, or a baseline and a "
                            "comparison selector (--*-branch, --*-version, --*-hash) for the "
                            "datasink")


def write_report(report: ComparisonReport, fmt: str, output: Path | None) -> None:
    """Print or write the report in ``fmt``; problems go to stderr for the table format.

    Tables follow the console policy (``cli.console``): never cut, in a pipe or a file too.
    """
    if fmt == "table":
        console = export_console() if output else make_console()
        for table in rich_tables(report):  # every judged metric, the most decided first
            print_table(console, table)
        hosts = hosts_rich_table(report.context)
        if hosts is not None:
            print_table(console, hosts)
        if hidden_note(report):
            console.print(f"[yellow]{escape(hidden_note(report))}[/]", highlight=False)
        if output:
            output.write_text(console.export_text())
        err = make_console(stderr=True)
        for problem in report.problems:
            err.print(f"[yellow]{escape(problem)}[/]", highlight=False)
        return
    text = to_markdown(report) if fmt == "markdown" else to_json(report)
    if output:
        output.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def say_written(args: argparse.Namespace, what: str, path: Path) -> None:
    """The line naming a file the command wrote: on stdout beside a table or a report written
    to ``--output``, on stderr when stdout holds a Markdown or JSON document."""
    alone = args.format != "table" and getattr(args, "output", None) is None
    make_console(stderr=alone).print(f"{what}: {escape(str(path.resolve()))}", highlight=False)


def _write_html(args: argparse.Namespace, report: ComparisonReport, samples: Samples) -> None:
    from redis_benchmarks_spec.analysis.report_data import ReportData, SideRuns
    from redis_benchmarks_spec.cli.report import write_html
    # datasink: the points of each side, without their result documents
    names, title = ["baseline", "comparison"], "comparison"
    if across_platforms(args):  # each side named by its platform, in the plots too
        names = [f"{side} ({side_platform(args, side)})" for side in names]
        title = f"{side_platform(args, 'baseline')} vs {side_platform(args, 'comparison')}"
    sides = [SideRuns(name, points={t: s[i] for t, s in samples.items()})
             for i, name in enumerate(names)]
    data = ReportData(title, args.metric, sides)
    data.report = report  # the same numbers as the text report (filters applied)
    say_written(args, "report", write_html(data, args.html))


def _compare_folders(args: argparse.Namespace, options: CompareOptions) -> int:
    """Two folders through the one engine: the sides of one A/B session are that session
    (paired, at its looks, with its noise priors), anything else two samples."""
    from redis_benchmarks_spec.analysis.report_data import from_runs
    from redis_benchmarks_spec.inputs.reports import judged
    from redis_benchmarks_spec.inputs.session_folder import SessionFolderError, load_folders
    keep = NameFilter(args.tests_regexp, args.groups_regexp, args.commands_regexp)
    try:
        found = load_folders(args.baseline_dir, args.comparison_dir, keep)
    except SessionFolderError as exc:
        raise CompareUsageError(str(exc)) from None
    folder_checks.check_sides(args, found)
    report = judged(found, options, (str(args.baseline_dir), str(args.comparison_dir)))
    if not report.rows:
        err = Console(stderr=True)
        err.print("[red]rbs compare: no tests to compare[/]")
        for problem in report.problems:
            err.print(escape(problem), highlight=False, soft_wrap=True)
        return EXIT_USAGE
    write_report(report, args.format, args.output)
    _say_output(args)
    if args.html:
        from redis_benchmarks_spec.cli.report import write_html
        say_written(args, "report", write_html(
            from_runs(f"{args.baseline_dir} vs {args.comparison_dir}", found.runs, report),
            args.html))
    return _exit(args, report)


def _say_output(args: argparse.Namespace) -> None:
    if args.output is not None:
        say_written(args, f"{args.format} report", args.output)


def _exit(args: argparse.Namespace, report: ComparisonReport) -> int:
    if args.fail_on_regression and (report.has_regression or report.has_busy):
        return EXIT_REGRESSION
    return 0


def cmd_compare(args: argparse.Namespace) -> int:
    """Run ``rbs compare``: 0 done, 1 a REGRESSION (or a test left BUSY) with
    --fail-on-regression, 2 cannot run."""
    err = Console(stderr=True)
    options = replace(catalogue_options(args.metric, args.alpha),
                      noise_floor_pct=noise_floor(args))
    _check_args(args)
    if args.baseline_dir or args.comparison_dir:
        if not (args.baseline_dir and args.comparison_dir):
            raise CompareUsageError("give both --baseline-dir and --comparison-dir")
        for flag in ("--platform", "--baseline-platform", "--comparison-platform"):
            if getattr(args, flag[2:].replace("-", "_")) is not None:
                raise UsageError(flag, "selects datasink series, not result folders",
                                 "a folder's runs carry their own platform; drop the flag")
        return _compare_folders(args, options)
    found = _samples(args)
    if not found.samples:
        err.print("[red]rbs compare: no tests to compare[/]")
        for problem in found.problems:
            err.print(escape(problem), highlight=False, soft_wrap=True)
        return EXIT_USAGE
    # the lab's stored A/B of these commits as the engine judged it; the pairs of one
    # interleaved A/B session (the lab's, of a pull request) as pairs, as its comment judged
    # them; other points as two samples
    report = replace(judged(found, options), context=compare_context(args, found))
    write_report(report, args.format, args.output)
    _say_output(args)
    if args.html:
        _write_html(args, report, found.samples)
    return _exit(args, report)
