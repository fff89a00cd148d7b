"""Which metrics a report shows, in which order: every metric the runs were judged on (the
report's own and instructions per op), the one with more decided tests first (on a tie,
the kind that takes precedence: ``analysis.policy``), and the verdict metrics measured but
not judged, named so no surface drops them silently. Every
renderer (terminal, Markdown, HTML, the PR comment) orders by :func:`by_decided`.
"""

from __future__ import annotations

from redis_benchmarks_spec.analysis import policy
from redis_benchmarks_spec.analysis.compare import (
    DEFAULT_METRIC,
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.engine import INSTRUCTIONS_METRIC

DECIDED = (REGRESSION, IMPROVEMENT, NO_CHANGE)


def decided(report: ComparisonReport) -> int:
    """How many of the report's tests have a decided verdict."""
    return sum(1 for row in report.rows if row.verdict in DECIDED)


def by_decided(report: ComparisonReport) -> list[ComparisonReport]:
    """Every metric the report judged (its own, and instructions per op when the runs
    counted them), the one with more decided tests first; on a tie the kind that takes
    precedence (``analysis.policy.precedence``: counts), then the report's own."""
    reports = [report, *([report.instructions] if report.instructions is not None else [])]
    return sorted(reports, key=lambda r: (-decided(r), policy.precedence(r.options.metric)))


def metric_name(metric: str) -> str:
    """A metric as a heading names it."""
    if metric == INSTRUCTIONS_METRIC:
        return "Instructions per op"
    if metric == DEFAULT_METRIC:
        return "Throughput"
    return metric


def hidden_note(report: ComparisonReport) -> str:
    """The line saying which measured verdict metrics this report does not show ('' when
    none): a metric left out is said, never silently dropped."""
    notes = []
    if report.hidden:
        notes.append(f"also measured, not shown here: {', '.join(report.hidden)} (judged on "
                     f"{report.options.metric} as asked; --metric {report.hidden[0]} shows "
                     "its verdicts)")
    if report.instrumented:
        notes.append(f"measured under a profiler, not judged: {', '.join(report.instrumented)}"
                     " (a profiler slowed the server: not its speed; runs without "
                     "--profilers judge it)")
    return "; ".join(notes)
