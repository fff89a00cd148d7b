"""One console policy for every command: nothing the user reads is ever cut.

- In a terminal, a table is printed as a table when it fits the width with names, numbers
  and verdicts on one line each (only free-text columns such as "why" wrap); when it does
  not fit, it is printed as one block per row ("records"), so an 80-column pane still shows
  every name and number whole.
- When output is not a terminal (a pipe, a file, a CI log), lines are never wrapped and
  tables are rendered at their natural width, however wide; unless ``COLUMNS`` says how wide
  the reader's screen is (``COLUMNS=100 rbs run ... | less``): then lines and tables fit it
  as they do in a terminal of that width.
"""

from __future__ import annotations

import logging
import os
import sys
from typing import TextIO

from rich.console import Console, RenderableType
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from redis_benchmarks_spec.common.credentials import mask_text

#: width used when output is not a terminal: wide enough that nothing wraps or is cut
UNBOUNDED_WIDTH = 10_000
#: columns whose text may wrap inside the cell (free text, not names or numbers)
WRAPPABLE = frozenset({"why", "reason", "doing", "state", "description", "caption"})


def make_console(stderr: bool = False) -> Console:
    """The console for stdout (or stderr) under the policy above."""
    console = Console(stderr=stderr)
    if console.is_terminal:
        return console
    asked = _columns()
    if asked is not None:
        return Console(stderr=stderr, width=asked)
    return Console(stderr=stderr, width=UNBOUNDED_WIDTH, soft_wrap=False)


def _columns() -> int | None:
    """The width ``COLUMNS`` gives (None when unset or not a positive number)."""
    value = os.environ.get("COLUMNS", "")
    return int(value) if value.isdigit() and int(value) > 0 else None


class CurrentStderrHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A log handler that writes to ``sys.stderr`` as it is when a record is emitted, not
    when the handler was made: while a progress bar is drawn, rich swaps in a stream that
    prints above the bar, so log lines never tear the bar or land inside it."""

    def __init__(self) -> None:
        super().__init__(sys.stderr)

    def format(self, record: logging.LogRecord) -> str:
        """The line with any credential masked (the one masking of common/credentials.py):
        a daemon's log is kept by journald, readable by more than the service user."""
        return mask_text(super().format(record))

    @property  # type: ignore[override]
    def stream(self) -> TextIO:
        return sys.stderr

    @stream.setter
    def stream(self, value: TextIO) -> None:
        """Ignored: the stream is always the current ``sys.stderr``."""


def export_console() -> Console:
    """A console that renders into memory (``export_text``), e.g. for ``--output FILE``."""
    import io
    return Console(record=True, file=io.StringIO(), width=UNBOUNDED_WIDTH)


def print_table(console: Console, table: Table,
                wrappable: frozenset[str] = WRAPPABLE) -> None:
    """Print ``table`` whole: as a table when it fits, else as one block per row."""
    for column in table.columns:
        if _header(column.header) in wrappable:
            column.overflow = "fold"
        else:
            column.no_wrap = True
    if required_width(console, table) <= console.width:
        console.print(table)
    else:
        print_records(console, table)


def required_width(console: Console, table: Table) -> int:
    """Columns needed to show ``table`` with no cell cut: no-wrap columns at their widest
    cell, wrappable ones at their longest word, plus padding and borders."""
    total = 0
    for column in table.columns:
        cells = [column.header, *column.cells]
        sizes = [Measurement.get(console, console.options, c) for c in cells]
        widest = max((m.maximum if column.no_wrap else m.minimum) for m in sizes)
        left, right = table.padding[3], table.padding[1]
        total += widest + left + right
    edges = len(table.columns) + 1 if table.box else 0
    return total + edges


def print_records(console: Console, table: Table) -> None:
    """Each row as a block: the first cell in bold, then ``header: value`` lines."""
    # titles, values and the caption wrap at the console's width (unbounded in a pipe)
    if table.title:
        console.print(table.title, style="bold")
    columns = [(_header(c.header), list(c.cells)) for c in table.columns]
    rows = max((len(cells) for _, cells in columns), default=0)
    for i in range(rows):
        first = _text(columns[0][1][i]) if columns else Text("")
        first.stylize("bold")
        console.print(first)
        for header, cells in columns[1:]:
            value = _text(cells[i])
            if not value.plain:
                continue
            console.print(Text.assemble(f"  {header}: ", value))
    if table.caption:
        console.print(table.caption, style="dim")


def _header(header: RenderableType) -> str:
    return header.plain if isinstance(header, Text) else str(header)


def _text(cell: RenderableType) -> Text:
    if isinstance(cell, Text):
        return cell.copy()
    if isinstance(cell, str):
        return Text.from_markup(cell)
    return Text(str(cell))
