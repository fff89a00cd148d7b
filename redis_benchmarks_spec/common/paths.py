"""Paths built from names that came from outside (event ids, suite names, shas)."""

from __future__ import annotations

from pathlib import Path


class PathEscape(ValueError):
    """A name would place a path outside the folder it belongs in."""


def inside(base: Path, *names: str) -> Path:
    """``base / name / ...``, refused unless every ``name`` is one plain path component
    (no separator, not ``.``/``..``, not absolute) and the result stays under ``base``."""
    path = base
    for name in names:
        if not name or name in (".", "..") or "/" in name or "\x00" in name:
            raise PathEscape(f"{name!r} is not a plain file name (under {base})")
        path = path / name
    root = base.resolve()
    resolved = path.resolve()
    if resolved != root and root not in resolved.parents:
        raise PathEscape(f"{path} resolves outside {base}")
    return path
