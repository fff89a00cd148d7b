"""``rbs compare``: baseline vs comparison per test, with intervals and honest verdicts.

Two sources: two local results directories (``--baseline-dir``/``--comparison-dir``), or
the datasink selected by branch, version or hash per side (wired through
``redis_benchmarks_spec.datasink.reader``).
"""

from __future__ import annotations

import argparse
import importlib
import io
import sys
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import (
    DEFAULT_METRIC,
    CompareOptions,
    ComparisonReport,
    ResultFilter,
    compare_samples,
    load_dir_samples,
)
from redis_benchmarks_spec.analysis.report import to_json, to_markdown, to_rich_table

Samples = dict[str, tuple[list[float], list[float]]]

DATASINK_READER = "redis_benchmarks_spec.datasink.reader"
#: the reader function the datasink path calls: (args) -> (samples, problems)
DATASINK_ENTRY = "samples_for_compare"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("compare", help="compare a baseline and a comparison build per test",
                       description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    _add_source_args(p)
    _add_filter_args(p)
    _add_decision_args(p)
    _add_output_args(p)
    p.set_defaults(func=cmd_compare)


def _add_source_args(p: argparse.ArgumentParser) -> None:
    src = p.add_argument_group("sources")
    src.add_argument("--baseline-dir", type=Path, help="results directory of the baseline")
    src.add_argument("--comparison-dir", type=Path, help="results directory of the comparison")
    src.add_argument("--datasink", metavar="URL", help="datasink (RedisTimeSeries) URL")
    for side in ("baseline", "comparison"):
        group = src.add_mutually_exclusive_group()
        for what in ("branch", "version", "hash"):
            group.add_argument(f"--{side}-{what}", metavar=what.upper(),
                               help=f"{side} build by git {what} (datasink)")


def _add_filter_args(p: argparse.ArgumentParser) -> None:
    flt = p.add_argument_group("scope")
    flt.add_argument("--platform", help="platform label (datasink)")
    flt.add_argument("--topology", help="topology, e.g. oss-standalone (datasink)")
    flt.add_argument("--build-variant", help="build variant label (datasink)")
    flt.add_argument("--tests-regexp", default=".*", help="regexp on test names")
    flt.add_argument("--groups-regexp", help="regexp on tested groups")
    flt.add_argument("--commands-regexp", help="regexp on tested commands")
    flt.add_argument("--metric", default=DEFAULT_METRIC,
                     help=f"metric to compare (default {DEFAULT_METRIC}); latency metrics "
                          "are lower-is-better")
    flt.add_argument("--last-n", type=int, help="last N points per side (datasink)")
    flt.add_argument("--from-date", help="start of the time range, ISO date (datasink)")
    flt.add_argument("--to-date", help="end of the time range, ISO date (datasink)")


def _add_decision_args(p: argparse.ArgumentParser) -> None:
    dec = p.add_argument_group("decision")
    dec.add_argument("--noise-floor", type=float, default=2.0, metavar="PCT",
                     help="changes within +/- PCT %% are never flagged (default 2)")
    dec.add_argument("--alpha", type=float, default=0.05,
                     help="false discovery rate for Benjamini-Hochberg (default 0.05)")


def _add_output_args(p: argparse.ArgumentParser) -> None:
    out = p.add_argument_group("output")
    out.add_argument("--format", choices=("table", "markdown", "json"), default="table")
    out.add_argument("--output", type=Path, metavar="FILE", help="write the report to FILE")
    out.add_argument("--fail-on-regression", action="store_true",
                     help="exit 1 when any test is a REGRESSION")


def _uses_datasink(args: argparse.Namespace) -> bool:
    selectors = [getattr(args, f"{side}_{what}") for side in ("baseline", "comparison")
                 for what in ("branch", "version", "hash")]
    return bool(args.datasink) or any(selectors)


def samples_from_datasink(args: argparse.Namespace) -> tuple[Samples, list[str]]:
    """Samples per test from the datasink, through ``datasink.reader`` once it exists."""
    try:
        reader = importlib.import_module(DATASINK_READER)
    except ImportError:
        raise SystemExit("rbs compare: datasink comparisons need "
                         f"{DATASINK_READER}, not installed yet") from None
    entry = getattr(reader, DATASINK_ENTRY, None)
    if entry is None:
        raise SystemExit(f"rbs compare: {DATASINK_READER} has no {DATASINK_ENTRY}(args); "
                         "datasink comparisons are not wired yet")
    return entry(args)


def _samples(args: argparse.Namespace) -> tuple[Samples, list[str]]:
    if args.baseline_dir or args.comparison_dir:
        if not (args.baseline_dir and args.comparison_dir):
            raise SystemExit("rbs compare: give both --baseline-dir and --comparison-dir")
        keep = ResultFilter(args.tests_regexp, args.groups_regexp, args.commands_regexp)
        return load_dir_samples(args.baseline_dir, args.comparison_dir, args.metric, keep=keep)
    if _uses_datasink(args):
        return samples_from_datasink(args)
    raise SystemExit("rbs compare: give --baseline-dir/--comparison-dir, or a baseline and a "
                     "comparison selector (--*-branch, --*-version, --*-hash) for the datasink")


def write_report(report: ComparisonReport, fmt: str, output: Path | None) -> None:
    """Print or write the report in ``fmt``; problems go to stderr for the table format."""
    if fmt == "table":
        if output:
            console = Console(record=True, file=io.StringIO(), width=200)
            console.print(to_rich_table(report))
            output.write_text(console.export_text())
        else:
            Console().print(to_rich_table(report))
        err = Console(stderr=True)
        for problem in report.problems:
            err.print(f"[yellow]{escape(problem)}[/]", highlight=False, soft_wrap=True)
        return
    text = to_markdown(report) if fmt == "markdown" else to_json(report)
    if output:
        output.write_text(text + "\n")
    else:
        sys.stdout.write(text + "\n")


def cmd_compare(args: argparse.Namespace) -> int:
    samples, problems = _samples(args)
    if not samples:
        Console(stderr=True).print("[red]rbs compare: no tests to compare[/]")
        for problem in problems:
            Console(stderr=True).print(problem, highlight=False, soft_wrap=True)
        return 2
    options = CompareOptions(noise_floor_pct=args.noise_floor, alpha=args.alpha,
                             metric=args.metric)
    report = compare_samples(samples, options, problems)
    write_report(report, args.format, args.output)
    return 1 if args.fail_on_regression and report.has_regression else 0
