"""Splitting command lines the way a POSIX shell does (``shlex.split``), fast.

The team's suites carry init commands by the thousand (one 0.3.47 suite has 100,000):
``shlex.split`` reads them a character at a time and made loading that corpus take about a
minute. A command without quotes or backslashes splits the same way on shlex's whitespace,
so only the others go through shlex.
"""

from __future__ import annotations

import re
import shlex

_SHLEX_SPECIAL = re.compile(r"[\"'\\]")
_SHLEX_WHITESPACE = re.compile(r"[ \t\r\n]+")


def split_words(text: str) -> list[str]:
    """``shlex.split(text)``; raises ``ValueError`` as it does (unbalanced quotes)."""
    if _SHLEX_SPECIAL.search(text):
        return shlex.split(text)
    stripped = text.strip(" \t\r\n")
    return _SHLEX_WHITESPACE.split(stripped) if stripped else []
