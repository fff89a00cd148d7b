"""The open-file limit (RLIMIT_NOFILE) of processes we start, and how far it can be raised.

Thousands of connections need thousands of descriptors in the client tool and the server.
The limit is raised for the processes we start only (util-linux ``prlimit --nofile=N:N --``
before the program, which sets it and then execs it under the same pid), never
system-wide and never for this process. Without CAP_SYS_RESOURCE a process may raise its
soft limit up to its hard limit only; the kernel's ``fs.nr_open`` bounds everyone.
"""

from __future__ import annotations

import resource
import shutil
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

PROC = Path("/proc")
CAP_SYS_RESOURCE = 24  # linux/capability.h
NR_OPEN = Path("/proc/sys/fs/nr_open")
PORT_RANGE = Path("/proc/sys/net/ipv4/ip_local_port_range")


class LimitError(RuntimeError):
    """A limit cannot be raised as far as a run needs; the message says which and why."""


@dataclass(frozen=True)
class NofileGrant:
    """What a process we start gets: the limit it needs, what it will have, what we had."""

    needed: int
    granted: int
    inherited_soft: int
    inherited_hard: int
    how: str  # one line: raised how, or why not further

    @property
    def raised(self) -> bool:
        return self.granted > self.inherited_soft

    @property
    def prlimit(self) -> int | None:
        """The limit to start the process with (None: the inherited one is enough)."""
        return self.granted if self.raised else None

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _has_cap_sys_resource() -> bool:
    try:
        status = (PROC / "self" / "status").read_text()
    except OSError:
        return False
    for line in status.splitlines():
        if line.startswith("CapEff:"):
            return bool(int(line.split()[1], 16) >> CAP_SYS_RESOURCE & 1)
    return False


def _nr_open() -> int:
    try:
        return int(NR_OPEN.read_text().split()[0])
    except (OSError, ValueError, IndexError):
        return 1 << 20  # the kernel's default


def grant_nofile(needed: int) -> NofileGrant:
    """How far the limit of a child can go towards ``needed`` descriptors, and why."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    hard = _nr_open() if hard == resource.RLIM_INFINITY else hard
    if needed <= soft:
        return NofileGrant(needed, soft, soft, hard, f"inherited limit {soft:,} suffices")
    if _has_cap_sys_resource():
        ceiling = min(_nr_open(), max(needed, hard))
        how = (f"raised {soft:,} -> {ceiling:,} with prlimit (CAP_SYS_RESOURCE)"
               if ceiling >= needed else
               f"raised {soft:,} -> {ceiling:,}: the kernel's fs.nr_open stops it there")
        return NofileGrant(needed, ceiling, soft, hard, how)
    granted = min(needed, hard)
    how = (f"raised {soft:,} -> {granted:,} with prlimit (up to the hard limit)"
           if granted >= needed else
           f"raised {soft:,} -> {granted:,}: the hard limit (ulimit -Hn) stops it there, and "
           f"raising that needs CAP_SYS_RESOURCE (root)")
    return NofileGrant(needed, granted, soft, hard, how)


def nofile_prefix(limit: int) -> list[str]:
    """The argv prefix that starts a program with ``limit`` open files (soft and hard)."""
    prlimit = shutil.which("prlimit")
    if prlimit is None:
        raise LimitError("prlimit (util-linux) not found: cannot raise the open-file limit "
                         "of the processes started (apt-get install util-linux)")
    return [prlimit, f"--nofile={limit}:{limit}", "--"]


def process_nofile(pid: int) -> int | None:
    """The soft "Max open files" of a running process, from /proc/PID/limits."""
    try:
        text = (PROC / str(pid) / "limits").read_text()
    except OSError:
        return None
    for line in text.splitlines():
        if line.startswith("Max open files"):
            value = line.split()[3]
            return int(value) if value.isdigit() else None
    return None


def local_port_count() -> int:
    """How many connections one source address can open to one server port (the kernel's
    ephemeral port range, ``net.ipv4.ip_local_port_range``)."""
    try:
        low, high = (int(v) for v in PORT_RANGE.read_text().split()[:2])
    except (OSError, ValueError):
        return 28_232  # Linux's default range, 32768-60999
    return high - low + 1
