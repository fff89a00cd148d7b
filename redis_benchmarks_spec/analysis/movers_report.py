"""The HTML report's "functions that moved" section: for every decided instruction change
(REGRESSION or IMPROVEMENT of instructions per op), the functions whose self instructions
per op moved most, as the terminal lists them after an A/B (``cli.ab_profiles``).

Formatting only: the movers are :mod:`analysis.function_movers`'s, computed from the runs'
per-function files by whoever read them (``ReportData.movers``, filled by
``inputs.profiles.report_movers``).
"""

from __future__ import annotations

import html
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, REGRESSION, ComparisonReport
from redis_benchmarks_spec.analysis.function_movers import FunctionMove
from redis_benchmarks_spec.analysis.report_data import ReportData
from redis_benchmarks_spec.analysis.shown import metric_name
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC

#: the verdicts whose functions are listed: a decided change
DECIDED_CHANGES = (REGRESSION, IMPROVEMENT)



def _esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def instruction_report(report: ComparisonReport | None) -> ComparisonReport | None:
    """The report's instruction verdicts: its own when it judged instructions, else the
    ``instructions`` sub-report (None when the runs counted none)."""
    if report is None:
        return None
    if report.options.metric == INSTRUCTIONS_METRIC:
        return report
    return report.instructions


def decided_instruction_tests(report: ComparisonReport | None) -> list[str]:
    """The tests whose instruction count changed, decided (their functions are listed)."""
    found = instruction_report(report)
    return [r.test for r in found.rows if r.verdict in DECIDED_CHANGES] if found else []


def _table(test: str, verdict: str, moves: list[FunctionMove]) -> str:
    head = ["function", "file", "baseline /op", "comparison /op", "change /op",
            "share of all"]
    rows = "".join(
        f"<tr><td><code>{_esc(m.function)}</code></td><td>{_esc(m.file or '')}</td>"
        f"<td>{m.baseline_per_op:,.1f}</td><td>{m.comparison_per_op:,.1f}</td>"
        f"<td>{m.delta_per_op:+,.1f}</td><td>{m.share_of_total_pct:+.2f}%</td></tr>"
        for m in moves)
    return (f'<section class="movers" data-test="{_esc(test)}"><h3>{_esc(test)} '
            f'<span class="{_esc(verdict)}">{_esc(verdict)}</span></h3>'
            '<table class="movers"><tr>' + "".join(f"<th>{h}</th>" for h in head) +
            f"</tr>{rows}</table></section>")


def section_movers(data: ReportData, out_dir: Path) -> str:
    """A table per decided instruction change: the functions that moved most."""
    found = instruction_report(data.report)
    tests = decided_instruction_tests(data.report)
    if found is None or not tests:
        return ""
    verdicts = {r.test: r.verdict for r in found.rows}
    name = _esc(metric_name(INSTRUCTIONS_METRIC).lower())
    parts = [f"<h2>Functions that moved ({name}, self, median over runs)</h2>"]
    for test in tests:
        moves = data.movers.get(test, [])
        if moves:
            parts.append(_table(test, verdicts[test], moves))
        else:
            parts.append(f'<section class="movers" data-test="{_esc(test)}"><h3>'
                         f'{_esc(test)}</h3><p class="note">no per-function counts in the '
                         "runs' files (profiled without instructions-functions.json)</p>"
                         "</section>")
    return "".join(parts)
