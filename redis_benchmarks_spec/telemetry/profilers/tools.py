"""Where the external profiling tools are: PATH, then the project's own tools folder.

``scripts/setup.sh`` installs inferno (the flame graph generator, from crates.io) into
``.cache/tools/bin`` of the repository; ``$RBS_TOOLS_DIR`` points elsewhere. The lookup
itself is :mod:`redis_benchmarks_spec.common.tools`, shared with the client drivers.
"""

from __future__ import annotations

from redis_benchmarks_spec.common.tools import find_tool

__all__ = ["find_tool", "missing"]


def missing(names: list[str], hint: str) -> str:
    """'' when every tool is found, else a one-line reason naming the missing ones."""
    absent = [n for n in names if find_tool(n) is None]
    return f"{', '.join(absent)} not found ({hint})" if absent else ""
