"""The lab-wide instruction table as a section of the HTML report (``analysis.lab_table``
computes it; this only draws it)."""

from __future__ import annotations

import html
from pathlib import Path

from redis_benchmarks_spec.analysis.lab_table import DOMINANT_PCT, GROUP_TOP, LabTable
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
            + rows + "</table>" + groups_html(table))


def groups_html(table: LabTable) -> str:
    """Per suite group, its top functions by share of the group's instructions (one table,
    a group's name spanning its rows)."""
    if not table.groups:
        return ""
    body = ""
    for name, group in table.groups.items():
        span = max(1, len(group.rows))
        lead = (f'<td rowspan="{span}"><b>{html.escape(name)}</b></td>'
                f'<td rowspan="{span}">{group.suites}</td>')
        # the function cell is not every row's first: align it as the first column is
        cells = [f'<td style="text-align:left"><code>{html.escape(r.function)}</code></td>'
                 f"<td>{r.share_pct:.2f} %"
                 f"</td><td>{r.suites}</td><td>{_pp(r.change_pp)}</td>" for r in group.rows]
        body += "".join(f"<tr>{lead if i == 0 else ''}{c}</tr>"
                        for i, c in enumerate(cells or ["<td colspan=4>no counts</td>"]))
    return (f"<h3>By suite group</h3><p class=\"note\">The top {GROUP_TOP} functions of each "
            f"group (a suite's <code>tested-groups</code>; a suite of two groups counts in "
            f"both; <code>unknown</code>: profiles stored without their groups), by share of "
            f"the group's instructions, and the change {_against(table)}.</p>"
            '<table class="lab-groups"><tr><th>group</th><th>suites</th><th>function</th>'
            "<th>share of the group's instructions</th>"
            f"<th>suites ≥ {DOMINANT_PCT:g} %</th><th>change</th></tr>"
            + body + "</table>")


def _against(table: LabTable) -> str:
    return f"against {html.escape(table.previous[:10])}" if table.previous else \
        "(no previous profiled commit)"


def section_lab_instructions(data: ReportData, out_dir: Path) -> str:
    """The lab-wide table, when the report read one from the datasink."""
    return table_html(data.lab_table) if data.lab_table is not None else ""
