"""Folded stacks (``frame;frame;leaf count``): top symbols, and flame graphs via inferno.

inferno (crates.io, the Rust port of Brendan Gregg's FlameGraph scripts, maintained and
used by cargo-flamegraph) turns ``perf script`` output into folded stacks
(``inferno-collapse-perf``), folded stacks into an SVG (``inferno-flamegraph``) and two
folded files into a differential one (``inferno-diff-folded``). Nothing here draws SVG.
"""

from __future__ import annotations

import subprocess
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import tool_env
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerError
from redis_benchmarks_spec.telemetry.profilers.tools import find_tool

INFERNO_HINT = "scripts/setup.sh installs inferno with cargo into .cache/tools/bin"
TOOL_TIMEOUT_S = 300


@dataclass(frozen=True)
class SymbolShare:
    """A frame's share of all samples: as the leaf (self) and anywhere on the stack (total)."""

    symbol: str
    self_pct: float
    total_pct: float

    def to_dict(self) -> dict[str, object]:
        return {"symbol": self.symbol, "self_pct": round(self.self_pct, 3),
                "total_pct": round(self.total_pct, 3)}


def parse_folded(text: str) -> list[tuple[list[str], int]]:
    """(frames root..leaf, count) per line; malformed lines are skipped."""
    out = []
    for line in text.splitlines():
        stack, _, count = line.rstrip().rpartition(" ")
        if not stack or not count.isdigit():
            continue
        out.append((stack.split(";"), int(count)))
    return out


def top_symbols(stacks: list[tuple[list[str], int]], n: int) -> tuple[list[SymbolShare],
                                                                     list[SymbolShare]]:
    """The ``n`` frames with the largest self share, and the ``n`` with the largest total."""
    total = sum(c for _, c in stacks)
    if total == 0:
        return [], []
    self_counts: Counter[str] = Counter()
    total_counts: Counter[str] = Counter()
    for frames, count in stacks:
        self_counts[frames[-1]] += count
        # [0] is the process; "[unknown]" is an unwinding gap, not a function
        for frame in set(frames[1:] if len(frames) > 1 else frames) - {"[unknown]"}:
            total_counts[frame] += count

    def share(symbol: str) -> SymbolShare:
        return SymbolShare(symbol, 100.0 * self_counts[symbol] / total,
                           100.0 * total_counts[symbol] / total)

    by_self = [share(s) for s, _ in self_counts.most_common(n)]
    by_total = [share(s) for s, _ in total_counts.most_common(n)]
    return by_self, by_total


def _run(argv: list[str], stdin: bytes | None, out_path: Path) -> None:
    try:
        done = subprocess.run(argv, input=stdin, capture_output=True, timeout=TOOL_TIMEOUT_S,
                              check=False, env=tool_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ProfilerError(f"{Path(argv[0]).name}: {exc}") from exc
    if done.returncode != 0:
        err = done.stderr.decode(errors="replace").strip().splitlines()
        raise ProfilerError(f"{Path(argv[0]).name} exited {done.returncode}: "
                            f"{err[-1] if err else 'no output'}")
    out_path.write_bytes(done.stdout)


def _tool(name: str) -> str:
    path = find_tool(name)
    if path is None:
        raise ProfilerError(f"{name} not found ({INFERNO_HINT})")
    return path


def collapse_perf_script(script_output: bytes, folded_path: Path) -> None:
    """``perf script`` text -> folded stacks file."""
    _run([_tool("inferno-collapse-perf"), "--all"], script_output, folded_path)


def flamegraph(folded_path: Path, svg_path: Path, title: str) -> None:
    """An SVG flame graph of a folded-stacks file."""
    _run([_tool("inferno-flamegraph"), "--title", title, str(folded_path)], None, svg_path)


def diff_flamegraph(baseline: Path, comparison: Path, svg_path: Path, title: str) -> None:
    """A differential flame graph: comparison's stacks coloured by change vs baseline."""
    diff_path = svg_path.with_suffix(".diff.folded")
    _run([_tool("inferno-diff-folded"), "--normalize", str(baseline), str(comparison)], None,
         diff_path)
    _run([_tool("inferno-flamegraph"), "--title", title, str(diff_path)], None, svg_path)


def merge_folded(paths: list[Path], out_path: Path) -> None:
    """Several folded files (runs of one side) summed into one."""
    counts: Counter[str] = Counter()
    for path in paths:
        for frames, count in parse_folded(path.read_text(errors="replace")):
            counts[";".join(frames)] += count
    out_path.write_text("".join(f"{stack} {count}\n" for stack, count in sorted(counts.items())))
