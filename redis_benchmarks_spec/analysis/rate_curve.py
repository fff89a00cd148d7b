"""The latency-throughput curve of a rate sweep (``rbs run --sweep rate=...``): per test,
each point's offered and achieved rate, p50 / p99 / p99.9 as the tool measured them and
p99 / p99.9 corrected for coordinated omission (``RunResult.rate``, :mod:`loadgen.pacing`),
drawn against the *achieved* throughput, with the first saturated point marked (the
achieved rate fell below 95 % of the offered one: from there on the latency is the server's
at saturation, not at the load asked for).
"""

from __future__ import annotations

import html
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import instrumented

if TYPE_CHECKING:
    from redis_benchmarks_spec.analysis.report_data import ReportData

DRAWN = ("p50.00", "p99.00", "p99.90")
CORRECTED = ("p99.00", "p99.90")


@dataclass(frozen=True)
class RatePoint:
    label: str  # the swept value as given (5000, 10%)
    offered: float
    achieved: float
    saturated: bool
    uncorrected: dict[str, float] = field(default_factory=dict)
    corrected: dict[str, float] = field(default_factory=dict)


def rate_curves(results: Sequence[RunResult]) -> dict[str, list[RatePoint]]:
    """Per test, the paced points of its ok runs, by offered rate (a run measured under a
    profiler is no point: its rate and latency are not the server's speed)."""
    out: dict[str, list[RatePoint]] = {}
    for r in results:
        rate = r.rate
        if not r.ok or not rate or instrumented(r.flags):
            continue
        out.setdefault(r.test_name, []).append(RatePoint(
            r.sweep.get("value", ""), float(rate["offered_rps"]), float(rate["achieved_rps"]),
            bool(rate.get("saturated")), dict(rate.get("latency_ms_uncorrected") or {}),
            dict(rate.get("latency_ms_corrected") or {})))
    return {t: sorted(ps, key=lambda p: p.offered) for t, ps in sorted(out.items())}


def saturation_index(points: Sequence[RatePoint]) -> int | None:
    """The first saturated point, or None."""
    return next((i for i, p in enumerate(points) if p.saturated), None)


def rate_svg(points: Sequence[RatePoint]) -> str:
    """Latency (log) against achieved ops/sec: measured lines solid, corrected dashed."""
    # matplotlib only here: the CLI that imports this module runs without the report extra
    import matplotlib.pyplot as plt

    from redis_benchmarks_spec.analysis.plots import to_svg
    fig, ax = plt.subplots(figsize=(7, 3.2))
    xs = [p.achieved for p in points]
    for pct, marker in zip(DRAWN, ("o", "s", "^")):
        pts = [(p.achieved, p.uncorrected[pct]) for p in points if pct in p.uncorrected]
        if pts:
            ax.plot(*zip(*pts), f"-{marker}", ms=4, label=f"{pct} (measured)")
    for pct in CORRECTED:
        pts = [(p.achieved, p.corrected[pct]) for p in points if pct in p.corrected]
        if pts:
            ax.plot(*zip(*pts), "--", lw=1, label=f"{pct} corrected")
    knee = saturation_index(points)
    if knee is not None:
        ax.axvline(xs[knee], color="#d62728", ls=":", lw=1.2, label="saturated from here")
        for p in points[knee:]:
            if p.saturated and "p99.00" in p.uncorrected:
                ax.plot([p.achieved], [p.uncorrected["p99.00"]], "x", color="#d62728", ms=9)
    ax.set_yscale("log")
    ax.set_xlabel("achieved ops/sec")
    ax.set_ylabel("latency (ms)")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7)
    return to_svg(fig)


def _ms(values: dict[str, float], pct: str) -> str:
    return plain(values[pct]) if pct in values else "–"


def points_table(points: Sequence[RatePoint]) -> str:
    head = ["rate", "offered/s", "achieved/s", "achieved %", "p50 ms", "p99 ms", "p99.9 ms",
            "p99 corrected ms", "p99.9 corrected ms", ""]
    rows = []
    for p in points:
        share = f"{p.achieved / p.offered * 100:.0f}%" if p.offered else "–"
        cells = [html.escape(p.label), f"{p.offered:,.0f}", f"{p.achieved:,.0f}", share,
                 *(_ms(p.uncorrected, q) for q in DRAWN),
                 *(_ms(p.corrected, q) for q in CORRECTED),
                 "saturated" if p.saturated else ""]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return ('<table class="rate-points"><tr>' + "".join(f"<th>{h}</th>" for h in head)
            + "</tr>" + "".join(rows) + "</table>")


_INTRO = ('<section id="rate-curves"><h2>Latency at fixed rates</h2><p class="note">'
          "Measured: the tool's percentiles (it times a request from when it was sent). "
          "Corrected: HdrHistogram's expected-interval correction for coordinated omission "
          "(requests a stalled connection should have sent are counted as waiting).</p>")


def section_rate_curves(data: ReportData, out_dir: Path) -> str:
    """Every paced test of the report's runs; empty when none was paced."""
    runs = [r for side in data.sides for group in side.runs.values() for r in group]
    curves = rate_curves(runs)
    if not curves:
        return ""
    parts = [_INTRO]
    for test, points in curves.items():
        knee = saturation_index(points)
        where = "not saturated at any point" if knee is None else \
            f"saturated from {points[knee].label or plain(points[knee].offered)} " \
            f"(offered {points[knee].offered:,.0f}/s, achieved {points[knee].achieved:,.0f}/s)"
        name = html.escape(test)
        parts.append(f'<h3>{name}</h3><p class="saturation" data-saturated-from='
                     f'"{"" if knee is None else html.escape(points[knee].label)}">'
                     f"{html.escape(where)}</p>")
        parts.append(f'<figure class="plot" data-plot="rate-curve" data-test="{name}">'
                     f"{rate_svg(points)}</figure>{points_table(points)}")
    return "".join(parts) + "</section>"
