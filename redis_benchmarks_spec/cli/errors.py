"""One error path for every command: what went wrong, where, and what to do about it.

A command raises :class:`UsageError` for anything the user can fix (a flag, a file, a URL,
a server that is down); :func:`redis_benchmarks_spec.cli.main.main` prints it as ONE line on
stderr and exits with :data:`EXIT_USAGE`. Exit codes, documented in docs/running.md:

- 0: done; 1: a test failed, or a REGRESSION with ``--fail-on-regression``;
- 2: usage or input error (nothing was started, or nothing could be measured);
- 3: internal error (a bug: ``-v`` shows the traceback); 4: the host was too busy to
  measure (``rbs bisect``: other processes disturbed the pairs); 130: interrupted.
"""

from __future__ import annotations

import signal
from collections.abc import Iterator
from contextlib import contextmanager
from types import FrameType

EXIT_OK = 0
EXIT_FAILED = 1
EXIT_USAGE = 2
EXIT_INTERNAL = 3
EXIT_BUSY = 4
EXIT_INTERRUPTED = 130


def _raise_interrupt(signum: int, frame: FrameType | None) -> None:
    raise KeyboardInterrupt(f"signal {signum}")


@contextmanager
def sigterm_interrupts() -> Iterator[None]:
    """SIGTERM raises :class:`KeyboardInterrupt` inside the block, as Ctrl-C does, so the
    ``finally`` blocks of a command that started processes stop them (a CI job's timeout,
    ``kill``, ``timeout(1)`` send SIGTERM; Python's default ends the process at once)."""
    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    try:
        yield
    finally:
        signal.signal(signal.SIGTERM, previous)


class UsageError(Exception):
    """A mistake the user can fix. ``what`` names the flag, file or value at fault."""

    def __init__(self, what: str, problem: str, hint: str = "") -> None:
        super().__init__(f"{what}: {problem}" if what else problem)
        self.what = what
        self.problem = problem
        self.hint = hint

    def line(self) -> str:
        """The one line the user sees (without the command prefix)."""
        text = str(self)
        return f"{text} (hint: {self.hint})" if self.hint else text
