"""Terminal display of run results (formatting only; nothing here computes statistics)."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from redis_benchmarks_spec.results.document import STATUS_FAILED, STATUS_OK, RunResult
from redis_benchmarks_spec.results.summary import row


def make_console() -> Console:
    """A console wide enough for result tables even when output is not a terminal."""
    console = Console()
    return console if console.is_terminal else Console(width=200)


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def results_table(results: list[RunResult], title: str = "Results") -> Table:
    table = Table(title=title, show_lines=False)
    for col, justify in (("test", "left"), ("topology", "left"), ("status", "left"),
                         ("ops/sec", "right"), ("p50 ms", "right"), ("p99 ms", "right"),
                         ("p99.9 ms", "right"), ("client cpu %", "right"),
                         ("server cpu %", "right"), ("flags", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for result in results:
        r = row(result)
        style = {STATUS_OK: "green", STATUS_FAILED: "red"}.get(r.status, "yellow")
        table.add_row(r.test_name, r.topology, f"[{style}]{r.status}[/]",
                      _num(r.ops_per_sec, ",.0f"), _num(r.p50_ms, ".3f"),
                      _num(r.p99_ms, ".3f"), _num(r.p999_ms, ".3f"),
                      _num(r.client_cpu_pct, ".0f"), _num(r.server_cpu_pct, ".0f"),
                      r.flags)
    return table


def print_problems(console: Console, results: list[RunResult]) -> None:
    """Failed and skipped tests with their reasons and log tails."""
    for result in results:
        if result.status == STATUS_OK:
            continue
        colour = "red" if result.status == STATUS_FAILED else "yellow"
        console.print(f"[{colour}]{result.status.upper()}[/] {result.test_name}: {result.reason}",
                      highlight=False, soft_wrap=True)
        if result.log_tail:
            console.print(result.log_tail, style="dim", highlight=False, markup=False)


def summary_line(results: list[RunResult]) -> str:
    counts = {s: sum(1 for r in results if r.status == s) for s in ("ok", "failed", "skipped")}
    return (f"{len(results)} test run(s): {counts['ok']} ok, {counts['failed']} failed, "
            f"{counts['skipped']} skipped")
