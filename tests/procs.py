"""Descendants of a process, read without racing their exits.

A child can exit between ``children()`` and ``name()``: psutil then raises NoSuchProcess for
that child (CI saw it once, a ``make`` step's short-lived child). Tests that look for a
process by name use these, which skip the ones that are gone.
"""

from __future__ import annotations

import signal
import subprocess
import time

import psutil


def descendants(pid: int) -> list[tuple[psutil.Process, str, list[str]]]:
    """(process, name, argv) of every live descendant of ``pid``; [] when ``pid`` is gone."""
    try:
        kids = psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []
    seen = []
    for kid in kids:
        try:
            seen.append((kid, kid.name(), kid.cmdline()))
        except psutil.NoSuchProcess:
            continue
    return seen


def has_descendant(pid: int, name: str) -> bool:
    return any(n == name for _, n, _ in descendants(pid))


def communicate_or_stacks(proc: subprocess.Popen[str], timeout: float) -> str:
    """``proc``'s output once it exits; when it has not exited within ``timeout``, the test
    fails with where every thread of that ``rbs`` was (``kill -USR1``: faulthandler, set in
    cli/entry.py), then the process is killed."""
    try:
        return proc.communicate(timeout=timeout)[0]
    except subprocess.TimeoutExpired:
        proc.send_signal(signal.SIGUSR1)
        time.sleep(2)
        proc.kill()
        out = proc.communicate(timeout=30)[0]
        raise AssertionError(f"still running {timeout:.0f} s after the signal; its threads "
                             f"and output:\n{out[-6000:]}") from None
