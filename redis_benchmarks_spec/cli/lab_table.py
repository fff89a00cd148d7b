"""``rbs lab table``: where Redis spends its instructions across every suite the lab ran for
a commit of the tracked branch, against another (docs/watch.md); parsing and printing only."""

from __future__ import annotations

import argparse
import re
from collections.abc import Callable
from pathlib import Path

import redis
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.lab_table import DOMINANT_PCT, LabTable
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.lab.state import LabStateError, load

_SHA = re.compile(r"^[0-9a-f]{40}$")
_BRANCH = re.compile(r"^[A-Za-z0-9._/-]{1,200}$")
TEXT_ROWS = 15


def register(lab_sub: argparse._SubParsersAction,
             add_root: Callable[[argparse.ArgumentParser], None]) -> None:
    p = lab_sub.add_parser("table", help="the lab-wide instruction table of a tracked commit "
                                         "against another (text, or --html FILE)")
    add_root(p)
    p.add_argument("--datasink", metavar="URL", default=None,
                   help="the datasink to read (default: the lab of --dir)")
    p.add_argument("--branch", default="unstable", help="the tracked branch (default unstable)")
    p.add_argument("--commit", metavar="SHA", default=None,
                   help="the commit (40 hex; default: the branch's last profiled commit)")
    p.add_argument("--against", metavar="SHA", default=None,
                   help="the commit it is compared with (default: the profiled one before)")
    p.add_argument("--html", type=Path, default=None, metavar="FILE",
                   help="write the table as an HTML page (per suite group too)")
    p.set_defaults(func=cmd_table)


def _url(args: argparse.Namespace) -> str:
    if args.datasink:
        return str(args.datasink)
    try:
        return load(args.lab_dir.resolve()).datasink_url
    except LabStateError as exc:
        raise UsageError(f"--dir {args.lab_dir}", str(exc), "or give --datasink URL") from None


def _checked(args: argparse.Namespace) -> None:
    for flag, value in (("--commit", args.commit), ("--against", args.against)):
        if value is not None and not _SHA.match(value):
            raise UsageError(f"{flag} {value}", "expected a 40-hex commit")
    if not _BRANCH.match(args.branch):
        raise UsageError(f"--branch {args.branch}", "not a branch name")


def cmd_table(args: argparse.Namespace) -> int:
    """Print the table's top rows; write the page with --html."""
    from redis_benchmarks_spec.inputs.reports import read_lab_table
    _checked(args)
    url = _url(args)
    client = redis.Redis.from_url(url, socket_timeout=30, socket_connect_timeout=5)
    try:
        table = read_lab_table(client, ("redis", "redis", args.branch), args.commit,
                               args.against)
    except redis.RedisError as exc:
        raise UsageError(f"--datasink {url}", str(exc).splitlines()[0] if str(exc) else
                         type(exc).__name__, "is the datasink running?") from None
    except ValueError as exc:
        raise UsageError(f"--branch {args.branch}", str(exc)) from None
    finally:
        client.close()
    if table is None:
        what = args.commit or f"any commit of {args.branch}"
        raise UsageError("rbs lab table", f"the lab profiled no suite of {what}",
                         "run the agents with --profilers instructions")
    console = make_console()
    against = f"against {table.previous[:10]}" if table.previous else "(nothing to compare)"
    console.print(f"{args.branch} at {table.commit[:10]}, {table.suites} suite(s), {against}",
                  highlight=False, markup=False)
    console.print(_rich_table(table))
    shown = table.rows[:TEXT_ROWS]
    console.print(f"these {len(shown)} function(s): "
                  f"{sum(r.share_pct for r in shown):.2f}% of the instructions per op of all "
                  f"{table.suites} suite(s) (share: a function's self count; suites: where it "
                  f"takes at least {DOMINANT_PCT:g}%)", highlight=False, markup=False)
    if args.html is not None:
        from redis_benchmarks_spec.analysis.html_report import write_lab_table
        try:
            written = write_lab_table(table, args.html, args.branch)
        except OSError as exc:
            raise UsageError(str(args.html), exc.strerror or str(exc)) from None
        console.print(f"wrote {written}", highlight=False, markup=False)
    return 0


def _rich_table(table: LabTable) -> Table:
    """The top rows, never cut: at a narrow width the widest cells (a deep header's path,
    deps/jemalloc/include/...) fold onto a second line, as rich does, and the numbers stay
    whole."""
    out = Table()
    for header, justify in (("function", "left"), ("file", "left")):
        out.add_column(header, justify=justify, overflow="fold")  # type: ignore[arg-type]
    for header in ("share", "change", "suites"):
        out.add_column(header, justify="right", no_wrap=True)
    for row in table.rows[:TEXT_ROWS]:
        change = "" if row.change_pp is None else f"{row.change_pp:+.2f}pp"
        out.add_row(escape(row.function), escape(row.file), f"{row.share_pct:.2f}%", change,
                    str(row.suites))
    return out


def write_page(client: redis.Redis, branch: str, path: Path) -> str:
    """The branch's last profiled commit's table as ``path`` (the replay's
    ``lab-table.html``); what was done, one line."""
    from redis_benchmarks_spec.inputs.reports import read_lab_table
    table = read_lab_table(client, ("redis", "redis", branch))
    if table is None:
        return "no lab-table.html: no suite was profiled (agents without --profilers instructions)"
    try:
        from redis_benchmarks_spec.analysis.html_report import write_lab_table
    except ImportError as exc:
        return f"no lab-table.html: the HTML report needs matplotlib ({exc})"
    return f"lab-wide instruction table of {table.commit[:10]}: {write_lab_table(table, path, branch)}"
