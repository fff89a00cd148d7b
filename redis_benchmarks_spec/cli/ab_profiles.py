"""The profiler part of an A/B session's report: throughput and instruction verdicts side by
side, the functions that moved in a changed test, and differential flame graphs.

Printing and file writing only; the statistics are :mod:`analysis.compare`, the movers
:mod:`analysis.function_movers`, the flame graphs :mod:`telemetry.profilers.folded`.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    REGRESSION,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.function_movers import (
    PATH_KEY,
    FunctionMove,
    function_movers,
)
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.results.comparison_key import SEPARATOR, ComparisonKeys
from redis_benchmarks_spec.runner.ab import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.telemetry.profilers import folded
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerError

CHANGED = (REGRESSION, IMPROVEMENT)


@dataclass
class ProfileABReport:
    """Instruction verdicts, movers per changed test, and diff flame graphs per test."""

    instructions: ComparisonReport | None = None
    movers: dict[str, list[FunctionMove]] = field(default_factory=dict)
    diff_flamegraphs: dict[str, str] = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"instructions": self.instructions.to_dict() if self.instructions else None,
                "movers": {t: [m.to_dict() for m in ms] for t, ms in self.movers.items()},
                "diff_flamegraphs": self.diff_flamegraphs, "problems": self.problems}


def _runs_of(runs: list[ABRun], test: str, side: str) -> list[ABRun]:
    """The ok runs of one test (a suite in one topology: its comparison label) on a side."""
    keys = ComparisonKeys.of(r.result for r in runs)
    return [r for r in runs if r.result.ok and keys(r.result) == test and r.side == side]


def _movers(runs: list[ABRun], row: Comparison) -> list[FunctionMove]:
    sides = {s: [read_functions(Path(r.result.paths[PATH_KEY]))
                 for r in _runs_of(runs, row.test, s) if PATH_KEY in r.result.paths]
             for s in (BASELINE, COMPARISON)}
    return function_movers(sides[BASELINE], sides[COMPARISON], row.baseline_median or 0.0)


def _diff_flamegraphs(runs: list[ABRun], out_dir: Path, report: ProfileABReport) -> None:
    keys = ComparisonKeys.of(r.result for r in runs)
    for test in sorted({keys(r.result) for r in runs if r.result.ok}):
        paths = {s: [Path(r.result.paths["perf_folded"]) for r in _runs_of(runs, test, s)
                     if "perf_folded" in r.result.paths] for s in (BASELINE, COMPARISON)}
        if not paths[BASELINE] or not paths[COMPARISON]:
            continue
        folder = out_dir / "diff-flamegraphs"
        folder.mkdir(parents=True, exist_ok=True)
        stem = test.replace(SEPARATOR, "@")  # test names are validated file-name safe
        merged = {s: folder / f"{stem}.{s}.folded" for s in paths}
        try:
            for side, files in paths.items():
                folded.merge_folded(files, merged[side])
            svg = folder / f"{stem}.svg"
            folded.diff_flamegraph(merged[BASELINE], merged[COMPARISON], svg,
                                   f"{test}: comparison vs baseline (red grew, blue shrank)")
        except (OSError, ProfilerError) as exc:
            report.problems.append(f"{test}: differential flame graph: {exc}")
            continue
        report.diff_flamegraphs[test] = str(svg)


def profile_ab_report(runs: list[ABRun], profilers: tuple[str, ...],
                      report: ComparisonReport, out_dir: Path) -> ProfileABReport:
    """The instruction verdicts the engine gave (``report.instructions``: the same table,
    JSON and Markdown carry them), the functions that moved, and the artifacts."""
    extra = ProfileABReport()
    if "instructions" in profilers:
        extra.instructions = report.counted
        for row in report.counted.rows if report.counted else []:
            if row.verdict in CHANGED:
                extra.movers[row.test] = _movers(runs, row)
    if "perf-record" in profilers:
        _diff_flamegraphs(runs, out_dir, extra)
    (out_dir / "profiles-ab.json").write_text(json.dumps(extra.to_dict(), indent=2))
    return extra


def _cell(row: Comparison | None) -> str:
    if row is None:
        return "–"
    change = "–" if row.change_pct is None else f"{row.change_pct:+.2f}%"
    ci = "" if row.ci_low_pct is None or row.ci_high_pct is None else \
        f" [{row.ci_low_pct:+.2f}%, {row.ci_high_pct:+.2f}%]"
    return f"{row.verdict} {change}{ci}"


def print_profile_ab(console: Console, throughput: ComparisonReport,
                     report: ProfileABReport) -> None:
    """Both verdicts per test, then movers and flame graph paths."""
    if report.instructions is not None and report.instructions is throughput:
        # no timed verdict beside it: the timed figures were taken under the profiler
        table = Table(title=f"instructions per op (floor "
                            f"±{throughput.options.noise_floor_pct:g}%)")
        for col in ("test", "instructions per op", "why (instructions)"):
            table.add_column(col)
        for row in throughput.rows:
            table.add_row(escape(row.test), _cell(row), escape(row.reason))
        console.print(table)
    elif report.instructions is not None:
        by_test = {r.test: r for r in report.instructions.rows}
        table = Table(title=f"Throughput ({escape(throughput.options.metric)}, floor "
                            f"±{throughput.options.noise_floor_pct:g}%) and instructions per "
                            f"op (floor ±{report.instructions.options.noise_floor_pct:g}%)")
        for col in ("test", "throughput", "instructions per op", "why (instructions)"):
            table.add_column(col)
        tests = sorted({r.test for r in throughput.rows} | set(by_test))
        thr = {r.test: r for r in throughput.rows}
        for test in tests:
            row = by_test.get(test)
            table.add_row(escape(test), _cell(thr.get(test)), _cell(row),
                          escape(row.reason) if row else "")
        console.print(table)
    for test, moves in report.movers.items():
        console.print(f"[bold]{escape(test)}[/]: functions whose instructions per op moved most",
                      highlight=False)
        for m in moves:
            where = f" ({escape(m.file)})" if m.file else ""
            console.print(f"  {m.delta_per_op:+10.1f}/op ({m.share_of_total_pct:+.2f}% of all) "
                          f"{escape(m.function)}{where}: {m.baseline_per_op:.1f} -> "
                          f"{m.comparison_per_op:.1f}", highlight=False)
    for test, svg in report.diff_flamegraphs.items():
        console.print(f"differential flame graph {escape(test)}: {escape(svg)}", highlight=False)
    for problem in report.problems:
        console.print(f"[yellow]{escape(problem)}[/]", highlight=False)
