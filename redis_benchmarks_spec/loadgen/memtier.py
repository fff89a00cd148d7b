"""memtier_benchmark: argv building, JSON parsing with exact latencies, error detection.

Latency comes from the decoded HDR histograms, never from memtier's summary fields:
``Totals.Latency`` / ``Totals."Average Latency"`` are truncated to whole milliseconds, and the
``AGGREGATED AVERAGE RESULTS`` Totals histogram of a ``--run-count`` run is empty. For
multi-run files the per-run histograms (``RUN #n RESULTS``, with ``--print-all-runs``) are
merged; without them the aggregated section's per-command histograms (which hold every run)
are merged into the totals. ``data`` keeps memtier's JSON with the latency fields of every
section rewritten from the histograms (and p90/p95/p99.99 added), so exporter paths read exact
values.
"""

from __future__ import annotations

import json
import re
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.loadgen import histogram as hdr
from redis_benchmarks_spec.loadgen.result import (
    CommandResult,
    LatencySummary,
    ServerErrorReplies,
    ToolOutputError,
    ToolResult,
)
from redis_benchmarks_spec.spec.suite import ToolConfig

SINGLE = "ALL STATS"
AGGREGATED = re.compile(r"^AGGREGATED AVERAGE RESULTS \((\d+) runs\)$")
RUN = re.compile(r"^RUN #(\d+) RESULTS$")
OWNED_VALUE_OPTS = {"-s", "--server", "-p", "--port", "--json-out-file", "-S", "--unix-socket",
                    "-a", "--authenticate", "--test-time", "-n", "--requests"}
OWNED_FLAGS = {"--tls", "--cluster-mode"}


@dataclass(frozen=True)
class MemtierTarget:
    host: str
    port: int
    password: str | None = None
    user: str | None = None
    tls: bool = False
    tls_cert: str | None = None
    tls_key: str | None = None
    tls_cacert: str | None = None
    cluster_mode: bool = False


def _strip(argv: list[str], keep_time: bool) -> list[str]:
    """Remove options the driver owns (``--opt value`` and ``--opt=value`` forms)."""
    owned = OWNED_VALUE_OPTS - ({"--test-time", "-n", "--requests"} if keep_time else set())
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        name = arg.split("=", 1)[0]
        if name in owned:
            i += 1 if "=" in arg else 2
            continue
        if arg not in OWNED_FLAGS:
            out.append(arg)
        i += 1
    return out


def _target_args(target: MemtierTarget) -> list[str]:
    args = ["--server", target.host, "--port", str(target.port)]
    if target.password:
        auth = f"{target.user}:{target.password}" if target.user else target.password
        args += ["--authenticate", auth]
    if target.tls:
        args.append("--tls")
        for opt, value in (("--cert", target.tls_cert), ("--key", target.tls_key),
                           ("--cacert", target.tls_cacert)):
            if value:
                args += [opt, value]
    if target.cluster_mode:
        args.append("--cluster-mode")
    return args


def memtier_argv(binary: str, cfg: ToolConfig, target: MemtierTarget, json_out: Path,
                 test_time: int | None = None) -> list[str]:
    """Suite arguments (shlex, no shell) with our target and JSON file; ``test_time``
    replaces the suite's ``--test-time`` or ``-n``/``--requests``; ``--run-count`` is kept."""
    args = _strip(cfg.argv(), keep_time=test_time is None)
    timing = ["--test-time", str(test_time)] if test_time is not None else []
    return [binary, *_target_args(target), *args, *timing, "--json-out-file", str(json_out)]


def expected_duration(argv: list[str]) -> float | None:
    """Seconds the run should take (test time x run count), when the argv says."""
    values = {}
    for i, arg in enumerate(argv):
        name, _, inline = arg.partition("=")
        if name in ("--test-time", "--run-count", "-x"):
            raw = inline or (argv[i + 1] if i + 1 < len(argv) else "")
            if raw.isdigit():
                values[name] = int(raw)
    runs = values.get("--run-count", values.get("-x", 1))
    return float(values["--test-time"] * runs) if "--test-time" in values else None


# ---------------------------------------------------------------------------- parsing


@dataclass
class _Section:
    """Histograms and rates of one command section across the runs being combined."""

    ops_per_sec: list[float] = field(default_factory=list)
    histograms: list[HdrHistogram] = field(default_factory=list)
    count: int = 0


def _load(path: Path) -> dict[str, Any]:
    try:
        data = json.loads(path.read_text())
    except (OSError, ValueError) as exc:
        raise ToolOutputError(f"{path}: cannot read memtier JSON: {exc}") from exc
    if not isinstance(data, dict):
        raise ToolOutputError(f"{path}: memtier JSON is not an object")
    return data


def _result_sections(data: dict[str, Any], path: Path) -> tuple[list[str], int]:
    """The top-level sections whose histograms to merge, and the number of runs."""
    if SINGLE in data:
        return [SINGLE], 1
    runs = sorted((k for k in data if RUN.match(k)), key=lambda k: int(RUN.match(k).group(1)))  # type: ignore[union-attr]
    aggregated = [k for k in data if AGGREGATED.match(k)]
    if runs:
        return runs, len(runs)
    if aggregated:
        return aggregated, int(AGGREGATED.match(aggregated[0]).group(1))  # type: ignore[union-attr]
    raise ToolOutputError(f"{path}: no 'ALL STATS', 'RUN #n RESULTS' or 'AGGREGATED AVERAGE "
                          f"RESULTS' section (found: {', '.join(data) or 'nothing'})")


def _histogram(section: dict[str, Any], where: str) -> HdrHistogram | None:
    try:
        encoded = section["Percentile Latencies"]["Histogram log format"]["Compressed Histogram"]
    except (KeyError, TypeError):
        return None
    try:
        return hdr.decode(encoded)
    except ValueError as exc:
        raise ToolOutputError(f"{where}: {exc}") from exc


def _commands(block: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {name: sec for name, sec in block.items()
            if isinstance(sec, dict) and "Count" in sec and name != "Totals"}


def _collect(data: dict[str, Any], names: list[str], path: Path) -> dict[str, _Section]:
    sections: dict[str, _Section] = {}
    for name in names:
        block = data[name]
        for cmd, sec in _commands(block).items():
            if not sec.get("Count"):
                continue  # e.g. "Waits" when no WAIT was sent
            acc = sections.setdefault(cmd, _Section())
            acc.ops_per_sec.append(float(sec.get("Ops/sec", 0.0)))
            acc.count += int(sec["Count"])
            hist = _histogram(sec, f"{path}: {name}.{cmd}")
            if hist is not None:
                acc.histograms.append(hist)
    if not sections:
        raise ToolOutputError(f"{path}: no command section with requests in {', '.join(names)}")
    return sections


def _command_result(acc: _Section, runs: int) -> tuple[CommandResult, HdrHistogram | None]:
    merged = hdr.merge(acc.histograms)
    latency = hdr.summarize(merged)
    # per-run rates are averaged: the runs are repetitions of the same workload
    ops = sum(acc.ops_per_sec) / len(acc.ops_per_sec) if runs > 1 else acc.ops_per_sec[0]
    return CommandResult(ops, latency), merged


def _rewrite_latencies(section: dict[str, Any], latency: LatencySummary) -> None:
    """Replace memtier's truncated/avg-of-avg latency fields with histogram values."""
    if latency.count == 0:
        return
    section["Latency"] = section["Average Latency"] = latency.mean_ms
    section["Min Latency"], section["Max Latency"] = latency.min_ms, latency.max_ms
    pct = section.setdefault("Percentile Latencies", {})
    pct.update(latency.percentiles_ms)


def parse_memtier_json(path: Path) -> ToolResult:
    """Parse a ``--json-out-file`` into a :class:`ToolResult` with exact latencies."""
    data = _load(path)
    names, runs = _result_sections(data, path)
    sections = _collect(data, names, path)
    per_command: dict[str, CommandResult] = {}
    merged: list[HdrHistogram] = []
    for cmd, acc in sections.items():
        per_command[cmd], hist = _command_result(acc, runs)
        if hist is not None:
            merged.append(hist)
    total_hist = hdr.merge(merged)
    totals = CommandResult(sum(c.ops_per_sec for c in per_command.values()),
                           hdr.summarize(total_hist))
    if totals.latency.count == 0:
        raise ToolOutputError(f"{path}: no latency histogram in any command section")
    _patch_data(data, names, per_command, totals)
    return ToolResult(tool="memtier_benchmark", totals=totals, per_command=per_command,
                      data=data, histogram=hdr.encode(total_hist) if total_hist else None,
                      runs=runs, duration_s=_duration_s(data, names))


def _patch_data(data: dict[str, Any], names: list[str], per_command: dict[str, CommandResult],
                totals: CommandResult) -> None:
    """Exact latencies into every result block, and a merged ``ALL STATS`` for multi-run
    files (so ``$."ALL STATS"...`` paths work whatever the run count)."""
    # per-run blocks keep memtier's own per-run numbers; combined blocks get merged values
    for name, block in data.items():
        if name == SINGLE or AGGREGATED.match(name):
            for cmd, res in per_command.items():
                if cmd in block:
                    _rewrite_latencies(block[cmd], res.latency)
            if "Totals" in block:
                _rewrite_latencies(block["Totals"], totals.latency)
    if SINGLE not in data:
        data[SINGLE] = {cmd: {"Ops/sec": r.ops_per_sec, "Count": r.latency.count}
                        for cmd, r in per_command.items()}
        data[SINGLE]["Totals"] = {"Ops/sec": totals.ops_per_sec, "Count": totals.latency.count}
        data[SINGLE]["Runtime"] = dict(data[names[0]].get("Runtime", {}))
        for cmd, res in per_command.items():
            _rewrite_latencies(data[SINGLE][cmd], res.latency)
        _rewrite_latencies(data[SINGLE]["Totals"], totals.latency)


def _duration_s(data: dict[str, Any], names: list[str]) -> float | None:
    total = 0.0
    for name in names:
        runtime = data[name].get("Runtime", {})
        if "Total duration" in runtime:
            total += float(runtime["Total duration"]) / 1000.0
    return total or None


# ---------------------------------------------------------------------------- errors

_ERROR_LINE = re.compile(r"error response|server .* handle error|\(error\)|-ERR |-WRONGTYPE",
                         re.IGNORECASE)
# commands whose successful reply always has the same size, in bytes
# (":0\r\n" / ":1\r\n" for small-integer replies of commands with < 10 members; "+OK\r\n"
# or "$-1\r\n" for SET), so received bytes beyond count x size can only be error replies
FIXED_REPLY_BYTES = {
    "hset": 4, "hsetnx": 4, "sadd": 4, "srem": 4, "zadd": 4, "zrem": 4, "del": 4,
    "unlink": 4, "exists": 4, "expire": 4, "pexpire": 4, "persist": 4, "pfadd": 4,
    "setbit": 4, "getbit": 4, "sismember": 4, "hexists": 4, "hdel": 4, "setnx": 4,
    "set": 5, "sets": 5,
}
WRONGTYPE_REPLY_BYTES = len("-WRONGTYPE Operation against a key holding the wrong kind of value"
                            "\r\n")


def count_error_lines(output: str) -> int:
    """Error replies memtier reported on stdout/stderr (it logs each one it handles)."""
    return sum(1 for line in output.splitlines() if _ERROR_LINE.search(line))


def _section_command(section: str) -> str:
    """memtier names sections after the command: "Hsets" -> hset, "Sets" -> set."""
    name = section.lower()
    return name[:-1] if name.endswith("s") and name[:-1] in FIXED_REPLY_BYTES else name


def audit_reply_bytes(path: Path) -> list[str]:
    """Sections whose received bytes prove error replies (fixed-size-reply commands only).

    memtier's JSON has no error counter, but its per-second ``Bytes RX`` does not lie: for a
    command whose success reply has a fixed size, any excess is error text. The message gives
    the count assuming -WRONGTYPE replies, which is exact for the usual key-collision case."""
    data = _load(path)
    names, _ = _result_sections(data, path)
    problems = []
    for name in names:
        for section, sec in _commands(data[name]).items():
            size = FIXED_REPLY_BYTES.get(_section_command(section))
            series = sec.get("Time-Serie") or {}
            if size is None or not series:
                continue
            rx = sum(int(v.get("Bytes RX", 0)) for v in series.values())
            count = sum(int(v.get("Count", 0)) for v in series.values())
            excess = rx - size * count
            if excess > 0:
                n = excess / (WRONGTYPE_REPLY_BYTES - size)
                problems.append(f"{name}.{section}: {rx} bytes received for {count} replies of "
                                f"{size} bytes: error replies present ({n:,.0f} if -WRONGTYPE)")
    return problems


def check_errors(json_path: Path, output: str) -> None:
    """Raise :class:`ServerErrorReplies` when memtier's output or byte counts show errors."""
    lines = count_error_lines(output)
    audit = audit_reply_bytes(json_path) if json_path.exists() else []
    if lines or audit:
        detail = "; ".join(audit) if audit else "memtier logged error responses"
        raise ServerErrorReplies(max(lines, 1), detail)


# ---------------------------------------------------------------------------- merge, version


def merge_results(results: list[ToolResult]) -> ToolResult:
    """Combine parallel clients (``clientconfigs``): rates add up, histograms merge."""
    if len(results) == 1:
        return results[0]
    per_command: dict[str, CommandResult] = {}
    hist_by_cmd: dict[str, list[str]] = {}
    for res in results:
        for cmd, r in res.per_command.items():
            prev = per_command.get(cmd)
            per_command[cmd] = CommandResult((prev.ops_per_sec if prev else 0.0) + r.ops_per_sec,
                                             r.latency if prev is None else prev.latency)
    encoded = [r.histogram for r in results if r.histogram]
    if len(encoded) == len(results):
        merged = hdr.merge(hdr.decode(e) for e in encoded)
        latency = hdr.summarize(merged)
        histogram = hdr.encode(merged) if merged else None
    else:
        # redis-benchmark gives no histogram: keep what can be combined honestly
        latency = _combine_without_histograms(results)
        histogram = None
    del hist_by_cmd
    totals = CommandResult(sum(r.totals.ops_per_sec for r in results), latency)
    data = {SINGLE: {"Totals": {"Ops/sec": totals.ops_per_sec}}}
    _rewrite_latencies(data[SINGLE]["Totals"], latency)
    data[SINGLE]["clients"] = [r.data for r in results]  # type: ignore[assignment]
    return ToolResult(tool=",".join(sorted({r.tool for r in results})), totals=totals,
                      per_command=per_command, data=data, histogram=histogram,
                      error_replies=sum(r.error_replies for r in results),
                      runs=max(r.runs for r in results),
                      duration_s=max((r.duration_s or 0.0) for r in results) or None)


def _combine_without_histograms(results: list[ToolResult]) -> LatencySummary:
    """Rate-weighted mean, overall min/max; percentiles are not combinable without
    histograms and are left out (exporter paths for them are then reported missing)."""
    weights = [r.totals.ops_per_sec for r in results]
    means = [r.totals.latency.mean_ms or 0.0 for r in results]
    total = sum(weights) or 1.0
    mins = [r.totals.latency.min_ms for r in results if r.totals.latency.min_ms is not None]
    maxs = [r.totals.latency.max_ms for r in results if r.totals.latency.max_ms is not None]
    return LatencySummary(count=sum(r.totals.latency.count for r in results),
                          mean_ms=sum(w * m for w, m in zip(weights, means)) / total,
                          min_ms=min(mins) if mins else None, max_ms=max(maxs) if maxs else None)


def memtier_version(binary: str) -> str:
    """``memtier_benchmark --version`` -> e.g. "2.1.0" (or the first line when unusual)."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10, check=False)
    text = (out.stdout or out.stderr).strip()
    match = re.search(r"(\d+\.\d+\.\d+)", text)
    return match.group(1) if match else (text.splitlines()[0] if text else "unknown")
