"""Where external tools are: PATH, then the project's own tools folder.

``scripts/setup.sh`` builds or installs what no registry serves here (memtier_benchmark from
the vendored source, inferno from crates.io) into ``.cache/tools/bin`` of the repository, so
``rbs`` finds them without PATH changes; ``$RBS_TOOLS_DIR`` names one more folder to look in.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path

from redis_benchmarks_spec.common.paths import absolute

REPO_TOOLS = Path(__file__).resolve().parents[2] / ".cache" / "tools" / "bin"


def tools_dirs() -> list[Path]:
    """The folders searched after PATH, in order."""
    extra = os.environ.get("RBS_TOOLS_DIR")
    return ([absolute(extra)] if extra else []) + [REPO_TOOLS]


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
