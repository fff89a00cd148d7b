"""The site's history chart: matplotlib SVG, rendered on the server, nothing to fetch.

Each point is a link to its run's page and carries an SVG ``<title>`` naming its commit, so
a browser shows the commit on hover and opens the run on click with no script at all.
Alerts and host boundaries are vertical lines; change points are marked between the points
on either side of them; colours are those of :mod:`analysis.plots`, so a page and a report
draw alike.

matplotlib takes 100-300 ms for one chart here (two draws with a tight bounding box, text
as paths: twice that). So the figure is laid out once with fixed margins, its text is left
as SVG text, and the SVG is kept by the digest of everything it shows
(:data:`CACHE_SIZE` charts): a chart is drawn again only when its points or marks change.
pyplot is not thread-safe and waitress serves with threads, so drawing holds a lock.
"""

from __future__ import annotations

import hashlib
import io
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from datetime import datetime, timezone
from html import escape

import matplotlib.dates as mdates
import matplotlib.pyplot as plt

from redis_benchmarks_spec.analysis.plots import SIDE_COLOURS
from redis_benchmarks_spec.common.metrics import THROUGHPUT_METRIC

CACHE_SIZE = 512
_CACHE: OrderedDict[str, str] = OrderedDict()
_DRAWING = threading.Lock()
_ANCHOR = re.compile(r'<a xlink:href="([^"]*)"[^>]*>')


@dataclass(frozen=True)
class ChartPoint:
    """One point: when, its value, its link and the text shown on hover."""

    ts_ms: int
    value: float
    url: str
    title: str


@dataclass
class Chart:
    """One series' chart: its points and the vertical marks (label, time) drawn over it."""

    label: str
    metric: str
    points: list[ChartPoint] = field(default_factory=list)
    alerts: list[tuple[str, int]] = field(default_factory=list)
    boundaries: list[tuple[str, int]] = field(default_factory=list)
    steps: list[tuple[str, int]] = field(default_factory=list)


def _dt(ms: int) -> float:
    return float(mdates.date2num(datetime.fromtimestamp(ms / 1000, tz=timezone.utc)))


def _marks(ax: plt.Axes, marks: list[tuple[str, int]], colour: str, style: str,
           top: bool = True) -> None:
    """Vertical lines, labelled at the top (or the bottom, so two marks of one commit, an
    alert and its change point, stay readable)."""
    for label, ts in marks:
        ax.axvline(_dt(ts), color=colour, ls=style, lw=1.2)
        ax.annotate(label, (_dt(ts), 1.0 if top else 0.0), xycoords=("data", "axes fraction"),
                    fontsize=7, rotation=90, va="top" if top else "bottom", ha="right",
                    color=colour)


def history_svg(chart: Chart) -> str:
    """The chart as inline ``<svg>``: a line through the points, each point a link with a
    hover title; alerts red, host boundaries grey dashed, change points orange dotted."""
    digest = hashlib.sha256(repr(chart).encode()).hexdigest()
    with _DRAWING:
        svg = _CACHE.get(digest)
        if svg is None:
            svg = _CACHE[digest] = _draw(chart)
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(digest)
    return svg


def warm() -> None:
    """Draw a chart and keep nothing: matplotlib's first figure in a process costs seconds
    (fonts, the SVG backend), which the site pays when it starts, not at a first page."""
    with _DRAWING:
        _draw(Chart("warm", THROUGHPUT_METRIC, [
            ChartPoint(1_700_000_000_000 + i * 60_000, 1.0 + i, "#", f"{i}") for i in range(3)],
            alerts=[("ALERT", 1_700_000_000_000)], steps=[("step", 1_700_000_060_000)]))


def _draw(chart: Chart) -> str:
    with plt.rc_context({"svg.fonttype": "none", "svg.hashsalt": "rbs", "font.size": 9}):
        fig, ax = plt.subplots(figsize=(9, 3))
        fig.subplots_adjust(left=0.09, right=0.98, top=0.9, bottom=0.22)
        return _plotted(fig, ax, chart)


def _plotted(fig: plt.Figure, ax: plt.Axes, chart: Chart) -> str:
    xs = [_dt(p.ts_ms) for p in chart.points]
    ys = [p.value for p in chart.points]
    ax.plot(xs, ys, "-", color=SIDE_COLOURS[0], lw=1, alpha=0.6)
    dots = ax.scatter(xs, ys, s=18, color=SIDE_COLOURS[0], zorder=3)
    dots.set_urls([p.url for p in chart.points])
    _marks(ax, chart.alerts, "#d62728", "-")
    _marks(ax, chart.boundaries, "#7f7f7f", "--")
    _marks(ax, chart.steps, "#ff7f0e", ":", top=False)
    ax.set_ylabel(re.sub(r"^ALL_STATS\.Totals\.", "", chart.metric))
    ax.set_title(chart.label, fontsize=8)
    ax.grid(alpha=0.3)
    ax.xaxis_date()
    fig.autofmt_xdate()
    buf = io.StringIO()
    fig.savefig(buf, format="svg", metadata={"Date": None})
    plt.close(fig)
    text = buf.getvalue()
    # the prologue and the RDF metadata block are not needed inline
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.DOTALL)
    return _with_titles(text, chart.points)


def _with_titles(svg: str, points: list[ChartPoint]) -> str:
    """Each point's ``<a>`` given a ``<title>`` (matplotlib writes the links in the order
    of the points; a title is what a browser shows on hover)."""
    titles = iter(points)

    def add(match: re.Match[str]) -> str:
        point = next(titles, None)
        text = f"<title>{escape(point.title)}</title>" if point is not None else ""
        return f'{match.group(0)}{text}'

    return _ANCHOR.sub(add, svg)
