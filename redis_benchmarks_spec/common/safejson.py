"""JSON from untrusted bytes with a nesting limit checked before parsing.

``json.loads`` recurses once per nesting level: 100,000 ``[`` raise ``RecursionError`` (a
crash, or a 500 in a web server), and a structure just under the interpreter's limit makes
every later recursive walk fragile. :func:`loads` counts brackets outside strings first
(strings are skipped by one regular expression, so only brackets are visited in Python) and
refuses anything deeper than ``max_depth``.
"""

from __future__ import annotations

import json
import re
from typing import Any

DEFAULT_MAX_DEPTH = 32

# a JSON string literal (escapes included); what is left are the structural characters
_STRING = re.compile(rb'"(?:[^"\\]|\\.)*"', re.DOTALL)
_BRACKET = re.compile(rb"[\[\]{}]")


class JsonTooDeep(ValueError):
    """The document nests deeper than allowed."""


def depth(data: bytes) -> int:
    """The maximum nesting depth of arrays/objects in ``data`` (0 for a scalar)."""
    stripped = _STRING.sub(b'""', data)
    level = deepest = 0
    for match in _BRACKET.finditer(stripped):
        if match.group() in (b"[", b"{"):
            level += 1
            deepest = max(deepest, level)
        else:
            level -= 1
    return deepest


def loads(data: bytes | str, max_depth: int = DEFAULT_MAX_DEPTH) -> Any:
    """``json.loads`` that raises :class:`JsonTooDeep` (a ``ValueError``) past ``max_depth``."""
    raw = data.encode("utf-8") if isinstance(data, str) else bytes(data)
    found = depth(raw)
    if found > max_depth:
        raise JsonTooDeep(f"JSON nests {found} levels deep (limit {max_depth})")
    return json.loads(raw)
