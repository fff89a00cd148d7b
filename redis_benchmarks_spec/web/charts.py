"""The site's history chart: matplotlib SVG, rendered on the server, nothing to fetch.

matplotlib draws the chart (the axes, their date and value ticks, the line through the
points, the marks); each point is then written as a small SVG link, ``<a>`` holding a
``<title>`` that names its commit and a ``<circle>`` where matplotlib placed it
(:func:`_points`), so a browser shows the commit on hover and opens the run on click with
no script at all. Alerts and host boundaries are vertical lines; change points are marked
between the points on either side of them; colours are those of :mod:`analysis.plots`, so a
page and a report draw alike.

What a chart costs, and why it is drawn this way (a history page of every platform draws
four, and must answer in 200 ms, docs/site.md "Speed"): a new figure pays ~30 ms before it
draws anything (its axes, their ticks), and a scatter of linked points one SVG element per
point through the backend's style machinery (~25 ms for 500). So one figure and its axes
are made once per process (:func:`warm`, under :data:`_DRAWING`: pyplot's state is not
thread-safe and waitress serves with threads) and each chart replaces the artists of the
previous one; its margins are fixed, its text is left as SVG text, and the SVG is kept by
the digest of everything it shows (:data:`CACHE_SIZE` charts).
"""

from __future__ import annotations

import hashlib
import io
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field
from html import escape

import matplotlib as mpl
import matplotlib.dates as mdates
import numpy as np
from matplotlib.axes import Axes
from matplotlib.figure import Figure
from matplotlib.ticker import MaxNLocator

from redis_benchmarks_spec.analysis.plots import SIDE_COLOURS
from redis_benchmarks_spec.common.metrics import THROUGHPUT_METRIC

CACHE_SIZE = 512
_CACHE: OrderedDict[str, str] = OrderedDict()
_DRAWING = threading.Lock()
_STYLE = {"svg.fonttype": "none", "svg.hashsalt": "rbs", "font.size": 9}
_SIZE_IN = (9.0, 3.0)
_DPI = 72  # the SVG backend's unit: display coordinates are the SVG's own
_POINT_RADIUS = 2.4


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


def _days(ms: list[int]) -> np.ndarray:
    """matplotlib's date numbers of times in ms since the epoch (one numpy conversion)."""
    return np.asarray(mdates.date2num(np.asarray(ms, dtype="datetime64[ms]")), dtype=float)


def _marks(ax: Axes, marks: list[tuple[str, int]], colour: str, style: str,
           top: bool = True) -> None:
    """Vertical lines, labelled at the top (or the bottom, so two marks of one commit, an
    alert and its change point, stay readable)."""
    if not marks:
        return
    where = ax.get_xaxis_transform()  # x in data, y in axes fraction
    for (label, _), x in zip(marks, _days([ts for _, ts in marks]), strict=True):
        ax.axvline(x, color=colour, ls=style, lw=1.2)
        ax.text(x, 1.0 if top else 0.0, label, transform=where, fontsize=7, rotation=90,
                va="top" if top else "bottom", ha="right", color=colour)


def history_svg(chart: Chart) -> str:
    """The chart as inline ``<svg>``: a line through the points, each point a link with a
    hover title; alerts red, host boundaries grey dashed, change points orange dotted."""
    digest = hashlib.sha256(repr(chart).encode()).hexdigest()
    with _DRAWING:
        svg = _CACHE.get(digest)
        if svg is None:
            svg = _CACHE[digest] = _draw(chart, f"dot-{digest[:12]}")
            while len(_CACHE) > CACHE_SIZE:
                _CACHE.popitem(last=False)
        _CACHE.move_to_end(digest)
    return svg


def warm() -> None:
    """Make the figure and draw a chart, keeping nothing: matplotlib's first figure in a
    process costs seconds (fonts, the SVG backend), which the site pays when it starts,
    not at a first page."""
    with _DRAWING:
        _draw(Chart("warm", THROUGHPUT_METRIC, [
            ChartPoint(1_700_000_000_000 + i * 60_000, 1.0 + i, "#", f"{i}") for i in range(3)],
            alerts=[("ALERT", 1_700_000_000_000)], steps=[("step", 1_700_000_060_000)]))


_FRAME: list[tuple[Figure, Axes]] = []  # the one figure, made by the first draw


def _frame() -> tuple[Figure, Axes]:
    """The figure and axes every chart is drawn on (made once; held under ``_DRAWING``)."""
    if not _FRAME:
        with mpl.rc_context(_STYLE):
            fig = Figure(figsize=_SIZE_IN, dpi=_DPI)
            ax = fig.add_axes((0.09, 0.22, 0.89, 0.68))
            locator = mdates.AutoDateLocator(maxticks=8)
            ax.xaxis.set_major_locator(locator)
            ax.xaxis.set_major_formatter(mdates.ConciseDateFormatter(locator))
            ax.yaxis.set_major_locator(MaxNLocator(6))
            ax.yaxis.set_label_coords(-0.075, 0.5)  # placed, not measured off the ticks
            ax.grid(alpha=0.3)
        _FRAME.append((fig, ax))
    return _FRAME[0]


def _draw(chart: Chart, dot: str = "dot") -> str:
    fig, ax = _frame()
    with mpl.rc_context(_STYLE):
        for artist in [*ax.lines, *ax.texts]:  # the previous chart's
            artist.remove()
        xs = _days([p.ts_ms for p in chart.points])
        ys = np.asarray([p.value for p in chart.points], dtype=float)
        ax.plot(xs, ys, "-", color=SIDE_COLOURS[0], lw=1, alpha=0.6)
        _marks(ax, chart.alerts, "#d62728", "-")
        _marks(ax, chart.boundaries, "#7f7f7f", "--")
        _marks(ax, chart.steps, "#ff7f0e", ":", top=False)
        ax.relim()
        ax.autoscale_view()
        ax.set_ylabel(re.sub(r"^ALL_STATS\.Totals\.", "", chart.metric))
        ax.set_title(chart.label, fontsize=8, y=1.0, pad=4)  # placed, not measured
        buf = io.StringIO()
        fig.savefig(buf, format="svg", metadata={"Date": None})
        at = ax.transData.transform(np.column_stack([xs, ys])) if len(xs) else np.empty((0, 2))
    text = buf.getvalue()
    # the prologue and the RDF metadata block are not needed inline
    text = re.sub(r"<metadata>.*?</metadata>", "", text[text.index("<svg"):], flags=re.DOTALL)
    end = text.rindex("</svg>")
    return text[:end] + _points(chart.points, at, _SIZE_IN[1] * _DPI, dot) + text[end:]


def _points(points: list[ChartPoint], at: np.ndarray, height: float, dot: str) -> str:
    """Each point as a link to its run holding its hover title and its dot (a ``<use>`` of
    one circle, as matplotlib writes markers), at the place matplotlib drew the line
    through it (display coordinates, y measured from the top); ``dot`` is the circle's id,
    one per chart's content, so the charts of one page do not share it."""
    dots = "".join(
        f'<a xlink:href="{escape(p.url)}"><title>{escape(p.title)}</title>'
        f'<use xlink:href="#{dot}" x="{x:.2f}" y="{height - y:.2f}"/></a>'
        for p, (x, y) in zip(points, at.tolist(), strict=True))
    return (f'<defs><circle id="{dot}" r="{_POINT_RADIUS}"/></defs>'
            f'<g class="points" fill="{SIDE_COLOURS[0]}">{dots}</g>')
