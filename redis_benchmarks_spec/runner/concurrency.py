"""Thousands of connections per point of a ``clients``/``connections`` sweep: the limits
raised for the processes we start, and the rule that makes each point long enough.

**Limits.** Each point asks for ``maxclients`` = connections + :data:`ADMIN_CONNECTIONS`
on the server, and starts the server and the client tool with an open-file limit that
holds them (:mod:`common.limits`: ``prlimit`` on those processes only). What was asked,
granted and what the server really took (``CONFIG GET maxclients``, /proc/PID/limits) is
stored in the result (``concurrency.limits``) and printed.

**The minimum rule.** A point first runs a warm-up of the same configuration at the same
connection count (``warmup_s`` seconds, results thrown away: connections opened, the server's
buffers grown, the rate R measured). The measured run then sends a request count, not a
duration: ``N = max(M, ceil(R x T / connections))`` requests per connection (M =
``min_requests_per_connection``, T = ``--test-time``, else the suite's own length), so the
minimum holds by construction however the rate moves on a shared host (memtier
``--requests N`` per connection; redis-benchmark ``-n N x connections``, which its
connections share). A point that would need more than ``max_point_s`` at the warm-up's rate
is cut to that length and flagged ``below-minimum``; so is any point that still ended short
of M per connection.
"""

from __future__ import annotations

import math
import shlex
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.common.limits import (
    NofileGrant,
    grant_nofile,
    local_port_count,
    process_nofile,
)
from redis_benchmarks_spec.loadgen import redis_benchmark
from redis_benchmarks_spec.loadgen.base import (
    WARMUP,
    ClientDriver,
    ClientTarget,
    Invocation,
)
from redis_benchmarks_spec.loadgen.fixed_requests import (
    MEMTIER_DEFAULT_CLIENTS,
    MEMTIER_DEFAULT_THREADS,
    _drop,
    _int,
    _value,
)
from redis_benchmarks_spec.loadgen.memtier_argv import TIME_OPTS
from redis_benchmarks_spec.loadgen.result import ToolResult
from redis_benchmarks_spec.results.document import DeploymentRecord
from redis_benchmarks_spec.results.stages import Findings
from redis_benchmarks_spec.runner.launcher import ServerHandle, ServerLauncher, ServerSpec
from redis_benchmarks_spec.suites.suite import Suite, ToolConfig

BELOW_MINIMUM = "below-minimum"
ADMIN_CONNECTIONS = 64  # our own INFO/CONFIG clients, replicas, a cluster's peers
SERVER_RESERVED_FDS = 32 + 96  # Redis reserves 32 (CONFIG_MIN_RESERVED_FDS); AOF, RDB, logs
CLIENT_SPARE_FDS = 64  # the tool's own files, event loop, stdio
# redis-benchmark runs all its connections in one event loop of 1024*10 descriptors
# (aeCreateEventLoop(1024*10) in redis-benchmark.c), less its own files
REDIS_BENCHMARK_MAX_CONNECTIONS = 10_000


class ConcurrencyError(ValueError):
    """A point this host or tool cannot run, with the reason (checked before any run)."""


@dataclass(frozen=True)
class PointRule:
    """How long a point must be to mean something (see the module docstring)."""

    min_requests_per_connection: int = 100
    warmup_s: int = 2
    max_point_s: int = 600

    def per_connection(self, test_time: int, rate: float | None,
                       connections: int) -> tuple[int, float | None]:
        """(requests per connection, the seconds that should take at ``rate``): at least
        the minimum, at least ``test_time`` long, at most ``max_point_s`` long."""
        if not (rate and math.isfinite(rate) and rate > 0):
            return self.min_requests_per_connection, None
        per_conn = max(self.min_requests_per_connection,
                       math.ceil(rate * test_time / connections))
        if per_conn * connections / rate > self.max_point_s:
            per_conn = max(1, math.floor(rate * self.max_point_s / connections))
        return per_conn, per_conn * connections / rate


def connections(cfg: ToolConfig) -> int:
    """Connections one client config opens: redis-benchmark ``-c`` (default 50), memtier
    ``-c`` x ``-t`` (its defaults 50 x 4); other tools: their ``-c`` or 1."""
    argv = cfg.argv()
    clients = _int(_value(argv, {"-c", "--clients"}), MEMTIER_DEFAULT_CLIENTS)
    if cfg.tool == "memtier_benchmark":
        return clients * _int(_value(argv, {"-t", "--threads"}), MEMTIER_DEFAULT_THREADS)
    return clients


def suite_connections(suite: Suite) -> int:
    """Connections of all the suite's client configs together (they run at once)."""
    return sum(connections(c) for c in suite.clientconfigs)


def check_reachable(suites: list[Suite], count: int) -> None:
    """Refuse a point a tool or this host cannot open, naming the limit."""
    ports = local_port_count()
    if count > ports:
        raise ConcurrencyError(
            f"{count:,} connections from one address to one server port need {count:,} "
            f"local ports; net.ipv4.ip_local_port_range gives {ports:,}")
    for suite in suites:
        for cfg in suite.clientconfigs:
            if cfg.tool == "redis-benchmark" and connections(cfg) > \
                    REDIS_BENCHMARK_MAX_CONNECTIONS:
                raise ConcurrencyError(
                    f"{suite.name}: redis-benchmark opens at most "
                    f"{REDIS_BENCHMARK_MAX_CONNECTIONS:,} connections (one event loop of "
                    f"10,240 descriptors); use a memtier_benchmark suite for "
                    f"{connections(cfg):,}")


@dataclass
class PointLimits:
    """Everything raised for one point, and what the processes really got."""

    connections: int
    maxclients: int
    server_nofile: NofileGrant
    client_nofile: NofileGrant
    # by server port: {"maxclients": CONFIG GET, "nofile": /proc/PID/limits}
    servers: dict[int, dict[str, int | None]] = field(default_factory=dict)
    # by client output path: the planned run (connections, seconds, warm-up rate)
    clients: dict[str, dict[str, Any]] = field(default_factory=dict)

    @classmethod
    def for_connections(cls, count: int, nodes: int = 1) -> PointLimits:
        """Limits for ``count`` connections to each of ``nodes`` primaries (a cluster
        client opens its connections to every primary)."""
        maxclients = count + ADMIN_CONNECTIONS
        return cls(count, maxclients, grant_nofile(maxclients + SERVER_RESERVED_FDS),
                   grant_nofile(count * max(1, nodes) + CLIENT_SPARE_FDS))

    def server_args(self) -> list[str]:
        return ["--maxclients", str(self.maxclients)]

    def record(self) -> dict[str, Any]:
        return {"maxclients": self.maxclients, "server_nofile": self.server_nofile.to_dict(),
                "client_nofile": self.client_nofile.to_dict()}


class LimitLauncher:
    """A :class:`ServerLauncher` that starts every server with the point's open-file limit
    and records what each server took."""

    def __init__(self, inner: ServerLauncher, limits: PointLimits) -> None:
        self._inner, self._limits = inner, limits

    def start(self, spec: ServerSpec) -> ServerHandle:
        spec.nofile = self._limits.server_nofile.prlimit
        handle = self._inner.start(spec)
        self._limits.servers[handle.port] = _server_took(handle)
        return handle

    def stop(self, handle: ServerHandle) -> None:
        self._inner.stop(handle)

    def __getattr__(self, name: str) -> Any:  # stop_all and the rest, unchanged
        return getattr(self._inner, name)


def _server_took(handle: ServerHandle) -> dict[str, int | None]:
    try:
        raw = handle.client(timeout=5).config_get("maxclients").get("maxclients")
        maxclients = int(raw) if raw is not None else None
    except (redis.RedisError, ValueError):
        maxclients = None  # recorded as unknown; the run itself will say what failed
    nofile = process_nofile(handle.pids[0]) if handle.pids and not handle.container_id \
        else None
    return {"maxclients": maxclients, "nofile": nofile}


class PointDriver:
    """A :class:`ClientDriver` that warms up at the point's connection count, sizes the
    measured run by :class:`PointRule`, and starts the tool with the point's file limit."""

    def __init__(self, inner: ClientDriver, rule: PointRule, limits: PointLimits,
                 test_time: int | None) -> None:
        self._inner, self._rule, self._limits = inner, rule, limits
        self._test_time = test_time
        self.tool, self.binary = inner.tool, inner.binary

    def warmup(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
               test_time: int | None) -> Invocation | None:
        prefix = out_prefix.with_name(out_prefix.name + WARMUP)
        if cfg.tool == "redis-benchmark":
            # no duration flag: by count, never sized from an assumed 100,000 ops/sec (a
            # 1-connection "2 s" warm-up then ran 200,000 requests, 16 s at 12,800 ops/sec)
            inv = self._inner.invocation(self._warmup_config(cfg), target, prefix, None)
        else:
            inv = self._inner.invocation(cfg, target, prefix, self._rule.warmup_s)
        return replace(inv, nofile=self._limits.client_nofile.prlimit)

    def invocation(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
                   test_time: int | None, rate: float | None = None) -> Invocation:
        if out_prefix.name == "preload":  # a preload is not a point of the sweep
            return self._inner.invocation(cfg, target, out_prefix, test_time, rate)
        count = connections(cfg)
        if test_time is None and _suite_requests(cfg) is not None:
            per_conn = max(self._rule.min_requests_per_connection,
                           math.ceil((_suite_requests(cfg) or 0) / count))
            seconds = per_conn * count / rate if rate else None
        else:
            floor = test_time if test_time is not None else _suite_seconds(cfg)
            per_conn, seconds = self._rule.per_connection(floor, rate, count)
        inv = self._inner.invocation(with_requests(cfg, per_conn, count), target, out_prefix,
                                     None, rate)
        self._limits.clients[str(inv.stdout_path)] = {
            "connections": count, "planned_requests_per_connection": per_conn,
            "planned_s": seconds, "warmup_rate": rate}
        # the warm-up's rate overestimates a high count's (its first seconds run before
        # every connection is open): the client's timeout allows four times the estimate,
        # up to the point's cap
        expected = max(inv.expected_duration_s,
                       min(4 * (seconds or 0.0), float(self._rule.max_point_s)))
        return replace(inv, nofile=self._limits.client_nofile.prlimit,
                       expected_duration_s=expected)

    def _warmup_config(self, cfg: ToolConfig) -> ToolConfig:
        """A redis-benchmark warm-up's count: the minimum per connection (so every connection
        is opened and used), or the tool's usual warm-up (20,000 x min(P, 10), at most the
        suite's -n) when that is more."""
        argv = cfg.argv()
        count = max(self._rule.min_requests_per_connection * connections(cfg),
                    redis_benchmark.warmup_requests(argv))
        return replace(cfg, arguments=shlex.join(redis_benchmark.set_requests(argv, count)))

    def parse(self, inv: Invocation, returncode: int) -> ToolResult:
        return self._inner.parse(inv, returncode)

    def version(self) -> str:
        return self._inner.version()


def with_requests(cfg: ToolConfig, per_conn: int, count: int) -> ToolConfig:
    """``cfg`` sending ``per_conn`` requests per connection, by count and not by time."""
    argv = cfg.argv()
    if cfg.tool == "redis-benchmark":
        argv = redis_benchmark.set_requests(argv, per_conn * count)
    elif cfg.tool == "memtier_benchmark":
        argv = [*_drop(argv, TIME_OPTS), "--requests", str(per_conn)]
    else:
        return cfg
    return replace(cfg, arguments=shlex.join(argv))


DEFAULT_POINT_S = 5  # a memtier suite that gives neither --test-time nor --requests


def _suite_seconds(cfg: ToolConfig) -> int:
    """The suite's own ``--test-time`` (memtier), else :data:`DEFAULT_POINT_S`."""
    value = _value(cfg.argv(), {"--test-time"})
    return int(value) if value and value.isdigit() else DEFAULT_POINT_S


def _suite_requests(cfg: ToolConfig) -> int | None:
    """The suite's own length as all its connections' requests together, when it gives
    one by count: redis-benchmark ``-n`` (default 100,000), memtier ``-n`` per client."""
    argv = cfg.argv()
    if cfg.tool == "redis-benchmark":
        return redis_benchmark.requests_in(argv)
    own = _value(argv, {"-n", "--requests"})
    if cfg.tool == "memtier_benchmark" and own and own.isdigit() and \
            _value(argv, {"--test-time"}) is None:
        return int(own) * connections(cfg)
    return None


def _tool_seconds(result: ToolResult | None) -> float | None:
    """The tool's own measured seconds; redis-benchmark prints none, so its requests over
    its own rate (the same clock)."""
    if result is None:
        return None
    if result.duration_s is not None:
        return result.duration_s
    rate = result.totals.ops_per_sec
    return round(result.totals.latency.count / rate, 3) if rate > 0 else None


def point_record(rule: PointRule, limits: PointLimits, client_path: str,
                 result: ToolResult | None, wall_s: float | None) -> dict[str, Any]:
    """The result's ``concurrency`` record: the rule, what ran, whether it met the rule."""
    planned = limits.clients.get(client_path, {})
    count = int(planned.get("connections") or limits.connections)
    requests = result.totals.latency.count if result is not None else 0
    per_conn = requests / count if count else 0.0
    return {"rule": asdict(rule), "connections": count, "requests": requests,
            "requests_per_connection": round(per_conn, 1),
            "meets_minimum": per_conn >= rule.min_requests_per_connection,
            "planned_requests_per_connection": planned.get("planned_requests_per_connection"),
            "planned_s": planned.get("planned_s"), "warmup_rate": planned.get("warmup_rate"),
            "duration_s": _tool_seconds(result),
            "wall_s": wall_s, "limits": limits.record()}


@dataclass
class PointSetup:
    """One point of a concurrency sweep: its rule and limits; wraps a session's launcher
    and drivers (``SessionConfig.point``) and keeps what they recorded."""

    rule: PointRule
    limits: PointLimits
    test_time: int | None = None

    def wrap(self, launcher: ServerLauncher,
             drivers: dict[str, ClientDriver]) -> tuple[ServerLauncher, dict[str, ClientDriver]]:
        wrapped = {t: PointDriver(d, self.rule, self.limits, self.test_time)
                   for t, d in drivers.items()}
        return LimitLauncher(launcher, self.limits), wrapped  # type: ignore[return-value]

    def finding(self, client_output: str, tool: ToolResult | None, duration_s: float | None,
                deployment: DeploymentRecord | None) -> tuple[dict[str, Any], Findings]:
        """The point's record for a run that finished (its first client's output, the
        tool's result, the clients' wall time, the deployment), and ``below-minimum`` with
        its reason when the run sent fewer requests per connection than the rule."""
        record = point_record(self.rule, self.limits, client_output, tool, duration_s)
        nodes = deployment.nodes if deployment else []
        record["limits"]["server_took"] = self.limits.servers.get(nodes[0].port) \
            if nodes else None
        if record["meets_minimum"]:
            return record, Findings()
        why = (f"{BELOW_MINIMUM}: {record['requests_per_connection']:,} requests per "
               f"connection, the rule asks {self.rule.min_requests_per_connection:,}")
        return record, Findings([BELOW_MINIMUM], [why])
