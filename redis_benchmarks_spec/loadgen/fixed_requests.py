"""A client config rewritten to send a fixed total number of requests.

Used when the server runs under callgrind: a duration-based run would take ~50x longer and
its request count would depend on how fast the host happens to be. The count is never more
than the suite's own (a profiled run is never longer than the full one).
"""

from __future__ import annotations

import math
import shlex
from dataclasses import replace

from redis_benchmarks_spec.loadgen import redis_benchmark
from redis_benchmarks_spec.loadgen.memtier_argv import TIME_OPTS
from redis_benchmarks_spec.suites.suite import ToolConfig

MEMTIER_DEFAULT_CLIENTS = 50
MEMTIER_DEFAULT_THREADS = 4
MEMTIER_DEFAULT_REQUESTS = 10_000  # per client


def _value(argv: list[str], names: set[str]) -> str | None:
    for i, arg in enumerate(argv):
        for name in names:
            if arg == name and i + 1 < len(argv):
                return argv[i + 1]
            if name.startswith("--") and arg.startswith(name + "="):
                return arg.split("=", 1)[1]
    return None


def _drop(argv: list[str], names: set[str]) -> list[str]:
    out, skip = [], False
    for arg in argv:
        if skip:
            skip = False
            continue
        if arg in names:
            skip = True
            continue
        if any(arg.startswith(n + "=") for n in names if n.startswith("--")):
            continue
        out.append(arg)
    return out


def _int(text: str | None, default: int) -> int:
    try:
        return int(text) if text is not None else default
    except ValueError:
        return default


def redis_benchmark_requests(argv: list[str], total: int) -> list[str]:
    """redis-benchmark arguments with ``-n`` = min(total, the suite's own -n)."""
    n = min(total, redis_benchmark.requests_in(argv))
    return redis_benchmark.set_requests(argv, n)


def memtier_requests(argv: list[str], total: int) -> list[str]:
    """memtier arguments with ``--requests`` per client so all clients send ~``total``."""
    clients = _int(_value(argv, {"-c", "--clients"}), MEMTIER_DEFAULT_CLIENTS)
    threads = _int(_value(argv, {"-t", "--threads"}), MEMTIER_DEFAULT_THREADS)
    streams = max(1, clients * threads)
    own = _value(argv, {"-n", "--requests"})
    per_client = math.ceil(total / streams)
    if own is not None and own.isdigit():
        per_client = min(per_client, int(own))
    return [*_drop(argv, TIME_OPTS), "--requests", str(max(1, per_client))]


def with_request_count(cfg: ToolConfig, total: int) -> ToolConfig:
    """``cfg`` sending ``total`` requests in all (unknown tools are returned unchanged)."""
    argv = cfg.argv()
    if cfg.tool == "redis-benchmark":
        argv = redis_benchmark_requests(argv, total)
    elif cfg.tool == "memtier_benchmark":
        argv = memtier_requests(argv, total)
    else:
        return cfg
    return replace(cfg, arguments=shlex.join(argv))
