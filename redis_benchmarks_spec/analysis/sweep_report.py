"""The sweep section of ``rbs report``: per swept test, throughput against the swept value
with the knee marked and named, the latency percentiles p50..p99.99 as lines and as a
surface (a heatmap: swept value across, percentile up, latency as colour, each cell
labelled), and for a clients/connections sweep each point's connections, requests per
connection, durations and whether it met the minimum rule, with the limits raised."""

from __future__ import annotations

import html
from pathlib import Path
from typing import TYPE_CHECKING

import matplotlib.pyplot as plt
import numpy as np
from matplotlib.colors import LogNorm

from redis_benchmarks_spec.analysis.plots import to_svg
from redis_benchmarks_spec.analysis.sweep import SWEEP_PERCENTILES, SweepCurve, sweep_curves
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.document import RunResult

if TYPE_CHECKING:
    from redis_benchmarks_spec.analysis.report_data import ReportData

MARKERS = ("o", "s", "P", "^", "v", "D")


def _numeric_axis(curve: SweepCurve) -> bool:
    """A log axis for numbers spread over a decade or more; names keep their order."""
    xs = [p.value for p in curve.points]
    return all(p.label.isdigit() for p in curve.points) and min(xs) > 0 and \
        max(xs) / min(xs) >= 10


def sweep_svg(curve: SweepCurve) -> str:
    """Two panels: ops/sec, and latency percentiles (log y); knee dashed."""
    xs = [p.value for p in curve.points]
    fig, (left, right) = plt.subplots(1, 2, figsize=(9, 3))
    left.plot(xs, [p.ops_per_sec for p in curve.points], "-o", color="#1f77b4")
    left.set_ylabel("ops/sec")
    left.set_title("throughput", fontsize=9)
    for pct, marker in zip(SWEEP_PERCENTILES, MARKERS):
        pts = [(p.value, p.latency_ms[pct]) for p in curve.points if pct in p.latency_ms]
        if pts:
            right.plot([x for x, _ in pts], [y for _, y in pts], f"-{marker}", label=pct,
                       ms=4)
    right.set_ylabel("latency (ms)")
    right.set_yscale("log")
    right.set_title("latency percentiles", fontsize=9)
    right.legend(fontsize=7)
    for ax in (left, right):
        _x_axis(ax, curve)
        if curve.knee.value is not None:
            ax.axvline(curve.knee.value, color="#d62728", ls="--", lw=1, label="knee")
    return to_svg(fig)


def _x_axis(ax: plt.Axes, curve: SweepCurve) -> None:
    if _numeric_axis(curve):
        ax.set_xscale("log")
    ax.set_xticks([p.value for p in curve.points])
    ax.set_xticklabels([p.label or plain(p.value) for p in curve.points], rotation=45,
                       fontsize=7)
    ax.minorticks_off()
    ax.set_xlabel(curve.param)
    ax.grid(alpha=0.3)


def surface_svg(curve: SweepCurve) -> str:
    """The latency surface: one column per point, one row per percentile, log colour."""
    rows = [p for p in SWEEP_PERCENTILES if any(p in pt.latency_ms for pt in curve.points)]
    grid = np.array([[pt.latency_ms.get(p, np.nan) for pt in curve.points] for p in rows])
    fig, ax = plt.subplots(figsize=(max(5.0, 0.9 * len(curve.points) + 2), 2.8))
    finite = grid[np.isfinite(grid) & (grid > 0)]
    norm = LogNorm(vmin=finite.min(), vmax=max(finite.max(), finite.min() * 1.01))
    image = ax.imshow(np.ma.masked_invalid(grid), aspect="auto", origin="lower",
                      cmap="viridis", norm=norm)
    for (i, j), value in np.ndenumerate(grid):
        if np.isfinite(value):
            light = norm(value) < 0.6
            ax.text(j, i, plain(value), ha="center", va="center", fontsize=7,
                    color="white" if light else "black")
    ax.set_yticks(range(len(rows)), [r.replace(".00", "") for r in rows])
    ax.set_xticks(range(len(curve.points)),
                  [p.label or plain(p.value) for p in curve.points], rotation=45, fontsize=7)
    ax.set_xlabel(curve.param)
    ax.set_ylabel("percentile")
    ax.set_title("latency (ms) against " + curve.param, fontsize=9)
    fig.colorbar(image, ax=ax, label="ms")
    return to_svg(fig)


def points_table(curve: SweepCurve) -> str:
    """Each point's connections, requests per connection and durations (concurrency sweeps)."""
    if not any(p.connections is not None for p in curve.points):
        return ""
    head = "".join(f"<th>{h}</th>" for h in (
        html.escape(curve.param), "connections opened", "requests / connection", "measured s",
        "wall s", "ops/sec", "minimum met", "flags"))
    rows = []
    for p in curve.points:
        met = {True: "yes", False: "<b>no</b>", None: "–"}[p.meets_minimum]
        cells = (p.label, _num(p.connections), _num(p.requests_per_connection),
                 _num(p.duration_s), _num(p.wall_s), _num(p.ops_per_sec))
        rows.append("<tr>" + "".join(f"<td>{html.escape(c)}</td>" for c in cells)
                    + f"<td>{met}</td><td>{html.escape(', '.join(p.flags))}</td></tr>")
    return f'<table class="sweep-points"><tr>{head}</tr>{"".join(rows)}</table>'


def _num(value: float | None) -> str:
    return "–" if value is None else plain(value)


def limits_list(runs: list[RunResult], test: str) -> str:
    """What was raised for each point of ``test``, from its results' ``concurrency``."""
    items = []
    for r in sorted((r for r in runs if r.test_name == test and r.concurrency),
                    key=lambda r: r.concurrency["connections"]):
        lim, took = r.concurrency["limits"], r.concurrency["limits"].get("server_took") or {}
        items.append(
            f"<li>{html.escape(r.sweep.get('value', ''))}: server maxclients "
            f"{lim['maxclients']:,} (took {_num(took.get('maxclients'))}); server open files: "
            f"{html.escape(lim['server_nofile']['how'])}; client open files: "
            f"{html.escape(lim['client_nofile']['how'])}</li>")
    if not items:
        return ""
    rule = next(r.concurrency["rule"] for r in runs if r.concurrency)
    return (f'<p class="rule">Each point: a {rule["warmup_s"]} s warm-up at its connection '
            f'count, then at least {rule["min_requests_per_connection"]:,} requests per '
            f'connection (at most {rule["max_point_s"]} s).</p><ul class="limits">'
            + "".join(items) + "</ul>")


def _not_drawn(runs: list[RunResult], test: str) -> str:
    """The swept points of ``test`` that failed, with why (they have no place on a curve)."""
    failed = [r for r in runs if r.test_name == test and r.sweep.get("value") and not r.ok]
    if not failed:
        return ""
    items = "".join(f"<li>{html.escape(r.sweep['param'])}={html.escape(r.sweep['value'])}: "
                    f"{html.escape(r.status)}: {html.escape(r.reason)}</li>" for r in failed)
    return f'<p>Points not drawn:</p><ul class="sweep-failed">{items}</ul>'


def section_sweeps(data: ReportData, out_dir: Path) -> str:
    """Every swept test of the report's runs; empty when nothing was swept."""
    runs = [r for side in data.sides for group in side.runs.values() for r in group]
    runs += [r for side in data.sides for r in side.failed]
    # a rate sweep is drawn against its achieved rate (analysis/rate_curve.py)
    curves = [c for c in sweep_curves(runs) if c.points and c.param != "rate"]
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
        rows = ",".join(p for p in SWEEP_PERCENTILES
                        if any(p in pt.latency_ms for pt in curve.points))
        columns = ",".join(html.escape(p.label or plain(p.value)) for p in curve.points)
        parts.append(f'<figure class="plot" data-plot="sweep-surface" data-test="{test}" '
                     f'data-percentiles="{rows}" data-points="{columns}">'
                     f'{surface_svg(curve)}</figure>')
        parts.append(points_table(curve) + limits_list(runs, curve.test)
                     + _not_drawn(runs, curve.test))
    return "\n".join(parts) + "</section>"
