"""A run's pictures (its flame graphs) served from the agents' disk, when the site shares it.

A run's document names its artifacts by path (``paths``: ``flamegraph_svg``, callgrind
dumps, ...). Those paths come from the datasink, which whoever can write to it writes: the
site serves one only when it is an SVG file under a folder the operator named
(``rbs site --artifacts-dir``; ``rbs lab up`` names the lab's folder, where its agents write),
after resolving links, and never more than :data:`MAX_BYTES`. An SVG holds scripts (the
flame graphs' zoom is one), so it is served under a sandboxing Content-Security-Policy: its
scripts run in an origin of their own, never the site's.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from pathlib import Path

MAX_BYTES = 32 * 1024 * 1024
_KEY = re.compile(r"^[A-Za-z0-9_.-]{1,100}$")
#: what an SVG artifact's response says about itself (module doc)
HEADERS = {
    "Content-Type": "image/svg+xml",
    "X-Content-Type-Options": "nosniff",
    "Content-Security-Policy": "sandbox allow-scripts; default-src 'none'; "
                               "script-src 'unsafe-inline'; style-src 'unsafe-inline'",
}


def servable(paths: Mapping[str, str], key: str, roots: Sequence[Path]) -> Path | None:
    """The file of ``paths[key]`` when the site may serve it: a key of letters and digits,
    an ``.svg`` regular file of at most :data:`MAX_BYTES` whose real path lies under one of
    ``roots``; else None."""
    if not roots or not _KEY.match(key):
        return None
    named = paths.get(key)
    if not isinstance(named, str) or not named.endswith(".svg") or "\0" in named:
        return None
    try:
        real = Path(named).resolve(strict=True)
        if not real.is_file() or real.stat().st_size > MAX_BYTES:
            return None
    except (OSError, RuntimeError):
        return None
    for root in roots:
        try:
            if real.is_relative_to(root.resolve(strict=True)):
                return real
        except (OSError, RuntimeError):
            continue
    return None


def pictures(paths: Mapping[str, str], roots: Sequence[Path]) -> list[str]:
    """The keys of ``paths`` the site can serve (:func:`servable`), in order."""
    return [key for key in sorted(paths) if servable(paths, key, roots) is not None]
