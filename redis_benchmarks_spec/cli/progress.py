"""The progress display of ``rbs run`` (A/B included).

In a terminal: a bar with the test running now and its phase (server start, preload,
warm-up, client run, ...; its side and repetition too in A/B),
counts and times; a line per finished test is printed above it. Anywhere else (a pipe, a
CI log) the bar is not drawn and the output is exactly one line per finished test.
"""

from __future__ import annotations

from types import TracebackType

from rich.console import Console
from rich.markup import escape
from rich.progress import (
    BarColumn,
    MofNCompleteColumn,
    Progress,
    TaskID,
    TextColumn,
    TimeElapsedColumn,
    TimeRemainingColumn,
)
from rich.table import Column


class RunProgress:
    """``with RunProgress(console, total) as p: p.started(...); p.finished(...)``."""

    def __init__(self, console: Console, total: int) -> None:
        self.console = console
        self._progress = Progress(
            # the test name folds onto more lines rather than being cut
            TextColumn("{task.description}", table_column=Column(ratio=1, overflow="fold")),
            BarColumn(bar_width=20), MofNCompleteColumn(),
            TimeElapsedColumn(), TextColumn("left"), TimeRemainingColumn(),
            console=console, transient=True)
        self._task: TaskID | None = None
        self._total = total
        self._what = ""

    def __enter__(self) -> RunProgress:  # noqa: PYI034 (final class; py3.10 has no Self)
        self._progress.__enter__()
        self._task = self._progress.add_task("starting", total=self._total)
        return self

    def __exit__(self, kind: type[BaseException] | None, value: BaseException | None,
                 tb: TracebackType | None) -> None:
        self._progress.__exit__(kind, value, tb)

    def started(self, what: str) -> None:
        """Show ``what`` (plain text: the test, its topology, side...) as running now."""
        self._what = what
        self.phase("starting")

    def phase(self, phase: str) -> None:
        """Show what the current test is doing now (``runner.phases`` calls this)."""
        assert self._task is not None
        self._progress.update(self._task,
                              description=f"running {escape(self._what)}: {escape(phase)}")

    def finished(self, line: str) -> None:
        """Print one line (markup) for a finished test and advance the bar."""
        assert self._task is not None
        self._progress.console.print(line, highlight=False, soft_wrap=True)
        self._progress.advance(self._task)
