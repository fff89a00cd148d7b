"""Results of parallel clients (a suite's ``clientconfigs``, of any tool) merged into one:
rates add up and histograms merge bucket by bucket, so percentiles stay exact."""

from __future__ import annotations

from typing import Any

from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.memtier_json import SINGLE, command_section
from redis_benchmarks_spec.results.tool_result import CommandResult, LatencySummary, ToolResult


def _client_histogram(res: ToolResult, name: str) -> HdrHistogram | None:
    """One client's histogram of ``name``: in memory when this process parsed it, else
    decoded from the result's data (a result read back from disk)."""
    if name in res.histograms:
        return res.histograms[name]  # type: ignore[no-any-return]
    try:
        encoded = res.data[SINGLE][name]["Percentile Latencies"]["Histogram log format"][
            "Compressed Histogram"]
    except (KeyError, TypeError):
        encoded = res.histogram if name == "Totals" else None
    return hdr.decode(encoded) if encoded else None


def _client_sections(res: ToolResult, name: str) -> tuple[CommandResult, HdrHistogram | None]:
    cmd = res.totals if name == "Totals" else res.per_command[name]
    return cmd, _client_histogram(res, name) if cmd.latency.count else None


def _merge_one(parts: list[tuple[CommandResult, HdrHistogram | None]]
               ) -> tuple[CommandResult, HdrHistogram | None]:
    ops = sum(c.ops_per_sec for c, _ in parts)
    if all(h is not None for _, h in parts):
        hist = hdr.merge(h for _, h in parts if h is not None)
        if hist is not None:
            return CommandResult(ops, hdr.summarize(hist)), hist
    return CommandResult(ops, _combine_without_histograms([c.latency for c, _ in parts])), None


def merge_results(results: list[ToolResult]) -> ToolResult:
    """Combine parallel clients (``clientconfigs``) into one result: rates add up, and the
    histograms of each command (and of the totals) merge, so percentiles stay exact."""
    if not results:
        raise ValueError("merge_results needs at least one result")
    if len(results) == 1:
        return results[0]
    names = sorted({n for r in results for n in r.per_command})
    merged: dict[str, tuple[CommandResult, HdrHistogram | None]] = {}
    for name in [*names, "Totals"]:
        merged[name] = _merge_one([_client_sections(r, name) for r in results
                                   if name == "Totals" or name in r.per_command])
    totals, total_hist = merged.pop("Totals")
    encoded = {name: hdr.encode(h) for name, (_, h) in merged.items() if h is not None}
    total_encoded = hdr.encode(total_hist) if total_hist is not None else None
    block: dict[str, Any] = {
        name: command_section({}, res, (hist, encoded[name]) if hist is not None else None)
        for name, (res, hist) in merged.items()}
    block["Totals"] = command_section({}, totals, (total_hist, total_encoded)
                                      if total_hist is not None and total_encoded else None)
    starts = [r.data.get(SINGLE, {}).get("Runtime", {}).get("Start time") for r in results]
    block["Runtime"] = {"Start time": min((s for s in starts if s), default=0)}
    result = ToolResult(tool=",".join(sorted({r.tool for r in results})), totals=totals,
                        per_command={n: res for n, (res, _) in merged.items()},
                        data={SINGLE: block, "clients": [r.data for r in results]},
                        histogram=total_encoded,
                        error_replies=sum(r.error_replies for r in results),
                        runs=max(r.runs for r in results),
                        duration_s=max((r.duration_s or 0.0) for r in results) or None,
                        notes=[n for r in results for n in r.notes])
    result.histograms = {n: h for n, (_, h) in merged.items() if h is not None}
    if total_hist is not None:
        result.histograms["Totals"] = total_hist
    return result


def _combine_without_histograms(parts: list[LatencySummary]) -> LatencySummary:
    """Count-weighted mean and overall min/max; percentiles cannot be combined without
    histograms and are left out (their exporter paths are then reported missing)."""
    count = sum(p.count for p in parts)
    means = [(p.count, p.mean_ms) for p in parts if p.mean_ms is not None and p.count]
    mins = [p.min_ms for p in parts if p.min_ms is not None]
    maxs = [p.max_ms for p in parts if p.max_ms is not None]
    weight = sum(c for c, _ in means)
    return LatencySummary(count=count,
                          mean_ms=sum(c * m for c, m in means) / weight if weight else None,
                          min_ms=min(mins) if mins else None, max_ms=max(maxs) if maxs else None)


