"""``rbs history --test T --metric M --branch B``: a metric's series on a branch with a
sparkline and the last N points (time, value, commit, version); ``--format csv|json``
exports them. Reads the datasink (``--datasink URL`` or the running embedded one)."""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path

import redis
from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC
from redis_benchmarks_spec.analysis.context import short
from redis_benchmarks_spec.analysis.history import (
    NA,
    History,
    HistoryError,
    HistoryQuery,
    rows,
    sparkline,
    to_csv,
    to_json,
)
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli import history_hints as hints
from redis_benchmarks_spec.cli.console import make_console, print_table
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.datasink import alert_triage, keys, suspect_marks, watch_store
from redis_benchmarks_spec.inputs.history import read_history


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("history", help="a metric's history on a branch, from the datasink",
                       description=__doc__)
    p.add_argument("--test", required=True, help="test name")
    p.add_argument("--metric", default=DEFAULT_METRIC, help=f"(default {DEFAULT_METRIC})")
    side = p.add_mutually_exclusive_group()
    side.add_argument("--branch", default="unstable", help="(default unstable)")
    side.add_argument("--version", default=None, metavar="V",
                      help="runs filed by release version, e.g. 7.0.15 (rbs run without "
                           "--branch of a packaged redis-server lands there)")
    side.add_argument("--hash", default=None, metavar="SHA",
                      help="runs filed by commit (the full sha the run or the server "
                           "reported: a local build's)")
    p.add_argument("--platform")
    p.add_argument("--topology")
    p.add_argument("--build-variant")
    p.add_argument("--last", type=int, default=20, metavar="N", help="points (default 20)")
    p.add_argument("--format", choices=("table", "csv", "json"), default="table")
    p.add_argument("--output", type=Path, metavar="FILE", help="write csv/json to FILE")
    datasink_cli.add_remote_args(p)
    datasink_cli.add_embedded_args(p)
    p.set_defaults(func=cmd_history)


def _heading(history: History) -> str:
    values = [p.value for p in history.points]
    q = history.query
    return (f"{escape(q.test)} {escape(q.metric)} on {escape(q.where)}: {sparkline(values)}  "
            f"(min {plain(min(values), 4)}, max {plain(max(values), 4)})")


def _table(history: History, reps: dict[str, int | None],
           watch: dict[str, list[str]] | None = None) -> Table:
    """The columns of :func:`analysis.history.rows` (CSV and JSON carry the same), and the
    branch's alerts and host boundaries (``watch``) on each commit's first point."""
    table = Table()
    cols = ["time (UTC)", "value", "commit", "version", "repetition"]
    suspect = any(p.suspect for p in history.points)
    for col in cols + (["suspect"] if suspect else []) + (["watch"] if watch else []):
        table.add_column(col, justify="right" if col in ("value", "repetition") else "left")
    marked: set[str] = set()
    for row in rows(history):
        rep = reps.get(row["run_id"]) if row["run_id"] else None
        commit = row["commit"] if row["commit"] == NA else short(row["commit"])
        cells = [row["time_utc"], plain(row["value"], 4), commit, row["version"],
                 NA if rep is None else str(rep)]
        if suspect:  # measured on an artifact found bad: shown, never judged
            cells.append("SUSPECT (bad artifact)" if row["suspect"] else "")
        if watch:  # a commit's alert or host boundary is shown on its first point
            sha = row["commit"]
            cells.append(escape("; ".join(watch.get(sha, []))) if sha not in marked else "")
            marked.add(sha)
        table.add_row(*cells)
    return table


def _watch_lines(client: redis.Redis, history: History) -> dict[str, list[str]]:
    """The branch's confirmed-change alerts, their triage and host-changed boundaries, by
    commit (``datasink.watch_store``, ``datasink.alert_triage``; docs/watch.md)."""
    series = keys.parse_key(history.series_key, history.query.metric)
    where = watch_store.Branch(series.scope.github_org, series.scope.github_repo,
                               history.query.branch)
    out: dict[str, list[str]] = {}
    for line in watch_store.log_lines(client, where):
        if line["kind"] == suspect_marks.NOTE_KIND:
            if f" {series.build_variant}: " in line["text"]:
                out.setdefault(line["sha"], []).append(f"SUSPECT {line['text']}")
        elif line["kind"] in ("alert", "small-change") or line["text"].startswith(
                f"host changed on {series.platform} "):
            out.setdefault(line["sha"], []).append(
                "HOST CHANGED (boundary)" if line["kind"] == "host-changed"
                else f"ALERT {line['text']}" if line["kind"] == "alert"
                else f"small change: {line['text']}")
    # what maintainers said of each alert: the newest word (datasink/alert_triage.py)
    for sha, triage in alert_triage.triages(client, where).items():
        out.setdefault(sha, []).append(f"triaged: {triage.words}")
    return out


def _print(console: Console, history: History, reps: dict[str, int | None],
           watch: dict[str, list[str]] | None = None) -> None:
    """Heading, table and series key, each line whole (the key is never folded)."""
    console.print(_heading(history), style="bold", soft_wrap=True)
    print_table(console, _table(history, reps, watch))
    console.print(escape(history.series_key), style="dim", soft_wrap=True)


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
        swept = _swept_histories(client, query, hints.swept_tests(found.swept)) \
            if found.swept and table else []
        if not swept:
            raise UsageError(hints.flag(found, query), f"{exc}; {hints.hint(found, query)}") \
                from None
        histories = swept
    reps = {run: rep for h in histories for run, rep in h.repetitions.items() if run}
    return histories, reps


def _also_swept(client: redis.Redis, query: HistoryQuery) -> str:
    """A line naming the test's swept series on the branch, shown beside its plain one."""
    swept = hints.swept_values(client, query)
    if not swept:
        return ""
    return f"{query.test} was also swept on {query.branch}: {hints.pass_swept(swept)}"


def _swept_histories(client: redis.Redis, query: HistoryQuery,
                     names: list[str]) -> list[History]:
    """The history of each swept value of the test that matches the query's other filters
    (platform, topology, build variant); none when no swept value does."""
    found = []
    for name in names:
        try:
            found.append(read_history(client, replace(query, test=name)))
        except HistoryError:
            continue
    return found


def cmd_history(args: argparse.Namespace) -> int:
    if args.last < 1:
        raise UsageError(f"--last {args.last}", "must be at least 1")
    if args.output and args.format == "table":
        raise UsageError(f"--output {args.output}", "writes csv or json: add --format csv or "
                         "--format json")
    if args.output is not None:
        checks.output_file("--output", args.output)
    query = HistoryQuery(test=args.test, metric=args.metric, branch=args.branch,
                         platform=args.platform, topology=args.topology,
                         build_variant=args.build_variant, last_n=args.last,
                         version=args.version, commit=args.hash)
    with datasink_cli.datasink_client(args) as client:
        histories, reps = _histories(client, query, args.format == "table")
        also = _also_swept(client, query) if args.format == "table" and \
            histories[0].query.test == query.test else ""
        watch = [_watch_lines(client, h) for h in histories] if args.format == "table" else []
    if args.format == "table":
        console = make_console()
        for history, marks in zip(histories, watch):
            _print(console, history, reps, marks)
        if also:
            console.print(escape(also), style="yellow", soft_wrap=True)
        return 0
    history = histories[0]
    text = to_csv(history) if args.format == "csv" else to_json(history) + "\n"
    if args.output:
        args.output.write_text(text)
        make_console().print(f"{args.format}: {escape(str(args.output.resolve()))}",
                             highlight=False)
    else:
        print(text, end="")
    return 0
