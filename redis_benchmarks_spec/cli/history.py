"""``rbs history --test T --metric M --branch B``: a metric's series on a branch with a
sparkline and the last N points (time, value, commit, version); ``--format csv|json``
exports them. Reads the datasink (``--datasink URL`` or the running embedded one)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from datetime import datetime, timezone
from pathlib import Path

import redis
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC
from redis_benchmarks_spec.analysis.context import short
from redis_benchmarks_spec.analysis.history import (
    History,
    HistoryError,
    HistoryQuery,
    sparkline,
    to_csv,
    to_json,
)
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli import history_hints as hints
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.inputs.history import read_history


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="a metric's history on a branch, from the datasink",
                       description=__doc__)
    p.add_argument("--test", required=True, help="test name")
    p.add_argument("--metric", default=DEFAULT_METRIC, help=f"(default {DEFAULT_METRIC})")
    p.add_argument("--branch", default="unstable", help="(default unstable)")
    p.add_argument("--platform")
    p.add_argument("--topology")
    p.add_argument("--build-variant")
    p.add_argument("--last", type=int, default=20, metavar="N", help="points (default 20)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--output", type=Path, metavar="FILE", help="write csv/json to FILE")
    datasink_cli.add_remote_args(p)
    datasink_cli.add_embedded_args(p)
    p.set_defaults(func=cmd_history)


def _when(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def _table(history: History, reps: dict[str, int | None]) -> Table:
    values = [p.value for p in history.points]
    q = history.query
    table = Table(title=f"{escape(q.test)} {escape(q.metric)} on {escape(q.branch)}: "
                        f"{sparkline(values)}  (min {plain(min(values), 4)}, max {plain(max(values), 4)})",
                  caption=escape(history.series_key), caption_justify="left")
    for col in ("time (UTC)", "value", "commit", "version", "repetition"):
        table.add_column(col, justify="right" if col in ("value", "repetition") else "left")
    for p in history.points:
        rep = reps.get(p.run_id)
        table.add_row(_when(p.ts_ms), plain(p.value, 4), short(p.commit) or "–",
                      p.version or "–", "–" if rep is None else str(rep))
    return table


def _histories(client: redis.Redis, query: HistoryQuery,
               table: bool) -> tuple[list[History], dict[str, int | None]]:
    """The query's history, or for a swept test (table form) one per swept value; and the
    repetition of each point's run. Nothing found: a :class:`UsageError` saying what to pass."""
    try:
        histories = [read_history(client, query)]
    except HistoryError as exc:
        if "series match" in str(exc):
            raise UsageError("--test/--metric/--branch", str(exc)) from None
        found = hints.found_for(client, query)
        if not (found.swept and table):
            raise UsageError("--test/--metric/--branch", f"{exc}; {hints.hint(found, query)}") \
                from None
        histories = [read_history(client, replace(query, test=name))
                     for name in hints.swept_tests(found)]
    reps = {run: rep for h in histories for run, rep in h.repetitions.items() if run}
    return histories, reps


def cmd_history(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError(f"--last {args.last}", "must be at least 1")
    query = HistoryQuery(test=args.test, metric=args.metric, branch=args.branch,
                         platform=args.platform, topology=args.topology,
                         build_variant=args.build_variant, last_n=args.last)
    with datasink_cli.datasink_client(args) as client:
        histories, reps = _histories(client, query, args.format == "table")
    if args.format == "table":
        for history in histories:
            Console().print(_table(history, reps))
        return 0
    history = histories[0]
    text = to_csv(history) if args.format == "csv" else to_json(history) + "\n"
    if args.output:
        args.output.write_text(text)
    else:
        print(text, end="")
    return 0
