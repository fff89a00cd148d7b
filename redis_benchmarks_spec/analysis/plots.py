"""The report's figures, drawn with matplotlib and returned as inline SVG text.

matplotlib (not a JavaScript library) because its SVG needs nothing at view time: no script,
no CDN, no fonts to fetch; the page opens offline in any browser, is diffable, and one
maintained library draws every figure here (strip plots, log-percentile axis, time axis).
"""

from __future__ import annotations

import io
import math
import re
from collections.abc import Sequence
from datetime import datetime, timezone

import matplotlib

matplotlib.use("Agg")  # no display: figures are only ever written as SVG

import matplotlib.dates as mdates
import matplotlib.pyplot as plt
import numpy as np
from matplotlib.figure import Figure

SIDE_COLOURS = ("#1f77b4", "#d62728", "#2ca02c", "#9467bd")
MAX_NINES = 5  # the spectrum's axis ends at 99.999 %
plt.rcParams.update({"svg.hashsalt": "rbs", "font.size": 9})  # same input -> same SVG


def to_svg(fig: Figure) -> str:
    """The figure as an ``<svg>`` element (the XML prologue dropped, for inlining)."""
    buf = io.StringIO()
    fig.savefig(buf, format="svg", bbox_inches="tight", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    # the RDF metadata block only names namespaces; drop it to keep pages small
    return re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.DOTALL)


def samples_svg(metric: str, sides: Sequence[tuple[str, Sequence[float]]],
                interval: tuple[float, float, float] | None, floor_pct: float) -> str:
    """Each side's samples (jittered dots, median bar) and, beside, the change with its
    interval and the noise floor band; ``interval`` is (change, low, high) in %."""
    fig, axes = plt.subplots(1, 2 if interval else 1, figsize=(7.5 if interval else 4.5, 2.6),
                             gridspec_kw={"width_ratios": [3, 2]} if interval else None,
                             squeeze=False)
    ax = axes[0][0]
    rng = np.random.default_rng(0)
    for i, (name, values) in enumerate(sides):
        xs = i + rng.uniform(-0.12, 0.12, len(values))
        ax.scatter(xs, values, s=14, color=SIDE_COLOURS[i % 4], alpha=0.8, label=name)
        if len(values):
            ax.hlines(float(np.median(values)), i - 0.25, i + 0.25, color="black", lw=1.5)
    ax.set_xticks(range(len(sides)), [f"{n}\n(n={len(v)})" for n, v in sides])
    ax.set_xlim(-0.6, len(sides) - 0.4)
    ax.set_ylabel(_short_metric(metric))
    ax.grid(axis="y", alpha=0.3)
    if interval:
        _interval_axes(axes[0][1], interval, floor_pct)
    return to_svg(fig)


def _interval_axes(ax: plt.Axes, interval: tuple[float, float, float], floor: float) -> None:
    change, low, high = interval
    ax.axvspan(-floor, floor, color="grey", alpha=0.2, label=f"±{floor:g}% noise floor")
    ax.axvline(0, color="black", lw=0.8)
    if math.isfinite(low) and math.isfinite(high):
        ax.errorbar([change], [0], xerr=[[change - low], [high - change]], fmt="o",
                    color=SIDE_COLOURS[1], capsize=5)
        ax.set_xlabel("change % (interval)")
    else:  # an unbounded interval is not drawn as if it had ends
        ax.plot([change], [0], "o", color=SIDE_COLOURS[1])
        ax.set_xlabel("change % (interval unbounded: too few points)")
    ax.set_yticks([])
    ax.legend(loc="upper right", fontsize=7, frameon=False)


def percentile_axis(percentiles: np.ndarray) -> np.ndarray:
    """Percentile -> x on the log scale: 90 -> 1, 99 -> 2, 99.9 -> 3 (nines)."""
    return -np.log10(np.maximum(1.0 - percentiles / 100.0, 10.0 ** -MAX_NINES))


def spectrum_svg(curves: Sequence[tuple[str, np.ndarray, np.ndarray]], source: str) -> str:
    """Latency by percentile on a logarithmic percentile axis, one curve per side;
    ``curves`` are (name, percentiles, latency ms)."""
    fig, ax = plt.subplots(figsize=(7.5, 2.8))
    for i, (name, pcts, ms) in enumerate(curves):
        style = "-" if len(pcts) > 12 else "o-"
        ax.plot(percentile_axis(pcts), ms, style, color=SIDE_COLOURS[i % 4], label=name,
                markersize=4)
    ticks = range(MAX_NINES + 1)
    ax.set_xticks(list(ticks), ["0"] + [f"{100 - 10 ** (2 - n):g}" for n in ticks[1:]])
    ax.set_xlim(0, MAX_NINES)
    ax.set_xlabel(f"percentile ({source})")
    ax.set_ylabel("latency ms")
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False)
    return to_svg(fig)


def history_svg(metric: str, lines: Sequence[tuple[str, Sequence[tuple[int, float]]]],
                markers: Sequence[tuple[str, int]]) -> str:
    """A metric over time (one line per series) with vertical markers for the compared
    commits (label, timestamp ms)."""
    fig, ax = plt.subplots(figsize=(7.5, 2.6))
    for i, (label, pts) in enumerate(lines):
        ax.plot([_dt(t) for t, _ in pts], [v for _, v in pts], "o-", markersize=3,
                color=SIDE_COLOURS[i % 4], label=label)
    for j, (label, ts) in enumerate(markers):
        ax.axvline(_dt(ts), color="black", ls="--" if j % 2 else ":", lw=1)
        ax.annotate(label, (_dt(ts), 1.0), xycoords=("data", "axes fraction"), fontsize=7,
                    rotation=90, va="top", ha="right")
    ax.set_ylabel(_short_metric(metric))
    ax.grid(alpha=0.3)
    ax.legend(fontsize=7, frameon=False, loc="lower left")
    ax.xaxis_date()
    fig.autofmt_xdate()
    return to_svg(fig)


def _dt(ms: int) -> float:
    return float(mdates.date2num(datetime.fromtimestamp(ms / 1000, tz=timezone.utc)))


def _short_metric(metric: str) -> str:
    return re.sub(r"^ALL_STATS\.Totals\.", "", metric)
