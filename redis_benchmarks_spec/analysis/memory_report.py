"""The memory section of the HTML report: each test's memory after the preload (and the
used memory after the run) per side, and, for an A/B, the memory verdicts
(``report.memory``, or the report itself for a memory-only session).

Formatting only: the figures are the runs' metrics (:mod:`results.memory`), the verdicts the
engine's.
"""

from __future__ import annotations

import html

import numpy as np

from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.report import change_cell, footnote, label
from redis_benchmarks_spec.analysis.report_data import ReportData
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.memory import AFTER_RUN_SUFFIX, MEMORY_METRICS, USED_MEMORY

_SHOWN = (*MEMORY_METRICS, USED_MEMORY + AFTER_RUN_SUFFIX)


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _median(values: list[float]) -> str:
    if not values:
        return "–"
    value = float(np.median(values))
    return f"{value:,.0f}" if abs(value) >= 1000 else plain(value, 4)


def _figures(data: ReportData) -> str:
    head = "".join(f"<th>{_esc(h)}</th>" for h in ("test", "side", *_SHOWN))
    rows = []
    for test in data.tests:
        for side in data.sides:
            if not side.runs.get(test):
                continue
            cells = [_median(side.values(test, m)) for m in _SHOWN]
            if all(c == "–" for c in cells):
                continue
            rows.append(f"<tr><td>{_esc(test)}</td><td>{_esc(side.name)}</td>"
                        + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    if not rows:
        return ""
    return (f'<table id="memory-figures"><tr>{head}</tr>{"".join(rows)}</table>'
            '<p class="note">Bytes after the preload (INFO memory, MEMORY STATS; a '
            "cluster's primaries summed), medians over runs; used_memory.after_run: after "
            "the load.</p>")


def _verdicts(report: ComparisonReport) -> str:
    head = "".join(f"<th>{h}</th>" for h in ("test: figure", "n b / c", "baseline median",
                                             "comparison median", "change", "95% CI",
                                             "verdict", "why"))
    rows = []
    for row in report.rows:
        ci = ("unbounded" if row.ci_low_pct is None or row.ci_high_pct is None
              else f"[{row.ci_low_pct:+.2f}%, {row.ci_high_pct:+.2f}%]")
        cells = [_esc(label(row)), f"{row.n_baseline} / {row.n_comparison}",
                 _median([row.baseline_median] if row.baseline_median else []),
                 _median([row.comparison_median] if row.comparison_median else []),
                 _esc(change_cell(row)), ci,
                 f'<span class="{_esc(row.verdict)}">{_esc(row.verdict)}</span>',
                 _esc(row.reason)]
        rows.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return (f'<table id="memory-verdicts"><tr>{head}</tr>{"".join(rows)}</table>'
            f'<p class="note">{_esc(footnote(report))}</p>')


def memory_verdicts(data: ReportData) -> ComparisonReport | None:
    """The memory verdicts the page shows: the report's memory table, or the report
    itself when it is one (a memory-only session)."""
    if data.report is None:
        return None
    if data.report.memory is not None:
        return data.report.memory
    if any(r.metric in MEMORY_METRICS for r in data.report.rows):
        return data.report
    return None


def section_memory(data: ReportData, out_dir: object) -> str:
    """The memory section, or nothing when no run measured memory."""
    figures = _figures(data)
    verdicts = memory_verdicts(data)
    if not figures and verdicts is None:
        return ""
    parts = ['<h2 id="memory">Memory</h2>', figures]
    if verdicts is not None and verdicts is not data.report:
        parts.append(_verdicts(verdicts))
    return "".join(parts)
