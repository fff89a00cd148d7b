"""redis-benchmark driver: argv building, ``--test-time`` mapping and CSV parsing.

redis-benchmark has no duration flag, so ``--test-time T`` is mapped onto its request count.
First a short warm-up of the very same command (``WARMUP_REQUESTS x min(P, PIPELINE_CAP)``
requests, a fraction of a second) measures the rate R on this machine; the measured run then
gets ``-n = R x T``, never more than the suite's own ``-n`` (a quick run is never longer than
the full one). Without a warm-up rate the fallback is ``T x ASSUMED_RPS_PER_STREAM x
min(P, PIPELINE_CAP)``. The warm-up is not part of the result; the real duration of the
measured run is stored.
"""

from __future__ import annotations

import csv
import io
import math
import re
import subprocess
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import minimal_env
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies, ToolOutputError
from redis_benchmarks_spec.results.tool_result import CommandResult, LatencySummary, ToolResult
from redis_benchmarks_spec.suites.commands import REDIS_BENCHMARK_VALUE_OPTS
from redis_benchmarks_spec.suites.suite import ToolConfig

ASSUMED_RPS_PER_STREAM = 100_000
WARMUP_REQUESTS = 20_000
PIPELINE_CAP = 10
DEFAULT_REQUESTS = 100_000  # redis-benchmark's own default for -n
# options the driver owns: a suite must not point the tool elsewhere or change its output,
# nor put a password on its command line (the run's credentials: runner/run_user.py)
OWNED_VALUE_OPTS = {"-h", "-p", "-s", "-u", "-a", "--user"}
OWNED_FLAGS = {"--csv", "-q", "-l", "--cluster"}
CSV_HEADER = ["test", "rps", "avg_latency_ms", "min_latency_ms", "p50_latency_ms",
              "p95_latency_ms", "p99_latency_ms", "max_latency_ms"]


@dataclass(frozen=True)
class Target:
    host: str
    port: int
    password: str | None = None
    user: str | None = None
    cluster: bool = False  # --cluster: redis-benchmark routes by slot ({tag} keys)


def _option_value(argv: list[str], name: str) -> str | None:
    for i, arg in enumerate(argv[:-1]):
        if arg == name:
            return argv[i + 1]
    return None


def _pipeline(argv: list[str]) -> int:
    return min(max(int(_option_value(argv, "-P") or 1), 1), PIPELINE_CAP)


def requests_for_test_time(argv: list[str], test_time: int, rate: float | None = None) -> int:
    """The ``-n`` that approximates ``test_time`` seconds for this argv (see module doc)."""
    suite_n = int(_option_value(argv, "-n") or DEFAULT_REQUESTS)
    # a warm-up too short to measure reports inf: never size a run from it
    usable = rate is not None and math.isfinite(rate) and rate > 0
    per_second = rate if usable and rate else ASSUMED_RPS_PER_STREAM * _pipeline(argv)
    return max(1, min(suite_n, int(test_time * per_second)))


def warmup_requests(argv: list[str]) -> int:
    suite_n = int(_option_value(argv, "-n") or DEFAULT_REQUESTS)
    return max(1, min(suite_n, WARMUP_REQUESTS * _pipeline(argv)))


def _strip_owned(argv: list[str]) -> list[str]:
    out: list[str] = []
    i = 0
    while i < len(argv):
        arg = argv[i]
        if arg in OWNED_VALUE_OPTS:
            i += 2
            continue
        if arg not in OWNED_FLAGS:
            out.append(arg)
        i += 1
    return out


def _replace_requests(argv: list[str], n: int) -> list[str]:
    """Set ``-n`` among the options (before any custom command words)."""
    out: list[str] = []
    i = 0
    while i < len(argv):
        if argv[i] == "-n":
            i += 2
            continue
        if argv[i] in REDIS_BENCHMARK_VALUE_OPTS:
            out += argv[i:i + 2]
            i += 2
            continue
        if not argv[i].startswith("-"):
            break  # the custom command starts here
        out.append(argv[i])
        i += 1
    return out + ["-n", str(n)] + argv[i:]


def set_requests(argv: list[str], n: int) -> list[str]:
    """Suite arguments with ``-n n`` (placed before any custom command words)."""
    return _replace_requests(argv, n)


def build_argv(binary: str, cfg: ToolConfig, target: Target, test_time: int | None = None,
               rate: float | None = None) -> list[str]:
    """The full argv: suite arguments (shlex, no shell) plus target and ``--csv``;
    ``test_time`` (with the warm-up ``rate`` when known) sets ``-n``."""
    args = _strip_owned(cfg.argv())
    if test_time is not None:
        args = _replace_requests(args, requests_for_test_time(args, test_time, rate))
    auth: list[str] = []
    if target.user:
        auth += ["--user", target.user]
    if target.password:
        auth += ["-a", target.password]
    cluster = ["--cluster"] if target.cluster else []
    return [binary, "-h", target.host, "-p", str(target.port), *auth, *cluster, "--csv", *args]


def _float(row: dict[str, str], field: str, source: str) -> float:
    try:
        return float(row[field])
    except (KeyError, ValueError) as exc:
        raise ToolOutputError(f"{source}: field {field!r} missing or not a number "
                              f"in row {row.get('test')!r}") from exc


def _section_name(test: str) -> str:
    """``LRANGE_100 (first 100 elements)`` -> ``LRANGE_100``; custom commands keep argv[0]."""
    return test.split(" ")[0] if test else "UNKNOWN"


def _row_result(row: dict[str, str], source: str) -> tuple[CommandResult, dict[str, object]]:
    f = {k: _float(row, k, source) for k in CSV_HEADER[1:]}
    pct = {"p50.00": f["p50_latency_ms"], "p95.00": f["p95_latency_ms"],
           "p99.00": f["p99_latency_ms"]}
    latency = LatencySummary(count=0, mean_ms=f["avg_latency_ms"], min_ms=f["min_latency_ms"],
                             max_ms=f["max_latency_ms"], percentiles_ms=pct)
    section = {"Ops/sec": f["rps"], "Average Latency": f["avg_latency_ms"],
               "Latency": f["avg_latency_ms"], "Min Latency": f["min_latency_ms"],
               "Max Latency": f["max_latency_ms"], "Percentile Latencies": dict(pct)}
    return CommandResult(f["rps"], latency), section


def _totals(results: list[CommandResult], sections: list[dict[str, object]],
            requests: int) -> tuple[CommandResult, dict[str, object]]:
    """One test: its own numbers. Several tests ran one after another with the same -n, so
    the overall rate is the harmonic mean; percentiles cannot be combined without the
    histograms redis-benchmark does not export, so they are left out (and reported missing)."""
    if len(results) == 1:
        return results[0], dict(sections[0])
    inverse = sum(1.0 / r.ops_per_sec for r in results if r.ops_per_sec > 0)
    ops = len(results) / inverse if inverse > 0 else 0.0  # 0: check_measurable fails it
    mean = sum(r.latency.mean_ms or 0.0 for r in results) / len(results)
    lo = min(r.latency.min_ms or 0.0 for r in results)
    hi = max(r.latency.max_ms or 0.0 for r in results)
    latency = LatencySummary(count=requests * len(results), mean_ms=mean, min_ms=lo, max_ms=hi)
    section: dict[str, object] = {"Ops/sec": ops, "Average Latency": mean, "Latency": mean,
                                  "Min Latency": lo, "Max Latency": hi}
    return CommandResult(ops, latency), section


def parse_csv(text: str, source: str, requests: int = 0) -> ToolResult:
    """Parse ``redis-benchmark --csv`` output into the memtier-shaped :class:`ToolResult`."""
    lines = [ln for ln in text.replace("\r", "\n").splitlines() if ln.startswith('"')]
    rows = list(csv.DictReader(io.StringIO("\n".join(lines))))
    rows = [r for r in rows if r.get("test") != "test"]
    if not rows:
        raise ToolOutputError(f"{source}: no CSV result rows in redis-benchmark output")
    per_command: dict[str, CommandResult] = {}
    sections: dict[str, dict[str, object]] = {}
    for row in rows:
        name = _section_name(row["test"])
        if name in per_command:
            name = f"{name}#{len(per_command)}"
        per_command[name], sections[name] = _row_result(row, source)
        for r in (per_command[name],):
            r.latency.count = requests
    totals, total_section = _totals(list(per_command.values()), list(sections.values()), requests)
    data = {"ALL STATS": {**sections, "Totals": total_section}}
    return ToolResult(tool="redis-benchmark", totals=totals, per_command=per_command, data=data)


_SERVER_ERROR = re.compile(r"Error from server: (.*)")


def check_server_errors(output: str, returncode: int) -> None:
    """redis-benchmark 7 exits 1 at the first error reply and prints it: fail the test."""
    match = _SERVER_ERROR.search(output)
    if match:
        raise ServerErrorReplies(1, f"redis-benchmark stopped at: {match.group(1).strip()} "
                                    f"(exit code {returncode})")


def version(binary: str) -> str:
    """``redis-benchmark --version`` (7.0+: 'redis-benchmark 7.0.15')."""
    out = subprocess.run([binary, "--version"], capture_output=True, text=True, timeout=10,
                         check=False, env=minimal_env())
    text = (out.stdout or out.stderr).strip()
    return text.split()[-1] if text else "unknown"


def warmup_argv(binary: str, cfg: ToolConfig, target: Target) -> list[str]:
    full = build_argv(binary, cfg, target)
    return full[:1] + _replace_requests(full[1:], warmup_requests(full))


def requests_in(argv: list[str]) -> int:
    return int(_option_value(argv, "-n") or DEFAULT_REQUESTS)


def read_output(path: Path) -> str:
    return path.read_text(errors="replace")
