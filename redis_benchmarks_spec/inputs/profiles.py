"""Profile artifacts of a run read back for analysis (the per-function instruction counts the
``instructions`` profiler writes beside a result)."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.analysis.function_movers import PATH_KEY, FunctionMove, function_movers
from redis_benchmarks_spec.analysis.movers_report import (
    decided_instruction_tests,
    instruction_report,
)
from redis_benchmarks_spec.analysis.report_data import ReportData


def read_functions(path: Path) -> list[dict[str, Any]]:
    """One run's per-function artifact; a missing or malformed file reads as no functions."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError):
        return []
    return [f for f in data if isinstance(f, dict) and "function" in f] \
        if isinstance(data, list) else []


def report_movers(data: ReportData, top: int = 10) -> dict[str, list[FunctionMove]]:
    """Per decided instruction change of the page, the ``top`` functions that moved most,
    from each side's runs' per-function files (the terminal's movers, for the HTML)."""
    report = instruction_report(data.report)
    if report is None or len(data.sides) != 2:
        return {}
    rows = {r.test: r for r in report.rows}
    out = {}
    for test in decided_instruction_tests(data.report):
        sides = [[read_functions(Path(r.paths[PATH_KEY])) for r in side.runs.get(test, [])
                  if PATH_KEY in r.paths] for side in data.sides]
        out[test] = function_movers(sides[0], sides[1], rows[test].baseline_median or 0.0, top)
    return out
