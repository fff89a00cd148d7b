"""The HTML report's platforms section: each side's description and host noise, and the
host-noise flags (:mod:`analysis.host_noise`), beside the results."""

from __future__ import annotations

import html
from pathlib import Path

from redis_benchmarks_spec.analysis.host_noise import NOISE_RULE, host_table
from redis_benchmarks_spec.analysis.report_data import ReportData


def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def section_platforms(data: ReportData, out_dir: Path) -> str:
    """A table with one row per fact and one column per side, the host-noise flags above it
    and the rule under it (the platform caveat is in the header); nothing without platforms."""
    context = data.report.context if data.report else None
    if context is None or not context.hosts:
        return ""
    header, rows = host_table(context.hosts)
    left = ' style="text-align:left"'  # facts are text, not numbers
    head = "".join(f"<th{left}>{_esc(h)}</th>" for h in header)
    body = "".join("<tr>" + "".join(f"<td{left}>{_esc(c)}</td>" for c in row) + "</tr>"
                   for row in rows)
    flags = "".join(f'<p class="noise-flag"><span class="flag">host noise</span>{_esc(f)}</p>'
                    for f in context.noise_flags)
    rule = f'<p class="note">{_esc(NOISE_RULE)}</p>'
    return f'<h2>Platforms</h2>{flags}<table id="platforms"><tr>{head}</tr>{body}</table>{rule}'

