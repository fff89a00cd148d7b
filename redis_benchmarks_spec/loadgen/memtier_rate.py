"""Why the ops/sec rbs stores for a memtier run differs from the Ops/sec memtier printed.

memtier divides by a ``Total duration`` it averages from its threads' clocks, truncating, so
a 2 s run can report 1005 ms and twice the real rate; rbs stores requests / ``--test-time``
(see :mod:`loadgen.memtier_json`), and parallel clients (``clientconfigs``) add up. This
module only puts that into one sentence per run, for the places that show both figures.
"""

from __future__ import annotations

from typing import Any

from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.tool_result import ToolResult

#: differences below this share are rounding, not worth a sentence
TOLERANCE = 0.01


def _printed(data: dict[str, Any]) -> tuple[float, float, str] | None:
    """(memtier's Totals Ops/sec, its Total duration in s, how rbs made its rate)."""
    rbs = data.get("rbs") if isinstance(data, dict) else None
    if not isinstance(rbs, dict):
        return None
    ops = (rbs.get("memtier ALL STATS Totals") or {}).get("Ops/sec")
    if not isinstance(ops, (int, float)) or isinstance(ops, bool):
        return None
    return float(ops), float(rbs.get("memtier Total duration ms") or 0) / 1000, \
        str(rbs.get("ops/sec from", ""))


def rate_note(result: ToolResult) -> str:
    """One sentence when memtier printed an Ops/sec other than the stored one, else ''."""
    clients = result.data.get("clients") if isinstance(result.data, dict) else None
    printed = [_printed(d) for d in (clients if isinstance(clients, list) else [result.data])]
    found = [p for p in printed if p is not None]
    if not found:
        return ""
    total = sum(ops for ops, _, _ in found)
    stored = result.totals.ops_per_sec
    if stored > 0 and abs(total / stored - 1) <= TOLERANCE:
        return ""
    text = f"memtier printed {' + '.join(plain(ops, 6) for ops, _, _ in found)} Ops/sec"
    if any(how == "count / test_time" for _, _, how in found):
        text += f": it divides by its own Total duration{_durations(result, found)}, which it " \
                "truncates when averaging its threads' clocks; rbs stores requests / --test-time"
    if len(found) > 1:
        text += f", summed over the {len(found)} parallel clients"
    return f"{text}: {plain(stored, 6)} ops/sec"


def _durations(result: ToolResult, found: list[tuple[float, float, str]]) -> str:
    """`` (1.005 s for 1 run of 2 s)``, or '' when memtier recorded no duration."""
    if not all(d > 0 for _, d, _ in found) or not result.duration_s:
        return ""
    runs = max(1, result.runs)
    seconds = ", ".join(f"{plain(d, 4)} s" for _, d, _ in found)
    return f" ({seconds} for {runs} run(s) of {plain(result.duration_s / runs)} s)"
