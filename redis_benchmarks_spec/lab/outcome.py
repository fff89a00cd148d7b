"""What a replayed pull request ended with, read back from where the pipeline put it: the
agents' A/B records in the broker (verdict, change, interval and pairs per test and metric)
and the selection the agents recorded. Formatting for ``summary.json`` only."""

from __future__ import annotations

from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import Comparison, ComparisonReport
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.pullrequest import ab_record, selection_record


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
    counted = report.counted
    rows = [_row(r, platform) for r in counted.rows] if counted is not None else []
    return rows + ([] if counted is report else [_row(r, platform) for r in report.rows])


def _movers(record: ab_record.ABRecord, platform: str) -> list[dict[str, Any]]:
    """Flattened: ``change_pct`` is the function's change as a share of the base commit's
    whole instructions per op (a function new in the head has no change of its own)."""
    return [{"test": test, "platform": platform, "function": m["function"],
             "file": m["file"], "before_per_op": m["baseline_per_op"],
             "after_per_op": m["comparison_per_op"], "change_pct": m["share_of_total_pct"]}
            for test, moves in sorted(record.movers.items()) for m in moves]


def pr_outcome(client: redis.Redis, names: StreamNames, event_ids: list[str],
               platforms: list[str]) -> dict[str, Any]:
    """``selected``, ``selection_reason``, ``tests`` and ``movers`` of one pull request."""
    tests: list[dict[str, Any]] = []
    movers: list[dict[str, Any]] = []
    selected: list[str] = []
    reasons: list[str] = []
    for event_id in event_ids:
        for platform in platforms:
            chosen = selection_record.load(client, names, event_id, platform)
            if chosen is not None:
                selected += [s for s in chosen.suites if s not in selected]
                if chosen.reason not in reasons:
                    reasons.append(chosen.reason)
            record = ab_record.load(client, names, event_id, platform)
            report = record.comparison() if record is not None else None
            if record is not None and report is not None:
                tests += test_rows(report, platform)
                movers += _movers(record, platform)
    return {"selected": selected, "selection_reason": " / ".join(reasons) or
            "no selection was recorded (not a pull-request event?)",
            "tests": tests, "movers": movers}
