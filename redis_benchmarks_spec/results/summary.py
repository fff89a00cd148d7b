"""The whole session's results: one row per test run, as CSV and JSON, and table rows."""

from __future__ import annotations

import csv
import json
import time
from dataclasses import dataclass, replace
from pathlib import Path

from redis_benchmarks_spec.results.document import STATUS_OK, RunResult
from redis_benchmarks_spec.results.memory import MEMORY_METRICS
from redis_benchmarks_spec.results.profile import instrumented

CSV_COLUMNS = ["test_name", "topology", "status", "ops_per_sec", "p50_ms", "p95_ms", "p99_ms",
               "p999_ms", "max_ms", "mean_ms", "client_cpu_pct", "server_cpu_pct", "flags", "tool_duration_s",
               "preload_duration_s", "reason", "repetition", "sweep_param", "sweep_value",
               *MEMORY_METRICS, "offered_rps", "achieved_rps", "p99_corrected_ms",
               "p999_corrected_ms"]


def session_dir(results_root: Path) -> Path:
    """A fresh directory per session under the results root, named by start time."""
    stamp = time.strftime("%Y%m%d-%H%M%S")
    path = results_root / stamp
    n = 1
    while path.exists():
        n += 1
        path = results_root / f"{stamp}-{n}"
    path.mkdir(parents=True)
    return path


@dataclass
class Row:
    test_name: str
    topology: str
    status: str
    ops_per_sec: float | None
    p50_ms: float | None
    p95_ms: float | None  # redis-benchmark reports it; memtier only when asked for
    p99_ms: float | None
    p999_ms: float | None  # memtier reports it; redis-benchmark does not
    max_ms: float | None
    mean_ms: float | None
    client_cpu_pct: float | None
    server_cpu_pct: float | None
    flags: str
    tool_duration_s: float | None
    preload_duration_s: float | None
    reason: str
    repetition: int | None = None  # round of `rbs run --repetitions` (rep-NN folder)
    sweep_param: str = ""  # `rbs run --sweep clients=...`: the parameter and this run's value
    sweep_value: str = ""
    # memory after the preload (results/memory.py), named as INFO names it
    used_memory: float | None = None
    used_memory_dataset: float | None = None
    used_memory_overhead: float | None = None
    allocator_frag_ratio: float | None = None
    allocator_resident: float | None = None
    bytes_per_key: float | None = None
    # a paced run (--rate): the rate offered and achieved, and p99 / p99.9 corrected for
    # coordinated omission (loadgen/pacing.py)
    offered_rps: float | None = None
    achieved_rps: float | None = None
    p99_corrected_ms: float | None = None
    p999_corrected_ms: float | None = None


#: the columns that say how fast the server was: blank in the row of an instrumented run
TIMED_COLUMNS = ("ops_per_sec", "p50_ms", "p95_ms", "p99_ms", "p999_ms", "max_ms", "mean_ms",
                 "offered_rps", "achieved_rps", "p99_corrected_ms", "p999_corrected_ms")


def row(result: RunResult) -> Row:
    """The run's row; a run measured under a profiler (``profile.instrumented``; its flags
    say ``profiled``) has no throughput or latency in it: they are not the server's speed."""
    measured = _row(result)
    if not instrumented(result.flags):
        return measured
    left_out = replace(measured)
    for column in TIMED_COLUMNS:
        setattr(left_out, column, None)
    return left_out


def _row(result: RunResult) -> Row:
    tr = result.result if result.status == STATUS_OK else None
    pct = tr.totals.latency.percentiles_ms if tr else {}
    cpu_c, cpu_s = result.cpu.get("client"), result.cpu.get("server")
    return Row(
        test_name=result.test_name, topology=result.context.topology, status=result.status,
        ops_per_sec=tr.totals.ops_per_sec if tr else None,
        p50_ms=pct.get("p50.00"), p95_ms=pct.get("p95.00"), p99_ms=pct.get("p99.00"),
        p999_ms=pct.get("p99.90"), max_ms=tr.totals.latency.max_ms if tr else None,
        mean_ms=tr.totals.latency.mean_ms if tr else None,
        client_cpu_pct=cpu_c.mean_pct if cpu_c and cpu_c.samples else None,
        server_cpu_pct=cpu_s.mean_pct if cpu_s and cpu_s.samples else None,
        flags=",".join(result.flags), tool_duration_s=result.tool_duration_s,
        preload_duration_s=result.preload_duration_s,
        reason=result.reason.splitlines()[0] if result.reason else "",
        repetition=result.context.repetition, sweep_param=result.sweep.get("param", ""),
        sweep_value=result.sweep.get("value", ""),
        **{name: result.metrics.get(name) for name in MEMORY_METRICS}, **_rate(result))


def _rate(result: RunResult) -> dict[str, float | None]:
    rate = result.rate
    corrected = rate.get("latency_ms_corrected", {})
    return {"offered_rps": rate.get("offered_rps"), "achieved_rps": rate.get("achieved_rps"),
            "p99_corrected_ms": corrected.get("p99.00"),
            "p999_corrected_ms": corrected.get("p99.90")}


def write_summary(results: list[RunResult], directory: Path) -> tuple[Path, Path]:
    """``summary.csv`` and ``summary.json`` of a session; returns both paths."""
    rows = [row(r) for r in results]
    csv_path, json_path = directory / "summary.csv", directory / "summary.json"
    with csv_path.open("w", newline="") as fh:
        writer = csv.DictWriter(fh, fieldnames=CSV_COLUMNS)
        writer.writeheader()
        for r in rows:
            writer.writerow(r.__dict__)
    json_path.write_text(json.dumps([r.__dict__ for r in rows], indent=2))
    return csv_path, json_path
