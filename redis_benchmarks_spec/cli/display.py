"""Display of run results (formatting only; nothing here computes statistics).

Terminal tables follow the console policy of :mod:`redis_benchmarks_spec.cli.console`;
``--format json|csv|markdown`` renders the same rows as a document for scripts.
"""

from __future__ import annotations

import csv
import io
import json
import re
from collections import Counter
from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.loadgen.memtier_rate import rate_note
from redis_benchmarks_spec.results.document import (
    STATUS_FAILED,
    STATUS_OK,
    STATUS_SKIPPED,
    RunResult,
)
from redis_benchmarks_spec.results.profile import INSTRUMENTED_NOTE, PROFILED, instrumented
from redis_benchmarks_spec.results.summary import CSV_COLUMNS, Row, row

__all__ = [
    "finished_line",
    "instrumented_note",
    "make_console",
    "print_problems",
    "print_rate_notes",
    "render_results",
    "results_table",
    "summary_line",
]

RUN_FORMATS = ("table", "json", "csv", "markdown")
STATUS_STYLE = {STATUS_OK: "green", STATUS_FAILED: "red"}


def _num(value: float | None, fmt: str) -> str:
    return "-" if value is None else format(value, fmt)


def _columns(rows: list[Row]) -> list[tuple[str, str, str]]:
    """(header, Row attribute, format) shown for these rows: a latency column only when
    some tool measured it (redis-benchmark has p95 and max, memtier p99.9)."""
    cols = [("offered/sec", "offered_rps", ",.0f"),
            ("ops/sec", "ops_per_sec", ",.0f"), ("p50 ms", "p50_ms", ".3f"),
            ("p95 ms", "p95_ms", ".3f"), ("p99 ms", "p99_ms", ".3f"),
            ("p99 corrected ms", "p99_corrected_ms", ".3f"),
            ("p99.9 ms", "p999_ms", ".3f"),
            ("p99.9 corrected ms", "p999_corrected_ms", ".3f"), ("max ms", "max_ms", ".3f")]
    always = {"ops_per_sec", "p50_ms", "p99_ms"}
    if rows and all(r.ops_per_sec is None and r.used_memory is not None for r in rows):
        return _MEMORY_COLUMNS  # rbs run --memory-only: no load ran
    cols = [c for c in cols if c[1] in always or any(getattr(r, c[1]) is not None for r in rows)]
    return cols + [("client cpu %", "client_cpu_pct", ".0f"),
                   ("server cpu %", "server_cpu_pct", ".0f")]


_MEMORY_COLUMNS = [("used_memory", "used_memory", ",.0f"),
                   ("dataset", "used_memory_dataset", ",.0f"),
                   ("overhead", "used_memory_overhead", ",.0f"),
                   ("bytes/key", "bytes_per_key", ",.1f"),
                   ("allocator frag", "allocator_frag_ratio", ".3f")]


def _which(rows: list[Row]) -> list[tuple[str, Callable[[Row], str]]]:
    """Columns that tell runs of one test and topology apart: the repetition of
    ``--repetitions`` and the swept value of ``--sweep`` (headed by its parameter)."""
    cols: list[tuple[str, Callable[[Row], str]]] = []
    if any(r.repetition is not None for r in rows):
        cols.append(("rep", lambda r: "" if r.repetition is None else str(r.repetition)))
    params = sorted({r.sweep_param for r in rows if r.sweep_param})
    if params:
        cols.append(("/".join(params), lambda r: r.sweep_value))
    return cols


def instrumented_note(results: list[RunResult]) -> str:
    """What the rows of runs measured under a profiler leave out, and why ('' when none)."""
    if not any(instrumented(r.flags) for r in results if r.ok):
        return ""
    return (f"{PROFILED}: throughput and latency not shown, the run(s) {INSTRUMENTED_NOTE} "
            "(the result documents keep them)")


def results_table(results: list[RunResult], title: str = "Results") -> Table:
    """The result table of a session (print it with ``console.print_table``)."""
    rows = [row(r) for r in results]
    numbers, which = _columns(rows), _which(rows)
    note = instrumented_note(results)
    table = Table(title=escape(title), show_lines=False, caption=escape(note) or None,
                  caption_justify="left")
    for col in ("test", "topology"):
        table.add_column(col)
    for header, _ in which:
        table.add_column(escape(header), justify="right")
    table.add_column("status")
    for header, _, _ in numbers:
        table.add_column(header, justify="right")
    table.add_column("flags")
    for r in rows:
        style = STATUS_STYLE.get(r.status, "yellow")
        table.add_row(escape(r.test_name), escape(r.topology),
                      *(escape(cell(r)) for _, cell in which), f"[{style}]{r.status}[/]",
                      *(_num(getattr(r, attr), fmt) for _, attr, fmt in numbers),
                      escape(r.flags))
    return table


def render_results(results: list[RunResult], fmt: str) -> str:
    """The session's rows as JSON, CSV or GitHub Markdown (the summary files' columns)."""
    rows = [row(r) for r in results]
    if fmt == "json":
        return json.dumps([r.__dict__ for r in rows], indent=2)
    if fmt == "csv":
        out = io.StringIO()
        writer = csv.DictWriter(out, fieldnames=CSV_COLUMNS, lineterminator="\n")
        writer.writeheader()
        for r in rows:
            writer.writerow(r.__dict__)
        return out.getvalue().rstrip("\n")
    if fmt == "markdown":
        numbers, which = _columns(rows), _which(rows)
        header = ["test", "topology", *(h for h, _ in which), "status",
                  *(h for h, _, _ in numbers), "flags"]
        lines = ["| " + " | ".join(header) + " |", "|" + "---|" * len(header)]
        for r in rows:
            cells = [r.test_name, r.topology, *(cell(r) for _, cell in which), r.status,
                     *(_num(getattr(r, attr), f) for _, attr, f in numbers), r.flags]
            lines.append("| " + " | ".join(c.replace("|", "\\|") for c in cells) + " |")
        note = instrumented_note(results)
        return "\n".join(lines + (["", f"> {note}"] if note else []))
    raise ValueError(f"unknown format {fmt!r} (one of {', '.join(RUN_FORMATS)})")


def finished_line(result: RunResult) -> str:
    """One line per finished test (markup): status, name, topology, ops/sec, reason."""
    r = row(result)
    style = STATUS_STYLE.get(r.status, "yellow")
    ops = f" {r.ops_per_sec:,.0f} ops/sec" if r.ops_per_sec is not None else \
        f" ({PROFILED}: no speed measured)" if result.ok and instrumented(result.flags) else ""
    why = f": {escape(r.reason)}" if r.reason and r.status != STATUS_OK else ""
    which = "".join(f" {escape(h)} {escape(cell(r))}" for h, cell in _which([r]))
    return (f"[{style}]{r.status:>7}[/] {escape(r.test_name)} {escape(f'[{r.topology}]')}"
            f"{which}{ops}{why}")


def print_problems(console: Console, results: list[RunResult]) -> None:
    """Failed and skipped tests with their reasons and log tails."""
    for result in results:
        if result.status == STATUS_OK:
            continue
        colour = "red" if result.status == STATUS_FAILED else "yellow"
        console.print(f"[{colour}]{result.status.upper()}[/] {escape(result.test_name)}: "
                      f"{escape(result.reason)}", highlight=False, soft_wrap=True)
        if result.log_tail:
            console.print(result.log_tail, style="dim", highlight=False, markup=False)


def print_rate_notes(console: Console, results: list[RunResult]) -> None:
    """A line per run whose stored ops/sec differs from what its tool printed, saying why."""
    for result in results:
        note = rate_note(result.result) if result.ok and result.result else ""
        if note:
            label = f"{result.test_name} [{result.context.topology}]"
            console.print(f"[dim]{escape(label)}: {escape(note)}[/]", highlight=False,
                          soft_wrap=True)


def summary_line(results: list[RunResult]) -> str:
    counts = {s: sum(1 for r in results if r.status == s) for s in ("ok", "failed", "skipped")}
    line = (f"{len(results)} test run(s): {counts['ok']} ok, {counts['failed']} failed, "
            f"{counts['skipped']} skipped")
    missing = Counter(_missing_tool(r.reason) for r in results if r.status == STATUS_SKIPPED)
    missing.pop("", None)
    if missing:
        line += " (" + ", ".join(f"{n} for lack of {tool}" for tool, n in
                                 sorted(missing.items())) + ")"
    return line


def _missing_tool(reason: str) -> str:
    """The tool a skip reason names as missing ('' when it is another reason)."""
    match = re.match(r"(?:preload: )?(?:client tool (\S+) \(|(\S+) not found)", reason)
    return (match.group(1) or match.group(2)) if match else ""
