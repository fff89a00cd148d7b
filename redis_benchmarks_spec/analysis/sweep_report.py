"""The sweep section of ``rbs report``: throughput and p50/p99/p99.9 against the swept value
for every swept test in the report's runs, with the knee marked and named."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt

from redis_benchmarks_spec.analysis.plots import to_svg
from redis_benchmarks_spec.analysis.sweep import SWEEP_PERCENTILES, SweepCurve, sweep_curves

if TYPE_CHECKING:
    from redis_benchmarks_spec.analysis.report_data import ReportData

LATENCY_STYLE = {"p50.00": "-o", "p99.00": "-s", "p99.90": "-^"}


def sweep_svg(curve: SweepCurve) -> str:
    """Two panels on a log x axis: ops/sec, and latency percentiles (log y); knee dashed."""
    xs = [p.value for p in curve.points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(8, 2.8))
    left.plot(xs, [p.ops_per_sec for p in curve.points], "-o", color="#1f77b4")
    left.set_ylabel("ops/sec")
    for pct in SWEEP_PERCENTILES:
        pts = [(p.value, p.latency_ms[pct]) for p in curve.points if pct in p.latency_ms]
        if pts:
            right.plot([x for x, _ in pts], [y for _, y in pts], LATENCY_STYLE[pct], label=pct)
    right.set_ylabel("latency (ms)")
    right.set_yscale("log")
    right.legend(fontsize=7)
    for ax in (left, right):
        ax.set_xscale("log")
        ax.set_xlabel(curve.param)
        ax.grid(alpha=0.3)
        if curve.knee.value is not None:
            ax.axvline(curve.knee.value, color="#d62728", ls="--", lw=1)
    return to_svg(fig)


def section_sweeps(data: ReportData, out_dir: Path) -> str:
    """Every swept test of the report's runs; empty when nothing was swept."""
    runs = [r for side in data.sides for group in side.runs.values() for r in group]
    curves = [c for c in sweep_curves(runs) if c.points]
    if not curves:
        return ""
    parts = ['<section id="sweeps"><h2>Sweeps</h2>']
    for curve in curves:
        test, param = html.escape(curve.test), html.escape(curve.param)
        knee = (f"knee at {param}={curve.knee.value:g}" if curve.knee.value is not None
                else "no knee")
        parts.append(f'<h3>{test}: {param}</h3><p class="knee" data-knee="'
                     f'{"" if curve.knee.value is None else f"{curve.knee.value:g}"}">'
                     f'<b>{knee}</b>: {html.escape(curve.knee.reason)}</p>')
        parts.append(f'<figure class="plot" data-plot="sweep" data-test="{test}">'
                     f'{sweep_svg(curve)}</figure>')
    return "\n".join(parts) + "</section>"
