"""The lab-wide instruction table as a section of the HTML report (``analysis.lab_table``
computes it; this only draws it)."""

from __future__ import annotations

import html
from pathlib import Path

from redis_benchmarks_spec.analysis.lab_table import DOMINANT_PCT, LabTable
from redis_benchmarks_spec.analysis.report_data import ReportData


def _pp(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f} pp"


def table_html(table: LabTable) -> str:
    """The table of one commit (against the previous profiled commit when there is one)."""
    against = f"against {html.escape(table.previous[:10])}" if table.previous else \
        "no previous profiled commit"
    head = (f"<h2>Where Redis spends its instructions: {html.escape(table.commit[:10])}</h2>"
            f'<p class="note">Self instructions per operation of every function, summed over '
            f"the {table.suites} suites the lab ran with the instructions profiler for this "
            f"commit, as a share of all of their instructions; change in percentage points "
            f"{against} (on the suites both ran). Suites: how many it takes at least "
            f"{DOMINANT_PCT:g} % of.</p>")
    rows = "".join(
        f"<tr><td><code>{html.escape(r.function)}</code></td><td>{html.escape(r.file or '?')}"
        f"</td><td>{r.share_pct:.2f} %</td><td>{r.suites}</td><td>{_pp(r.change_pp)}</td></tr>"
        for r in table.rows)
    return (head + '<table class="lab-instructions"><tr><th>function</th><th>file</th>'
            "<th>share of all instructions</th><th>suites</th><th>change</th></tr>"
            + rows + "</table>")


def section_lab_instructions(data: ReportData, out_dir: Path) -> str:
    """The lab-wide table, when the report read one from the datasink."""
    return table_html(data.lab_table) if data.lab_table is not None else ""
