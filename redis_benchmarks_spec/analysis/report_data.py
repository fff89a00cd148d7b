"""What an HTML report shows: one side's runs, two sides judged, the metric's history. It is
built from runs already in memory (``rbs run --html``, ``rbs compare``) or by :mod:`inputs.reports`
from folders, a saved comparison and the datasink. Nothing here reads, draws or formats.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.function_movers import FunctionMove
from redis_benchmarks_spec.analysis.lab_table import LabTable
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import instrumented, under_profiler

Point = tuple[int, float]


class ReportInputError(ValueError):
    """The folder holds nothing a report can be made of."""


@dataclass
class SideRuns:
    """One side's ok runs per test, and the runs that failed."""

    name: str
    runs: dict[str, list[RunResult]] = field(default_factory=dict)
    failed: list[RunResult] = field(default_factory=list)
    # values known without their documents (datasink points of a baseline branch)
    points: dict[str, list[float]] = field(default_factory=dict)

    def values(self, test: str, metric: str) -> list[float]:
        """``metric`` of the test's runs, without the timed figures of instrumented runs
        (``results.profile.under_profiler``): those are not the server's speed."""
        if test in self.points:
            return list(self.points[test])
        return [r.metrics[metric] for r in self.runs.get(test, [])
                if metric in r.metrics and not under_profiler(r.flags, metric)]

    def speed_runs(self, test: str) -> list[RunResult]:
        """The test's runs whose timed figures are the server's speed (not instrumented)."""
        return [r for r in self.runs.get(test, []) if not instrumented(r.flags)]

    def instrumented_count(self, test: str, metric: str | None = None) -> int:
        """How many of the test's runs were measured under a profiler: their timed figures
        (``metric``'s, when given and timed) are left out of every figure and table."""
        if metric is None:
            return sum(1 for r in self.runs.get(test, []) if instrumented(r.flags))
        return sum(1 for r in self.runs.get(test, [])
                   if metric in r.metrics and under_profiler(r.flags, metric))


@dataclass
class History:
    """A metric's series on a branch per test, and the compared commits' run times."""

    branch: str
    lines: dict[str, list[tuple[str, list[Point]]]] = field(default_factory=dict)
    markers: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    note: str = ""


@dataclass
class ReportData:
    title: str
    metric: str
    sides: list[SideRuns]
    report: ComparisonReport | None = None
    history: History | None = None
    problems: list[str] = field(default_factory=list)
    # the lab-wide instruction table of the branch's last profiled commit (docs/watch.md)
    lab_table: LabTable | None = None
    # per test whose instruction count changed (decided), the functions that moved most
    # (inputs.profiles.report_movers fills it from the runs' per-function files)
    movers: dict[str, list[FunctionMove]] = field(default_factory=dict)

    @property
    def tests(self) -> list[str]:
        rows = [r.test for r in self.report.rows] if self.report else []
        return sorted({t for side in self.sides for t in [*side.runs, *side.points]} | set(rows))


def side_of(name: str, docs: list[RunResult], keys: ComparisonKeys | None = None) -> SideRuns:
    """``keys`` label a suite's topologies apart (by default from ``docs``)."""
    keys = keys or ComparisonKeys.of(docs)
    side = SideRuns(name)
    for doc in docs:
        if doc.ok:
            side.runs.setdefault(keys(doc), []).append(doc)
        else:
            side.failed.append(doc)
    return side


def from_runs(title: str, runs: list[ABRun], report: ComparisonReport,
              labels: tuple[str, str] = (BASELINE, COMPARISON)) -> ReportData:
    """A page of runs already judged (``rbs run --html`` holds both in memory)."""
    keys = ComparisonKeys.of(r.result for r in runs)
    sides = [side_of(label, [r.result for r in runs if r.side == side], keys)
             for side, label in zip((BASELINE, COMPARISON), labels, strict=True)]
    return ReportData(title=title, metric=report.options.metric, sides=sides, report=report,
                      problems=list(report.problems))
