"""``rbs report``: a self-contained HTML page for a results folder, an A/B session or two
folders compared; ``rbs compare --html`` and ``rbs run ... --html`` (A/B) write it too.

Parsing and wiring only: the data is read by :mod:`redis_benchmarks_spec.inputs.reports`,
the page :mod:`redis_benchmarks_spec.analysis.html_report`.
"""

from __future__ import annotations

import argparse
from dataclasses import replace
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import DEFAULT_METRIC, CompareOptions
from redis_benchmarks_spec.analysis.engine import catalogue_options
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.cli.floor_help import FLOOR_HELP
from redis_benchmarks_spec.common.paths import absolute_file


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("report", help="write a self-contained HTML report with plots",
                       description=__doc__)
    p.add_argument("folder", nargs="?", type=Path,
                   help="a results folder, or an A/B session (holding baseline/ and "
                        "comparison/)")
    p.add_argument("--baseline-dir", type=Path, help="compare this folder ...")
    p.add_argument("--comparison-dir", type=Path, help="... with this one")
    p.add_argument("--from-json", type=Path, metavar="FILE",
                   help="a comparison written by `rbs compare --format json` (verdicts, "
                        "header and history; no per-run plots)")
    p.add_argument("--output", "-o", type=Path, default=None,
                   help="HTML file (default: report.html in the folder)")
    p.add_argument("--html", nargs="?", const="", default=None, metavar="FILE", type=absolute_file,
                   help="the same as --output (rbs compare and rbs run spell it --html); "
                        "alone: the default file")
    p.add_argument("--metric", default=None,
                   help=f"(default: the metric an --until-decided session decided on, else "
                        f"{DEFAULT_METRIC})")
    p.add_argument("--noise-floor", type=float, default=None, metavar="PCT",
                   help=f"changes within +/- PCT %% are never flagged (default: {FLOOR_HELP})")
    p.add_argument("--alpha", type=float, default=0.05)
    add_history_args(p)
    p.set_defaults(func=cmd_report)


def add_history_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("history (from the datasink)")
    g.add_argument("--history-datasink", metavar="URL", default=None,
                   help="RedisTimeSeries URL to read each metric's history from")
    g.add_argument("--history-branch", metavar="B", default="unstable",
                   help="branch whose history is drawn (default unstable)")
    g.add_argument("--history-platform", metavar="P", default=None,
                   help="only series of this platform")


def _data(args: argparse.Namespace, options: CompareOptions) -> Any:
    from redis_benchmarks_spec.analysis.report_data import ReportInputError
    from redis_benchmarks_spec.inputs import reports as report_data
    try:
        if args.from_json:
            return report_data.from_report_json(args.from_json)
        if args.baseline_dir or args.comparison_dir:
            if not (args.baseline_dir and args.comparison_dir):
                raise UsageError("--baseline-dir/--comparison-dir", "give both")
            return report_data.from_two_folders(args.baseline_dir, args.comparison_dir,
                                                options)
        if args.folder is None:
            raise UsageError("FOLDER", "give a results folder or --baseline-dir and "
                                       "--comparison-dir")
        # a session's own record names the metric it decided on, unless --metric says
        return report_data.from_folder(args.folder, options, args.metric is None)
    except ReportInputError as exc:
        raise UsageError("", str(exc)) from None


def attach_history(args: argparse.Namespace, data: Any) -> None:
    """Add the datasink's history when --history-datasink is given."""
    if not args.history_datasink:
        return
    from redis_benchmarks_spec.inputs.reports import attach_history as attach
    client = redis.Redis.from_url(args.history_datasink, socket_timeout=30,
                                  socket_connect_timeout=5)
    try:
        attach(data, client, args.history_branch, args.history_platform)
    except redis.ConnectionError as exc:
        raise UsageError(f"--history-datasink {args.history_datasink}", str(exc),
                         "is the datasink running?") from None
    finally:
        client.close()


def write_html(data: Any, path: Path) -> Path:
    """Write the page; a missing plotting library is the user's to install, said once."""
    try:
        from redis_benchmarks_spec.analysis import html_report
    except ImportError as exc:
        raise UsageError("--html/rbs report", f"needs matplotlib ({exc})",
                         "pip install 'redis-benchmarks-spec[report]'") from None
    from redis_benchmarks_spec.inputs.profiles import report_movers
    if not data.movers:  # the functions that moved, as the terminal lists them
        data.movers = report_movers(data)
    try:
        return html_report.write(data, path)
    except OSError as exc:
        raise UsageError(str(path), exc.strerror or str(exc)) from None


def _html_flag(args: argparse.Namespace) -> None:
    """``--html [FILE]`` is ``--output FILE`` (the page is HTML either way)."""
    if args.html is None:
        return
    if args.output is not None and args.html:
        raise UsageError(f"--html {args.html}", "give --html FILE or --output FILE, not both")
    if args.html:
        args.output = Path(args.html)


def _recorded_metric(args: argparse.Namespace) -> str | None:
    """The metric an ``--until-decided`` session folder decided on (its record), if any."""
    from redis_benchmarks_spec.inputs.session_folder import (
        SessionFolderError,
        is_session,
        read_record,
    )
    if args.folder is None or args.from_json or not is_session(args.folder):
        return None
    try:
        record = read_record(args.folder)
    except SessionFolderError:
        return None  # the report says what is wrong with it when it reads the folder
    return record.metric if record is not None else None


def cmd_report(args: argparse.Namespace) -> int:
    _html_flag(args)
    metric = args.metric or _recorded_metric(args) or DEFAULT_METRIC
    options = catalogue_options(metric, args.alpha)  # the floor of the metric judged
    if args.noise_floor is not None:
        options = replace(options, noise_floor_pct=args.noise_floor)
    data = _data(args, options)
    attach_history(args, data)
    if args.output is None and args.from_json:
        args.output = args.from_json.with_suffix(".html")
    root = args.folder or args.comparison_dir
    path = write_html(data, args.output or root / "report.html")
    print(f"report: {path}")
    return 0
