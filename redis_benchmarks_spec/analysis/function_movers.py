"""Which functions' instruction counts moved between two sides of an A/B session.

Input: per side, the per-function counts each run of a test wrote
(``instructions-functions.json``, see telemetry/profilers/instructions.py). Per function
and side, the median over runs of instructions per operation (a run where a function is
below the artifact's floor counts it as 0); the movers are the functions with the largest
absolute change per operation, with the change as a share of the baseline's whole count.
Nothing here prints.
"""

from __future__ import annotations

import statistics
from dataclasses import dataclass
from typing import Any

PATH_KEY = "instructions_functions"


@dataclass(frozen=True)
class FunctionMove:
    """One function's self instructions per op on each side (medians over runs)."""

    function: str
    file: str | None
    baseline_per_op: float
    comparison_per_op: float
    share_of_total_pct: float  # the change, as % of the baseline's instructions per op

    @property
    def delta_per_op(self) -> float:
        return self.comparison_per_op - self.baseline_per_op

    def to_dict(self) -> dict[str, Any]:
        return {"function": self.function, "file": self.file,
                "baseline_per_op": round(self.baseline_per_op, 2),
                "comparison_per_op": round(self.comparison_per_op, 2),
                "delta_per_op": round(self.delta_per_op, 2),
                "share_of_total_pct": round(self.share_of_total_pct, 3)}


def _medians(runs: list[list[dict[str, Any]]]) -> tuple[dict[str, float], dict[str, str | None]]:
    names = {f["function"] for run in runs for f in run}
    files: dict[str, str | None] = {}
    per_run = []
    for run in runs:
        per_run.append({f["function"]: float(f.get("self_per_op", 0.0)) for f in run})
        for f in run:
            files.setdefault(f["function"], f.get("file"))
    medians = {n: statistics.median(r.get(n, 0.0) for r in per_run) for n in names}
    return medians, files


def function_movers(baseline: list[list[dict[str, Any]]], comparison: list[list[dict[str, Any]]],
                    baseline_per_op: float, top: int = 10) -> list[FunctionMove]:
    """The ``top`` functions whose self instructions per op changed most, largest first."""
    if not baseline or not comparison or baseline_per_op <= 0:
        return []
    base, base_files = _medians(baseline)
    comp, comp_files = _medians(comparison)
    moves = [FunctionMove(n, base_files.get(n) or comp_files.get(n), base.get(n, 0.0),
                          comp.get(n, 0.0),
                          100.0 * (comp.get(n, 0.0) - base.get(n, 0.0)) / baseline_per_op)
             for n in set(base) | set(comp)]
    moves = [m for m in moves if m.delta_per_op != 0.0]
    return sorted(moves, key=lambda m: -abs(m.delta_per_op))[:top]
