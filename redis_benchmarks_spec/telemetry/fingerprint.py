"""A host's performance fingerprint: what, when it changes, moves every timed series at once.

CPU model and microcode, kernel, frequency governor and turbo, transparent huge pages, SMT
and the NUMA layout. A timed metric's noise floor is calibrated under one fingerprint
(``agent.calibration``): a host whose fingerprint changed is calibrated again before its
floors are trusted, and a point taken under another fingerprint than its history's is a
"host changed" note, not a regression. The build variant's compiler is part of the build,
not of the host, and is compared with the build.
"""

from __future__ import annotations

import hashlib
import json
import os
from pathlib import Path

from redis_benchmarks_spec.telemetry.platform_probe import describe

PROC = Path("/proc")
SYS = Path("/sys")
FIELDS = ("cpu_model", "microcode", "kernel", "governor", "turbo", "thp", "smt",
          "numa_nodes")


def _read(path: Path) -> str:
    try:
        return path.read_text().strip()
    except OSError:
        return ""


def _microcode(cpuinfo: str) -> str:
    for line in cpuinfo.splitlines():
        name, _, value = line.partition(":")
        if name.strip() == "microcode":
            return value.strip()
    return ""


def _selected(text: str) -> str:
    """The bracketed choice of a sysfs setting (``always [madvise] never`` -> madvise)."""
    start, end = text.find("["), text.find("]")
    return text[start + 1:end] if 0 <= start < end else text


def host_fingerprint(proc: Path = PROC, sys: Path = SYS) -> dict[str, str]:
    """This host's fingerprint, read now (a fact that cannot be read is ``""``)."""
    facts = describe()
    return {
        "cpu_model": facts.cpu_model or "",
        "microcode": _microcode(_read(proc / "cpuinfo")),
        "kernel": facts.kernel or os.uname().release,
        "governor": facts.governor or "",
        "turbo": facts.turbo or "",
        "thp": _selected(_read(sys / "kernel" / "mm" / "transparent_hugepage" / "enabled")),
        "smt": _read(sys / "devices" / "system" / "cpu" / "smt" / "active"),
        "numa_nodes": str(facts.numa_nodes or ""),
    }


def fingerprint_id(fingerprint: dict[str, str]) -> str:
    """A short stable id of a fingerprint (12 hex digits of its SHA-256)."""
    text = json.dumps({k: fingerprint.get(k, "") for k in FIELDS}, sort_keys=True)
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def changes(old: dict[str, str], new: dict[str, str]) -> list[str]:
    """What differs between two fingerprints, as ``field: old -> new`` lines."""
    return [f"{k}: {old.get(k, '') or '?'} -> {new.get(k, '') or '?'}"
            for k in FIELDS if old.get(k, "") != new.get(k, "")]
