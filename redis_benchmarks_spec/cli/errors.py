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

import os
import signal
import sys
import threading
import time
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
    ``kill``, ``timeout(1)`` send SIGTERM; Python's default ends the process at once).

    An interrupt is never lost in a finalizer. Python runs a signal's handler in whatever
    code runs then, and when that is an object's ``__del__`` (a dropped ``Popen``, an HTTP
    response's ``close``), it prints the KeyboardInterrupt as "Exception ignored in" and goes
    on: ``rbs lab up`` finished its start and exited 0 after a SIGTERM (test_lab, ci20). Here
    such a dropped interrupt is sent again from a thread, so it is raised in the command's
    own code once the finalizer has returned, and at the latest when the block ends."""
    lock = threading.Lock()
    active = [True]
    dropped: list[int] = []  # signals whose interrupt a finalizer dropped
    previous_hook = sys.unraisablehook

    def again(sig: int) -> None:
        # later than this hook's own end: a handler run inside the hook is dropped too
        time.sleep(0.05)
        with lock:
            if active[0]:
                os.kill(os.getpid(), sig)

    def unraisable(what: sys.UnraisableHookArgs) -> None:
        if not isinstance(what.exc_value, KeyboardInterrupt):
            previous_hook(what)
            return
        sig = signal.SIGTERM if str(what.exc_value) == f"signal {int(signal.SIGTERM)}" \
            else signal.SIGINT
        dropped.append(sig)
        threading.Thread(target=again, args=(sig,), name="interrupt-again", daemon=True).start()

    previous = signal.signal(signal.SIGTERM, _raise_interrupt)
    sys.unraisablehook = unraisable
    try:
        yield
        if dropped:  # a dropped interrupt whose second sending has not landed yet
            raise KeyboardInterrupt(f"signal {dropped[0]}")
    finally:
        with lock:
            active[0] = False
        sys.unraisablehook = previous_hook
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
