"""The versions of the dependencies Redis bundles in ``deps/`` (jemalloc, hiredis, Lua), read
from a source tree, so an artifact says what it was built with and a comparison can name a
dependency upgrade ("jemalloc 5.2.1 → 5.3.0").

The tree is pull-request code: every file is read bounded and every value must look like a
version, or the dependency is left out (unknown, never guessed).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path

MAX_READ = 256 * 1024
VERSION = re.compile(r"^[0-9][0-9A-Za-z.+_-]{0,39}$")


def _read(path: Path) -> str:
    try:
        with path.open("rb") as fh:
            return fh.read(MAX_READ).decode(errors="replace")
    except OSError:
        return ""


def _jemalloc(root: Path) -> str:
    # deps/jemalloc/VERSION: "5.3.0-0-g0" (git describe of the release)
    return _read(root / "deps" / "jemalloc" / "VERSION").strip().split("-")[0]


def _hiredis(root: Path) -> str:
    text = _read(root / "deps" / "hiredis" / "hiredis.h")
    parts = [re.search(rf"#define\s+HIREDIS_{p}\s+(\d+)", text) for p in
             ("MAJOR", "MINOR", "PATCH")]
    return ".".join(m.group(1) for m in parts if m) if all(parts) else ""


def _lua(root: Path) -> str:
    found = re.search(r'#define\s+LUA_RELEASE\s+"Lua\s+([^"]+)"',
                      _read(root / "deps" / "lua" / "src" / "lua.h"))
    return found.group(1) if found else ""


READERS: dict[str, Callable[[Path], str]] = {
    "jemalloc": _jemalloc, "hiredis": _hiredis, "lua": _lua}


def bundled_versions(root: Path) -> dict[str, str]:
    """``{"jemalloc": "5.3.0", "hiredis": "1.0.3", "lua": "5.1.5"}`` for a Redis tree; a
    dependency whose version cannot be read is absent."""
    out = {}
    for name, reader in READERS.items():
        version = reader(root)
        if VERSION.match(version):
            out[name] = version
    return out

