"""``rbs run --sweep clients=1,8,64,512``: parsing and printing only; the runs are
:mod:`runner.sweep`, the curve and its knee :mod:`analysis.sweep`."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.rate_curve import RatePoint, rate_curves
from redis_benchmarks_spec.analysis.sweep import SWEEP_PERCENTILES, SweepCurve, sweep_curves
from redis_benchmarks_spec.cli.console import print_table
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.loadgen.pacing import PacingError
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner import rate_sweep
from redis_benchmarks_spec.runner.concurrency import PointRule
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.runner.sweep import PARAMS, Sweep, SweepError, parse_sweep, plan_points
from redis_benchmarks_spec.suites.suite import Suite

RULE = PointRule()


def add_sweep_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sweep")
    g.add_argument("--sweep", default=None, metavar="PARAM=V1,V2,...",
                   help=f"run the selection once per value of one parameter "
                        f"({', '.join(PARAMS)}), e.g. connections=1,64,1000,10000; prints "
                        f"throughput and latency per value and names the knee")
    g.add_argument("--rate", type=float, default=None, metavar="N",
                   help="offer N requests/s in all (memtier suites: --rate-limiting N / "
                        "connections each) and record offered and achieved rates; latency "
                        "at that load instead of at saturation")
    g.add_argument("--min-requests-per-connection", type=int, metavar="M",
                   default=RULE.min_requests_per_connection,
                   help="clients/connections sweeps: each point runs until every connection "
                        "sent M requests on average (default %(default)s)")
    g.add_argument("--warmup-seconds", type=int, default=RULE.warmup_s, metavar="S",
                   help="clients/connections sweeps: a warm-up of S seconds at the point's "
                        "connection count before it is measured (default %(default)s)")
    g.add_argument("--max-point-seconds", type=int, default=RULE.max_point_s, metavar="S",
                   help="the longest a measured point may run to meet the minimum "
                        "(default %(default)s)")


def _rule(args: argparse.Namespace) -> PointRule:
    for flag, value, high in (("--min-requests-per-connection",
                                args.min_requests_per_connection, 1_000_000_000),
                              ("--warmup-seconds", args.warmup_seconds, 3_600),
                              ("--max-point-seconds", args.max_point_seconds, 86_400)):
        if not 1 <= value <= high:
            raise UsageError(f"{flag} {value}", f"must be between 1 and {high:,}")
    return PointRule(args.min_requests_per_connection, args.warmup_seconds,
                     args.max_point_seconds)


def check_sweep(args: argparse.Namespace) -> Sweep | None:
    """The parsed --sweep, or None; raises :class:`UsageError` naming the flag."""
    if not args.sweep:
        return None
    if args.baseline_server or args.comparison_server:
        raise UsageError("--sweep", "not available in A/B mode")
    if args.repetitions is not None:
        raise UsageError("--sweep", "runs each value once; drop --repetitions")
    try:
        return parse_sweep(args.sweep, _rule(args))
    except SweepError as exc:
        raise UsageError(f"--sweep {args.sweep}", str(exc)) from None


def check_sweep_points(config: SessionConfig, suites: list[Suite], sweep: Sweep | None) -> None:
    """Every point can run here (connections the tool and host can open, limits that can be
    raised far enough), before the first one starts."""
    if sweep is None:
        return
    try:
        plan_points(config, suites, sweep)
    except SweepError as exc:
        raise UsageError(f"--sweep {sweep.param}", str(exc)) from None


def _ms(value: float | None) -> str:
    return "–" if value is None else plain(value)


def _opt(value: float | None, suffix: str = "") -> str:
    return "–" if value is None else f"{plain(value)}{suffix}"


def curve_table(curve: SweepCurve) -> Table:
    # the knee's sentence is printed once, below the table (report_sweep)
    table = Table(title=f"{escape(curve.test)}: {curve.param} sweep")
    timed = any(p.connections is not None for p in curve.points)
    extra = ("conns", "req/conn", "run s", "wall s") if timed else ()
    # the percentiles the tool reported (redis-benchmark has no p90, p99.9 or p99.99)
    shown = [p for p in SWEEP_PERCENTILES if any(p in pt.latency_ms for pt in curve.points)]
    has_max = any(p.max_ms is not None for p in curve.points)
    columns = (curve.param, *extra, "ops/sec", *(f"{p} ms" for p in shown),
               *(("max ms",) if has_max else ()), "note")
    for col in columns:
        table.add_column(col, justify="right")
    for i, point in enumerate(curve.points):
        mark = "<- knee" if curve.knee.index == i else ""
        if point.meets_minimum is False:
            mark = (mark + " below minimum").strip()
        cells = (_opt(point.connections), _opt(point.requests_per_connection),
                 _opt(point.duration_s), _opt(point.wall_s)) if timed else ()
        table.add_row(point.label or plain(point.value), *cells, f"{point.ops_per_sec:,.0f}",
                      *(_ms(point.latency_ms.get(p)) for p in shown),
                      *((_ms(point.max_ms),) if has_max else ()), mark)
    return table


def rate_table(test: str, points: list[RatePoint]) -> Table:
    """A rate sweep's points: offered and achieved rate, measured and corrected latency."""
    table = Table(title=f"{escape(test)}: latency at fixed rates (corrected: for "
                        "coordinated omission)")
    for col in ("rate", "offered/s", "achieved/s", "achieved %", "p50 ms", "p99 ms",
                "p99.9 ms", "p99 corrected ms", "p99.9 corrected ms", ""):
        table.add_column(col, justify="right")
    for p in points:
        share = f"{p.achieved / p.offered * 100:.0f}%" if p.offered else "–"
        table.add_row(escape(p.label), f"{p.offered:,.0f}", f"{p.achieved:,.0f}", share,
                      *(_ms(p.uncorrected.get(q)) for q in ("p50.00", "p99.00", "p99.90")),
                      *(_ms(p.corrected.get(q)) for q in ("p99.00", "p99.90")),
                      "saturated" if p.saturated else "")
    return table


def limits_lines(results: list[RunResult]) -> list[str]:
    """One line per point of a clients/connections sweep: what was raised for it."""
    lines, seen = [], set()
    for r in results:
        conc = r.concurrency
        if not conc or r.sweep.get("value") in seen:
            continue
        seen.add(r.sweep.get("value"))
        lim = conc["limits"]
        took = lim.get("server_took") or {}
        lines.append(
            f"{r.sweep['param']}={r.sweep['value']}: server maxclients {lim['maxclients']:,} "
            f"(it took {_opt(took.get('maxclients'))}), server open files "
            f"{lim['server_nofile']['how']} (/proc: {_opt(took.get('nofile'))}), client "
            f"open files {lim['client_nofile']['how']}; rule: >= "
            f"{conc['rule']['min_requests_per_connection']:,} requests per connection after "
            f"a {conc['rule']['warmup_s']} s warm-up")
    return lines


def report_sweep(console: Console, config: SessionConfig, results: list[RunResult]) -> None:
    """A table per swept test with its knee, the limits raised; ``sweep.json`` in the
    session folder."""
    curves = sweep_curves(results)
    for test, points in rate_curves(results).items():
        print_table(console, rate_table(test, points))
    for curve in curves:
        if curve.param == "rate":
            continue  # the rate table above: against the achieved rate, no knee
        print_table(console, curve_table(curve))
        knee = f"{curve.param}={plain(curve.knee.value)}" if curve.knee.value is not None \
            else "none"
        console.print(f"knee of {escape(curve.test)}: {knee} ({escape(curve.knee.reason)})",
                      highlight=False, soft_wrap=True)
    for line in limits_lines(results):
        console.print(escape(line), highlight=False, soft_wrap=True)
    applied = sorted({f"{r.sweep['param']}={r.sweep['value']}: {r.sweep['applied']}"
                      for r in results if r.sweep.get("applied")})
    for line in applied:
        console.print(escape(line), highlight=False, soft_wrap=True)
    (config.results_dir / "sweep.json").write_text(
        json.dumps([c.to_dict() for c in curves], indent=2))


def paced_suites(args: argparse.Namespace, suites: list[Suite]) -> list[Suite]:
    """The selection paced to ``--rate`` (unchanged without it); raises
    :class:`UsageError` naming a suite that cannot be paced."""
    if args.rate is None:
        return suites
    if args.sweep:
        raise UsageError(f"--rate {args.rate:g}", "not with --sweep",
                         "sweep the rate itself: --sweep rate=N1,N2,...")
    if not 0 < args.rate <= rate_sweep.MAX_RATE:
        raise UsageError(f"--rate {args.rate:g}", "must be above 0 and at most "
                         f"{rate_sweep.MAX_RATE:,} requests/s")
    for suite in suites:
        problem = rate_sweep.pacing_problem(suite)
        if problem:
            raise UsageError(f"--rate {args.rate:g}", problem, "select memtier suites")
    try:
        return [rate_sweep.paced_suite(s, args.rate) for s in suites]
    except PacingError as exc:
        raise UsageError(f"--rate {args.rate:g}", str(exc), "offer more, or use fewer "
                         "connections") from None
