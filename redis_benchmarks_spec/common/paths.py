"""Paths: made absolute where they enter (:func:`absolute`), and paths built from names that
came from outside (event ids, suite names, shas; :func:`inside`)."""

from __future__ import annotations

import os
import re
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


def absolute(path: str | Path) -> Path:
    """``path`` made absolute against the current folder (``~`` expanded, ``..`` folded,
    symlinks kept): done once where a path enters, so every later ``git -C``, ``cwd=`` or
    child process reads the same file whatever folder it runs in."""
    return Path(os.path.abspath(os.path.expanduser(os.fspath(path))))


def absolute_file(text: str) -> str:
    """A file given as text (a TLS certificate, ...) made absolute; ``""`` stays ``""``."""
    return str(absolute(text)) if text else text


def absolute_program(text: str) -> str:
    """A program given by name (looked up on ``PATH``: kept) or by path (made absolute)."""
    return str(absolute(text)) if "/" in text or text.startswith("~") else text


_URL = re.compile(r"^[A-Za-z][A-Za-z0-9+.-]*://|^[^/@:]+@[^/:]+:")


def absolute_location(text: str) -> str:
    """A git location: a URL (``https://``, ``file://``, ``user@host:path``: kept) or a
    local folder (made absolute)."""
    return text if _URL.match(text) else str(absolute(text))
