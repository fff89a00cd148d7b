"""The HTML report a pull-request comment links to: one page per build event and platform,
written where ``--reports-dir`` points (served at ``--report-base-url``)."""

from __future__ import annotations

from pathlib import Path

import redis

from redis_benchmarks_spec.analysis import html_report
from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.report_data import ReportData, SideRuns
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.inputs.reports import attach_history
from redis_benchmarks_spec.notify.pr_compare import PlatformComparison, commit_runs
from redis_benchmarks_spec.pullrequest.ab_record import ABRecord
from redis_benchmarks_spec.pullrequest.state import PrInfo, report_name


def write_pr_report(client: redis.Redis, event: BuildEvent, platform: str, info: PrInfo,
                    comparison: PlatformComparison, reports_dir: Path) -> Path:
    """Verdicts, the baseline's points beside the head commit's runs (histograms, flags,
    files), and the base branch's history with the head commit marked."""
    baseline = SideRuns(f"baseline: {comparison.baseline_label}",
                        points={t: b for t, (b, _) in comparison.samples.items()})
    head = SideRuns(f"head {info.head_sha[:10]}", runs=comparison.head_runs)
    data = ReportData(title=f"{info.org}/{info.repo}#{info.number} on {platform} "
                            f"({event.build_variant})", metric=comparison.report.options.metric,
                      sides=[baseline, head], report=comparison.report)
    attach_history(data, client, info.base_ref or "unstable", platform)
    return html_report.write(data, reports_dir / report_name(event.id, platform))


def write_ab_report(client: redis.Redis, event: BuildEvent, platform: str, info: PrInfo,
                    record: ABRecord, reports_dir: Path) -> Path:
    """The agent's interleaved A/B: its verdicts, the stored runs of both commits (each side
    was pushed under its own commit), and the base branch's history."""
    report = ComparisonReport.from_dict(record.report or {})
    tests = [row.test for row in report.rows]
    baseline = SideRuns(f"base {record.base_sha[:10]} (interleaved pairs)",
                        runs=commit_runs(client, event, platform, tests, record.base_sha))
    head = SideRuns(f"head {info.head_sha[:10]} (interleaved pairs)",
                    runs=commit_runs(client, event, platform, tests, event.sha))
    data = ReportData(title=f"{info.org}/{info.repo}#{info.number} on {platform} "
                            f"({event.build_variant}), interleaved A/B",
                      metric=report.options.metric, sides=[baseline, head], report=report)
    attach_history(data, client, info.base_ref or "unstable", platform)
    return html_report.write(data, reports_dir / report_name(event.id, platform))
