"""memtier_benchmark's ``--json-out-file``: parsed once into a result with exact numbers.

What memtier 2.x writes (checked against ``../shared/samples/memtier`` and memtier's
``run_stats.cpp``), and what is done about it:

- One run: an ``ALL STATS`` block. ``--run-count N``: ``BEST RUN RESULTS`` and ``WORST RUN
  RESULTS`` (copies of single runs, chosen by the unreliable Ops/sec below; both were run #1
  in the samples), ``AGGREGATED AVERAGE RESULTS (N runs)`` and, with ``--print-all-runs``,
  ``RUN #n RESULTS``.
- In the AGGREGATED block the per-command histograms hold every run's requests (memtier
  ``hdr_add``\\ s them), but the Totals histogram is empty (memtier never adds the runs' totals
  into it: its p50 prints as 0.007 and ``Accumulated Latency`` as 0) although Totals.Count is
  the sum; its ``Average Latency`` is the mean of the runs' means, not the count-weighted mean.
  So latency is taken from the ``RUN #n`` per-command histograms when they are printed, else
  from the AGGREGATED per-command histograms, and Totals is their merge.
- ``Totals.Latency`` / ``"Average Latency"`` are truncated to whole milliseconds: the mean
  comes from the decoded histogram instead.
- ``Runtime."Total duration"``, and so every ``Ops/sec``, is off by up to a second with
  several threads (memtier averages the threads' start/end ``timeval``\\ s field by field,
  truncating): a 2 s run reported 1000, 2001 and 3002 ms while its per-second series shows two
  full seconds. For a ``--test-time`` run that was not interrupted, ops/sec is therefore
  ``Count / test_time``; otherwise memtier's own Ops/sec is used.

``ToolResult.data`` is memtier's JSON with one ``ALL STATS`` block (created for multi-run
files) holding those exact numbers, every percentile recomputed from the histogram and the
merged histograms, so the suites' ``$."ALL STATS"...`` exporter paths read exact values.
memtier's original Totals fields are kept under ``data["rbs"]["memtier ALL STATS Totals"]``,
and the password memtier echoes in ``configuration.authenticate`` is redacted.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.result import ToolOutputError
from redis_benchmarks_spec.results.tool_result import CommandResult, LatencySummary, ToolResult

TOOL = "memtier_benchmark"
SINGLE = "ALL STATS"
AGGREGATED = re.compile(r"^AGGREGATED AVERAGE RESULTS \((\d+) runs?\)$")
RUN = re.compile(r"^RUN #(\d+) RESULTS$")
REDACTED = "<redacted>"


@dataclass
class _Command:
    """One command type across the blocks being combined."""

    count: int = 0
    memtier_ops: list[float] = field(default_factory=list)
    histograms: list[HdrHistogram] = field(default_factory=list)


def load_json(path: Path) -> dict[str, Any]:
    """The JSON object memtier wrote (read once: the audit and the parse share it)."""
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ToolOutputError(f"{path}: cannot read memtier JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ToolOutputError(f"{path}: memtier JSON is not an object")
    return data


def _result_blocks(data: dict[str, Any], path: Path) -> tuple[list[str], int]:
    """The blocks whose histograms are combined, and the number of runs they cover."""
    if SINGLE in data:
        return [SINGLE], 1
    runs = sorted((k for k in data if RUN.match(k)), key=_run_number)
    if runs:
        return runs, len(runs)
    for key in data:
        match = AGGREGATED.match(key)
        if match:
            return [key], int(match.group(1))
    raise ToolOutputError(f"{path}: no 'ALL STATS', 'RUN #n RESULTS' or 'AGGREGATED AVERAGE "
                          f"RESULTS' block (found: {', '.join(data) or 'nothing'})")


def _run_number(block: str) -> int:
    match = RUN.match(block)
    return int(match.group(1)) if match else 0


def _number(section: dict[str, Any], key: str, where: str) -> float:
    value = section.get(key)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise ToolOutputError(f"{where}.{key}: expected a number, got {value!r}")
    return float(value)


def _histogram(section: dict[str, Any], where: str) -> HdrHistogram | None:
    try:
        encoded = section["Percentile Latencies"]["Histogram log format"]["Compressed Histogram"]
    except (KeyError, TypeError):
        return None
    try:
        return hdr.decode(encoded)
    except ValueError as exc:
        raise ToolOutputError(f"{where}.'Percentile Latencies'.'Histogram log format'."
                              f"'Compressed Histogram': {exc}") from exc


def command_sections(block: Any, where: str) -> dict[str, dict[str, Any]]:
    if not isinstance(block, dict):
        raise ToolOutputError(f"{where}: expected an object, got {type(block).__name__}")
    return {name: sec for name, sec in block.items()
            if isinstance(sec, dict) and "Count" in sec and name != "Totals"}


def _collect(data: dict[str, Any], blocks: list[str], path: Path) -> dict[str, _Command]:
    commands: dict[str, _Command] = {}
    for block in blocks:
        for name, sec in command_sections(data[block], f"{path}: {block}").items():
            where = f"{path}: {block}.{name}"
            count = int(_number(sec, "Count", where))
            if count == 0:
                continue  # e.g. "Waits" when no WAIT was sent: nothing was measured
            acc = commands.setdefault(name, _Command())
            acc.count += count
            acc.memtier_ops.append(_number(sec, "Ops/sec", where))
            hist = _histogram(sec, where)
            if hist is not None:
                acc.histograms.append(hist)
    if not commands:
        raise ToolOutputError(f"{path}: no command with requests in {', '.join(blocks)}")
    return commands


def _run_seconds(data: dict[str, Any], blocks: list[str]) -> float | None:
    """Length of one run when it can be trusted: the configured test time, unless a run
    was interrupted (then memtier's own Ops/sec is all there is)."""
    config = data.get("configuration")
    test_time = config.get("test_time") if isinstance(config, dict) else None
    interrupted = any(str((data[b].get("Runtime") or {}).get("Interrupted", "false")).lower()
                      == "true" for b in blocks)
    if isinstance(test_time, int) and not isinstance(test_time, bool) and test_time > 0 \
            and not interrupted:
        return float(test_time)
    return None


def _ops(acc: _Command, runs: int, seconds: float | None) -> float:
    if seconds is not None:
        return acc.count / (runs * seconds)
    return sum(acc.memtier_ops) / len(acc.memtier_ops)  # per-run rates: their mean


def parse_memtier_json(path: Path) -> ToolResult:
    """Parse a ``--json-out-file`` into a :class:`ToolResult` with exact latencies.

    Raises :class:`ToolOutputError` naming the file and the field when the file cannot be
    read, has no result block, a field is not a number or a histogram cannot be decoded.
    """
    return parse_memtier_data(load_json(path), path)


def parse_memtier_data(data: dict[str, Any], path: Path) -> ToolResult:
    """:func:`parse_memtier_json` of an already loaded file (``data`` is normalised in
    place: see the module docstring); ``path`` names the file in errors."""
    blocks, runs = _result_blocks(data, path)
    commands = _collect(data, blocks, path)
    seconds = _run_seconds(data, blocks)
    merged = {name: hdr.merge(acc.histograms) for name, acc in commands.items()}
    per_command = {name: CommandResult(_ops(acc, runs, seconds), hdr.summarize(merged[name]))
                   for name, acc in commands.items()}
    total_hist = hdr.merge(h for h in merged.values() if h is not None)
    if total_hist is None:
        raise ToolOutputError(f"{path}: no 'Percentile Latencies'.'Histogram log format'."
                              f"'Compressed Histogram' with requests in {', '.join(blocks)}")
    totals = CommandResult(sum(c.ops_per_sec for c in per_command.values()),
                           hdr.summarize(total_hist))
    duration = runs * seconds if seconds is not None else _memtier_duration_s(data, blocks)
    hists = {**merged, "Totals": total_hist}
    encoded = {name: hdr.encode(h) for name, h in hists.items() if h is not None}
    result = ToolResult(tool=TOOL, totals=totals, per_command=per_command, data=data,
                        histogram=encoded["Totals"], runs=runs, duration_s=duration)
    result.histograms = hists  # in memory for merging parallel clients: no decode again
    _normalise_data(data, blocks, result, encoded)
    return result


def _memtier_duration_s(data: dict[str, Any], blocks: list[str]) -> float | None:
    total = sum(float((data[b].get("Runtime") or {}).get("Total duration", 0)) for b in blocks)
    return total / 1000.0 or None


# ---------------------------------------------------------------------------- normalised data


def _latency_fields(latency: LatencySummary, hist: Histogram | None,
                    pct: dict[str, Any]) -> dict[str, Any]:
    """memtier's latency fields from the histogram; labels memtier printed are recomputed."""
    if hist is None or latency.count == 0:
        return {}
    histogram, encoded = hist
    labels = dict(latency.percentiles_ms)
    for label in pct:
        if re.fullmatch(r"p\d+(\.\d+)?", label) and label not in labels:
            labels[label] = hdr.percentile_ms(histogram, float(label[1:]))
    return {"Latency": latency.mean_ms, "Average Latency": latency.mean_ms,
            "Min Latency": latency.min_ms, "Max Latency": latency.max_ms,
            "Percentile Latencies": {**pct, **labels, "Histogram log format": {
                "Compressed Histogram": encoded}}}


#: a histogram with its encoded form (encoded once, where it is made)
Histogram = tuple[HdrHistogram, str]


def command_section(base: dict[str, Any], res: CommandResult,
                    hist: Histogram | None) -> dict[str, Any]:
    """A memtier-shaped command section: ``base``'s fields with exact count, rate, latency."""
    section = dict(base)
    section.update({"Count": res.latency.count or section.get("Count", 0),
                    "Ops/sec": res.ops_per_sec})
    section.update(_latency_fields(res.latency, hist, section.get("Percentile Latencies") or {}))
    return section


def _base_block(data: dict[str, Any], blocks: list[str]) -> dict[str, Any]:
    """memtier's own combined block: ALL STATS, else AGGREGATED, else the first run."""
    if blocks == [SINGLE]:
        return data[SINGLE]
    return next((data[k] for k in data if AGGREGATED.match(k)), data[blocks[0]])


def _runtime(data: dict[str, Any], duration_s: float | None) -> dict[str, Any]:
    """A Runtime for a combined block: first start, last finish, the trusted duration."""
    # every block: the AGGREGATED one carries zeros, BEST/WORST the real clock times
    runtimes = [b.get("Runtime") or {} for b in data.values() if isinstance(b, dict)]
    starts = [r["Start time"] for r in runtimes if r.get("Start time")]
    finishes = [r["Finish time"] for r in runtimes if r.get("Finish time")]
    runtime: dict[str, Any] = {"Time unit": "MILLISECONDS"}
    if starts:
        runtime["Start time"] = min(starts)
    if finishes:
        runtime["Finish time"] = max(finishes)
    if duration_s is not None:
        runtime["Total duration"] = round(duration_s * 1000)
    return runtime


def _normalise_data(data: dict[str, Any], blocks: list[str], combined: ToolResult,
                    encoded: dict[str, str]) -> None:
    """Make ``data[SINGLE]`` hold the exact combined result (see the module docstring)."""
    config = data.get("configuration")
    if isinstance(config, dict) and config.get("authenticate"):
        config["authenticate"] = REDACTED
    base = _base_block(data, blocks)
    memtier_totals = {k: v for k, v in (base.get("Totals") or {}).items() if k != "Time-Serie"}
    block = base if blocks == [SINGLE] else {
        "Runtime": _runtime(data, combined.duration_s)}
    hists = combined.histograms

    def both(name: str) -> Histogram | None:
        hist = hists.get(name)
        return (hist, encoded[name]) if hist is not None else None

    for name, res in combined.per_command.items():
        block[name] = command_section(base.get(name) or {}, res, both(name))
    block["Totals"] = command_section(base.get("Totals") or {}, combined.totals, both("Totals"))
    block["Totals"]["Count"] = combined.totals.latency.count
    data[SINGLE] = block
    data["rbs"] = {"runs": combined.runs, "combined blocks": blocks,
                   "memtier ALL STATS Totals": memtier_totals,
                   # how Ops/sec was made, so a reader can say why memtier printed another
                   "ops/sec from": "count / test_time" if _run_seconds(data, blocks)
                   else "memtier Ops/sec",
                   "memtier Total duration ms": (_memtier_duration_s(data, blocks) or 0) * 1000}


