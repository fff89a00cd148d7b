"""``rbs changepoints --branch B [--test REGEXP] [--metric M]``: where each series of a branch
stepped (Apache Otava's E-Divisive with a t test), between which commits, by how much with
an interval, and how significant. Reads the datasink (``--datasink URL`` or the embedded one)."""

from __future__ import annotations

import argparse
import json
from datetime import datetime, timezone
from typing import Any

from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.branch_changes import BranchQuery, SeriesChanges
from redis_benchmarks_spec.analysis.changepoints import (
    DEFAULT_MAX_PVALUE,
    DEFAULT_WINDOW,
    ChangePointError,
    ChangePointOptions,
)
from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC
from redis_benchmarks_spec.analysis.context import short
from redis_benchmarks_spec.analysis.history import HistoryError
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli.console import make_console, print_table
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.inputs.history import series_changes, tests_on_branch


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("changepoints", help="change points of a branch's series (datasink)",
                       description=__doc__)
    p.add_argument("--branch", required=True)
    p.add_argument("--test", default=".*", metavar="REGEXP", help="tests whose name matches")
    p.add_argument("--metric", default=DEFAULT_METRIC)
    p.add_argument("--platform")
    p.add_argument("--topology")
    p.add_argument("--build-variant")
    p.add_argument("--last", type=int, default=500, metavar="N", help="points per series")
    p.add_argument("--max-pvalue", type=float, default=DEFAULT_MAX_PVALUE,
                   help="significance a split must reach")
    p.add_argument("--window", type=int, default=DEFAULT_WINDOW,
                   help="Otava's sliding window (points)")
    p.add_argument("--min-change", type=float, default=0.0, metavar="PCT",
                   help="ignore steps smaller than this percentage")
    p.add_argument("--format", choices=("table", "json"), default="table")
    datasink_cli.add_remote_args(p)
    datasink_cli.add_embedded_args(p)
    p.set_defaults(func=cmd_changepoints)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _ci(low: float | None, high: float | None) -> str:
    if low is None or high is None:
        return "unbounded"
    return f"[{low:+.1f}%, {high:+.1f}%]"


def _table(found: list[SeriesChanges], query: BranchQuery) -> Table:
    table = Table(title=f"change points on {escape(query.branch)}: {escape(query.metric)}")
    for col in ("test", "commits (before..after)", "when", "step", "95% CI", "p",
                "points before/after"):
        table.add_column(col)
    for series in found:
        if not series.steps:
            table.add_row(escape(series.test), f"none in {series.points} points", "", "", "",
                          "", "")
        for placed in series.steps:
            s = placed.step
            colour = "red" if placed.worse else "green"
            commits = f"{short(placed.before.commit) or '?'}..{short(placed.after.commit) or '?'}"
            table.add_row(escape(series.test), commits, _when(placed.after.ts_ms),
                          f"[{colour}]{s.change_pct:+.1f}%[/]", _ci(s.ci_low_pct, s.ci_high_pct),
                          plain(s.p_value, 2), f"{s.n_before}/{s.n_after}")
    return table


def _check(args: argparse.Namespace) -> None:
    checks.regexp("--test", args.test)
    if args.last < 4:
        raise UsageError(f"--last {args.last}", "must be at least 4")
    if not 0 < args.max_pvalue < 1:
        raise UsageError(f"--max-pvalue {args.max_pvalue}", "must be between 0 and 1")
    if args.window < 4:
        raise UsageError(f"--window {args.window}", "must be at least 4")


def cmd_changepoints(args: argparse.Namespace) -> int:
    _check(args)
    query = BranchQuery(branch=args.branch, metric=args.metric, tests_regexp=args.test,
                        platform=args.platform, topology=args.topology,
                        build_variant=args.build_variant, last_n=args.last)
    options = ChangePointOptions(max_pvalue=args.max_pvalue, window=args.window,
                                 min_magnitude_pct=args.min_change)
    with datasink_cli.datasink_client(args) as client:
        tests = tests_on_branch(client, query)
        if not tests:
            raise UsageError("--branch/--test/--metric",
                             f"no series of {args.metric} on branch {args.branch} "
                             f"matching {args.test!r}")
        try:
            found = [series_changes(client, query, t, options) for t in tests]
        except HistoryError as exc:
            raise UsageError("--platform/--topology/--build-variant", str(exc)) from None
        except ChangePointError as exc:
            raise UsageError("apache-otava", str(exc)) from None
    if args.format == "json":
        data: dict[str, Any] = {"branch": args.branch, "metric": args.metric,
                                "series": [f.to_dict() for f in found]}
        print(json.dumps(data, indent=2))
    else:
        print_table(make_console(), _table(found, query))
    return 0
