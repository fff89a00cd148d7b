"""``rbs run --sweep clients=1,8,64,512``: parsing and printing only; the runs are
:mod:`runner.sweep`, the curve and its knee :mod:`analysis.sweep`."""

from __future__ import annotations

import argparse
import json

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.sweep import SWEEP_PERCENTILES, SweepCurve, sweep_curves
from redis_benchmarks_spec.cli.console import print_table
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.runner.sweep import FLAGS, Sweep, SweepError, parse_sweep


def add_sweep_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("sweep")
    g.add_argument("--sweep", default=None, metavar="PARAM=V1,V2,...",
                   help=f"run the selection once per value of one client parameter "
                        f"({', '.join(FLAGS)}), e.g. clients=1,8,64,512,4096; prints "
                        f"throughput and latency per value and names the knee")


def check_sweep(args: argparse.Namespace) -> Sweep | None:
    """The parsed --sweep, or None; raises :class:`UsageError` naming the flag."""
    if not args.sweep:
        return None
    if args.baseline_server or args.comparison_server:
        raise UsageError("--sweep", "not available in A/B mode")
    if args.repetitions is not None:
        raise UsageError("--sweep", "runs each value once; drop --repetitions")
    try:
        return parse_sweep(args.sweep)
    except SweepError as exc:
        raise UsageError(f"--sweep {args.sweep}", str(exc)) from None


def _ms(value: float | None) -> str:
    return "–" if value is None else plain(value)


def curve_table(curve: SweepCurve) -> Table:
    # the knee's sentence is printed once, below the table (report_sweep)
    table = Table(title=f"{escape(curve.test)}: {curve.param} sweep")
    for col in (curve.param, "ops/sec", *(f"{p} ms" for p in SWEEP_PERCENTILES), ""):
        table.add_column(col, justify="right")
    for i, point in enumerate(curve.points):
        mark = "<- knee" if curve.knee.index == i else ""
        table.add_row(plain(point.value), f"{point.ops_per_sec:,.0f}",
                      *(_ms(point.latency_ms.get(p)) for p in SWEEP_PERCENTILES), mark)
    return table


def report_sweep(console: Console, config: SessionConfig, results: list[RunResult]) -> None:
    """A table per swept test with its knee; ``sweep.json`` in the session folder."""
    curves = sweep_curves(results)
    for curve in curves:
        print_table(console, curve_table(curve))
        knee = f"{curve.param}={plain(curve.knee.value)}" if curve.knee.value is not None \
            else "none"
        console.print(f"knee of {escape(curve.test)}: {knee} ({escape(curve.knee.reason)})",
                      highlight=False, soft_wrap=True)
    (config.results_dir / "sweep.json").write_text(
        json.dumps([c.to_dict() for c in curves], indent=2))
