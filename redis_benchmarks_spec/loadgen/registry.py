"""Which client tools have a driver, where their binaries are, and why a tool is missing.

A driver is one module: a class following :class:`~redis_benchmarks_spec.loadgen.base.
ClientDriver` (argv via ``invocation``, ``parse``, ``version``) and a :class:`DriverEntry`
naming the tool, its binary and the ``rbs run`` flag that overrides the path ("installed?"
is :meth:`DriverEntry.locate`). Adding a tool is writing that module and listing it in
``DRIVER_MODULES``.
"""

from __future__ import annotations

import importlib
import os
from collections.abc import Callable
from dataclasses import dataclass

from redis_benchmarks_spec.common.tools import find_tool
from redis_benchmarks_spec.loadgen.base import ClientDriver

# every module that defines a DRIVER (a DriverEntry)
DRIVER_MODULES = (
    "redis_benchmarks_spec.loadgen.drivers",
    "redis_benchmarks_spec.loadgen.memtier_driver",
)

# tools the performance team's suites name for which no driver exists (none installs here:
# the Go module proxy refuses pubsub-sub-bench, the job-queue benches are not packaged)
NO_DRIVER = {
    "pubsub-sub-bench": "the Redis pub/sub subscriber load generator",
    "bcast-listener": "the client-tracking broadcast listener",
    "sidekiq-bench": "the Sidekiq job-queue benchmark",
    "bullmq-bench": "the BullMQ job-queue benchmark",
    "celery-bench": "the Celery job-queue benchmark",
    "resque-bench": "the Resque job-queue benchmark",
}


@dataclass(frozen=True)
class DriverEntry:
    """One client tool: the name suites use, its binary, and how to build its driver."""

    tool: str  # clientconfig.tool
    binary: str  # looked up on PATH, then in .cache/tools/bin, unless a path is given
    flag: str  # the rbs run option that gives the path
    factory: Callable[[str], ClientDriver]
    install: str = ""  # how to get the tool, said when it is missing

    def locate(self, override: str | None) -> tuple[str | None, str]:
        """(path, '') when installed, else (None, the one-line reason it is not)."""
        path = override or find_tool(self.binary)
        if not path:
            how = f"; {self.install}" if self.install else ""
            return None, f"{self.tool} not found (give {self.flag} or put it on PATH{how})"
        if not os.access(path, os.X_OK) or os.path.isdir(path):
            return None, f"{self.tool} not found: {path} is not an executable file"
        return path, ""


def entries() -> dict[str, DriverEntry]:
    """Every registered driver by tool name."""
    found: dict[str, DriverEntry] = {}
    for name in DRIVER_MODULES:
        entry = importlib.import_module(name).DRIVER
        found[entry.tool] = entry
    return found


def unavailable_reason(tool: str) -> str:
    """Why a tool without a registered driver cannot run (one line naming it)."""
    if tool in NO_DRIVER:
        return f"client tool {tool} ({NO_DRIVER[tool]}) has no driver here and is not " \
               f"installable on this host"
    return f"unknown client tool {tool!r} (no driver)"
