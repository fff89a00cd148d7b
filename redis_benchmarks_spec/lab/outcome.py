"""What a replayed pull request ended with, read back from where the pipeline put it: the
agents' A/B records in the broker (verdict, change, interval and pairs per test and metric)
and the selection the agents recorded. Formatting for ``summary.json`` only."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import Comparison, ComparisonReport
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.pullrequest import ab_record


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, 3)


def _row(row: Comparison, platform: str) -> dict[str, Any]:
    return {"test": row.test, "metric": row.metric, "platform": platform,
            "verdict": row.verdict, "change_pct": _round(row.change_pct),
            "low_pct": _round(row.ci_low_pct), "high_pct": _round(row.ci_high_pct),
            "pairs": min(row.n_baseline, row.n_comparison)}


def test_rows(report: ComparisonReport, platform: str) -> list[dict[str, Any]]:
    """Every row of the platform's report: instructions per op first (when measured), then
    the timed metric."""
    rows = [_row(r, platform) for r in report.instructions.rows] if report.instructions else []
    return rows + [_row(r, platform) for r in report.rows]


def pr_outcome(client: redis.Redis, names: StreamNames, event_ids: list[str],
               platforms: list[str], lab_root: Path) -> dict[str, Any]:
    """``selected``, ``selection_reason``, ``tests`` and ``movers`` of one pull request."""
    tests: list[dict[str, Any]] = []
    notes: list[str] = []
    for event_id in event_ids:
        for platform in platforms:
            record = ab_record.load(client, names, event_id, platform)
            if record is None:
                notes.append(f"{platform}: no A/B record")
                continue
            if record.note:
                notes.append(f"{platform}: {record.note}")
            report = record.comparison()
            if report is not None:
                tests += test_rows(report, platform)
    selected = sorted({t["test"] for t in tests})
    return {"selected": selected, "selection_reason": "; ".join(notes),
            "tests": tests, "movers": []}
