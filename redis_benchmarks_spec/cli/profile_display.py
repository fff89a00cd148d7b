"""What ``rbs run --profilers`` prints after the results table: per test, each profiler's
status, the perf-stat counts, the flame graph and instruction counts. Printing only."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import ProfileSummary


def _perf_stat_table(test: str, summary: ProfileSummary) -> Table:
    table = Table(title=f"perf stat: {escape(test)}")
    table.add_column("pid")
    table.add_column("event")
    table.add_column("value", justify="right")
    for pid, counts in summary.data.get("per_process", {}).items():
        for event, value in counts.get("events", {}).items():
            table.add_row(pid, escape(event), f"{value['value']:,.2f} {value.get('unit', '')}")
        for event in counts.get("unsupported", []):
            table.add_row(pid, escape(event), "[dim]not supported[/]")
        for event in counts.get("not_counted", []):
            table.add_row(pid, escape(event), "[dim]not counted[/]")
        if "ipc" in counts:
            table.add_row(pid, "IPC", f"{counts['ipc']:.3f}")
    return table


def _line(test: str, summary: ProfileSummary, paths: dict[str, str]) -> str:
    name = summary.profiler
    if not summary.ok:
        return f"{escape(test)}: {name} {summary.status}: {escape(summary.reason)}"
    if name == "perf-record":
        return f"{escape(test)}: flame graph {escape(paths.get('flamegraph_svg', '?'))}"
    if name == "instructions":
        data = summary.data
        process = data.get("instructions_per_op_process")
        whole = f"; whole process {process:,.1f}" if process and "scope" in data and \
            not str(data["scope"]).startswith("whole") else ""
        scope = f", {data['scope']}" if "scope" in data else ""
        return (f"{escape(test)}: {data.get(INSTRUCTIONS_METRIC, 0):,.1f} instructions per op "
                f"({summary.method}{escape(scope)}, {data.get('ops', 0):,.0f} ops{whole})")
    return f"{escape(test)}: {name} ok"


def print_profiles(console: Console, results: list[RunResult]) -> None:
    """Nothing when no test was profiled."""
    for result in results:
        for summary in result.profiles.values():
            if summary.profiler == "perf-stat" and summary.ok:
                console.print(_perf_stat_table(result.test_name, summary))
            else:
                console.print(_line(result.test_name, summary, result.paths), highlight=False,
                              soft_wrap=True)
