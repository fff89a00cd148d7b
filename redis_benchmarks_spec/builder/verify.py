"""Proof, not trust: an incremental artifact of a kept tree checked against a clean build of
the same commit, function by function.

Two builds of one commit in two folders differ in their build id and the paths they embed,
not in their code, so the check compares each function's size (``nm -S`` of
``redis-server``: every text symbol with its size, duplicates of a static name counted).
A function the incremental build compiled from stale objects or an old dependency (the
hiredis update built over the previous tree: 11 hiredis functions of other sizes) differs.
Each check is appended to the tree's ``checks.jsonl`` (the last :data:`KEEP` of them), which
``rbs lab status`` reads.
"""

from __future__ import annotations

import json
import subprocess
import time
from collections import Counter
from dataclasses import asdict, dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.process import tool_env

CHECKS_FILE = "checks.jsonl"
KEEP = 50
NM_TIMEOUT_S = 120.0
SHOWN = 20  # differing functions named in a record


class CheckError(RuntimeError):
    """The binaries could not be compared (nm failed)."""


@dataclass(frozen=True)
class CheckRecord:
    """One check: the commit, what it was built over, whether the code matched and, if not,
    the functions that differ and the commits built in the tree since its last good check
    (their artifacts are suspect too)."""

    sha: str
    built_over: str
    matched: bool
    differing: list[str] = field(default_factory=list)
    differing_count: int = 0
    suspect: list[str] = field(default_factory=list)
    clean_seconds: float = 0.0  # what the clean build of the check took
    at_ms: int = field(default_factory=lambda: int(time.time() * 1000))

    def describe(self) -> str:
        """One line for logs, notes and ``rbs lab status``."""
        what = f"{self.sha[:12]} built over {self.built_over[:12]}"
        if self.matched:
            return f"{what}: every function matches a clean build"
        shown = ", ".join(self.differing[:5]) + (" ..." if self.differing_count > 5 else "")
        more = f"; also built since the last good check: {', '.join(s[:12] for s in self.suspect)}" \
            if self.suspect else ""
        return (f"{what}: {self.differing_count} function(s) differ from a clean build "
                f"({shown}); tree dropped, the clean build published{more}")


def function_sizes(binary: Path) -> Counter[tuple[str, int]]:
    """``(name, size)`` of every function (text symbol) of ``binary``, with multiplicity."""
    try:
        proc = subprocess.run(["nm", "-S", "--defined-only", str(binary)], capture_output=True,
                              text=True, timeout=NM_TIMEOUT_S, check=False, env=tool_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CheckError(f"nm {binary}: {exc}") from exc
    if proc.returncode != 0:
        raise CheckError(f"nm {binary}: {proc.stderr.strip()[-300:]}")
    out: Counter[tuple[str, int]] = Counter()
    for line in proc.stdout.splitlines():
        parts = line.split()
        if len(parts) == 4 and parts[2] in ("t", "T"):
            out[(parts[3], int(parts[1], 16))] += 1
    return out


def differing_functions(first: Path, second: Path) -> list[str]:
    """The names of the functions whose size (or count) differs between the binaries."""
    a, b = function_sizes(first), function_sizes(second)
    return sorted({name for name, _ in (a - b) + (b - a)})


def record(tree: Path, check: CheckRecord) -> None:
    """Append ``check`` to the tree's record (the last :data:`KEEP` kept)."""
    lines = read(tree)[-(KEEP - 1):] + [check]
    tmp = tree / f".{CHECKS_FILE}.tmp"
    tmp.write_text("".join(json.dumps(asdict(c)) + "\n" for c in lines))
    tmp.replace(tree / CHECKS_FILE)


def read(tree: Path) -> list[CheckRecord]:
    """The tree's checks, oldest first (lines that do not read are skipped)."""
    try:
        text = (tree / CHECKS_FILE).read_text(errors="replace")
    except OSError:
        return []
    out = []
    for line in text.splitlines()[-KEEP:]:
        try:
            raw = json.loads(line)
            out.append(CheckRecord(**{k: raw[k] for k in CheckRecord.__dataclass_fields__
                                      if k in raw}))
        except (ValueError, TypeError, KeyError):
            continue
    return out
