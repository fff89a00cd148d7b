"""Where the external profiling tools are: PATH, then the project's own tools folder.

``scripts/setup.sh`` installs inferno (the flame graph generator, from crates.io) into
``.cache/tools/bin`` of the repository; ``$RBS_TOOLS_DIR`` points elsewhere.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

REPO_TOOLS = Path(__file__).resolve().parents[3] / ".cache" / "tools" / "bin"


def tools_dirs() -> list[Path]:
    extra = os.environ.get("RBS_TOOLS_DIR")
    return ([Path(extra)] if extra else []) + [REPO_TOOLS]


def find_tool(name: str) -> str | None:
    """Absolute path of ``name`` on PATH or in the tools folders, else None."""
    found = shutil.which(name)
    if found:
        return found
    for folder in tools_dirs():
        candidate = folder / name
        if candidate.is_file() and os.access(candidate, os.X_OK):
            return str(candidate)
    return None


def missing(names: list[str], hint: str) -> str:
    """'' when every tool is found, else a one-line reason naming the missing ones."""
    absent = [n for n in names if find_tool(n) is None]
    return f"{', '.join(absent)} not found ({hint})" if absent else ""
