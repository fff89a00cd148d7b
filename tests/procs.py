"""Descendants of a process, read without racing their exits.

A child can exit between ``children()`` and ``name()``: psutil then raises NoSuchProcess for
that child (CI saw it once, a ``make`` step's short-lived child). Tests that look for a
process by name use these, which skip the ones that are gone.
"""

from __future__ import annotations

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
