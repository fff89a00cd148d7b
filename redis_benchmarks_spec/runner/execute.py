"""One test run, top to bottom: server up, dataset, client(s) with telemetry, result, clean up."""

from __future__ import annotations

import logging
import math
import shutil
import subprocess
import tempfile
import time
import uuid
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import ProcessRegistry, tail
from redis_benchmarks_spec.loadgen.base import ClientDriver, ClientTarget, Invocation
from redis_benchmarks_spec.loadgen.exporter import evaluate_metrics
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies, ToolResult
from redis_benchmarks_spec.results.document import (
    STATUS_FAILED,
    STATUS_OK,
    RunContext,
    RunResult,
)
from redis_benchmarks_spec.runner.cpus import CpuAllocator, CpuPlan
from redis_benchmarks_spec.runner.launcher import (
    ServerHandle,
    ServerLauncher,
    ServerSpec,
    ServerStartError,
)
from redis_benchmarks_spec.runner.preload import PreloadContext, PreloadError, prepare_dataset
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import Topology
from redis_benchmarks_spec.telemetry import info as info_mod
from redis_benchmarks_spec.telemetry.cpu import CpuSampler, SaturationThresholds, is_client_bound

log = logging.getLogger(__name__)

CLIENT_BOUND = "client-bound"
SHARED_CORES = "shared-cores"


class RunFailure(RuntimeError):
    """A test failed for a reason worth showing; ``log_tail`` holds the evidence."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.log_tail = log_tail


@dataclass
class RunEnv:
    """Everything a test run needs that is the same for all tests of a session."""

    redis_server: str
    drivers: dict[str, ClientDriver]
    launcher: ServerLauncher
    registry: ProcessRegistry
    allocator: CpuAllocator
    context: RunContext
    results_dir: Path
    test_time: int | None = None
    preload_timeout_s: float = 600.0
    timeout_buffer_s: float = 60.0
    thresholds: SaturationThresholds = field(default_factory=SaturationThresholds)
    server_args: list[str] = field(default_factory=list)  # extra args for every server


@dataclass
class _Running:
    """State of a test in flight, so clean-up knows what to stop."""

    result: RunResult
    out_dir: Path
    server: ServerHandle | None = None
    server_dir: Path | None = None


def _new_result(suite: Suite, topology: Topology, env: RunEnv) -> RunResult:
    start_ms = int(time.time() * 1000)
    context = RunContext(**{**env.context.__dict__, "topology": topology.name})
    return RunResult(
        test_name=suite.name, run_id=f"{suite.name}:{start_ms}:{uuid.uuid4().hex[:8]}",
        status=STATUS_FAILED, context=context, suite_file=str(suite.path),
        tested_groups=suite.tested_groups, tested_commands=suite.tested_commands,
        tool=",".join(suite.tools), redis_server=env.redis_server, start_ms=start_ms)


def run_test(suite: Suite, topology: Topology, env: RunEnv) -> RunResult:
    """Run one suite on one topology; never raises for a test failure, it records it."""
    result = _new_result(suite, topology, env)
    out_dir = env.results_dir / suite.name / topology.name
    out_dir.mkdir(parents=True, exist_ok=True)
    running = _Running(result, out_dir)
    try:
        _execute(suite, topology, env, running)
        result.status = STATUS_OK
    except RunFailure as exc:
        result.reason, result.log_tail = str(exc), exc.log_tail
    except ServerErrorReplies as exc:
        result.reason = str(exc)
        result.log_tail = "\n".join(tail(Path(p), 5) for k, p in result.paths.items()
                                     if k.startswith("client_"))
    except (PreloadError, ServerStartError) as exc:
        result.reason = str(exc)
    except (redis.RedisError, OSError) as exc:
        result.reason = f"{type(exc).__name__}: {exc}"
    finally:
        _cleanup(env, running)
        result.end_ms = int(time.time() * 1000)
        result.write(out_dir / "result.json")
    return result


def _execute(suite: Suite, topology: Topology, env: RunEnv, running: _Running) -> None:
    result = running.result
    drivers = [env.drivers[c.tool] for c in suite.clientconfigs]
    # parallel clients asking 0.5 CPU each share one core
    client_cpus = max(1, math.ceil(sum(c.cpus or 1.0 for c in suite.clientconfigs) - 1e-9))
    plan = env.allocator.plan(topology.server_cpus, client_cpus)
    _record_cpus(result, plan)
    running.server_dir = Path(tempfile.mkdtemp(prefix=f"rbs-{suite.name[:40]}-"))
    args = suite.dbconfig.server_args() + topology.server_args() + env.server_args
    result.server_args = args
    running.server = env.launcher.start(ServerSpec(env.redis_server, args, plan.server,
                                                   running.server_dir))
    result.paths["server_log"] = str(running.server.log_path)
    target = ClientTarget(running.server.host, running.server.port)
    client = running.server.client()
    result.preload_duration_s = _prepare(suite, env, running, target, client, plan)
    rates = _warm_up(suite, drivers, env, running, target, plan)
    before = info_mod.snapshot(client)
    result.redis_version, result.redis_git_sha = info_mod.server_identity(before)
    try:
        tool_result = _run_clients(suite, drivers, env, running, target, plan, rates)
    except ServerErrorReplies as exc:
        count, kinds = info_mod.error_replies(before, info_mod.snapshot(client))
        raise ServerErrorReplies(max(count, exc.count),
                                 f"{exc.detail}; server errorstats: {kinds or 'none'}") from exc
    after = info_mod.snapshot(client)
    _check_errors(before, after)
    result.info_delta = info_mod.info_delta(before, after)
    result.commandstats_delta = info_mod.commandstats_delta(before, after)
    _finish_result(suite, result, tool_result)


def _record_cpus(result: RunResult, plan: CpuPlan) -> None:
    result.cpus = {"server": plan.server, "client": plan.client}
    if plan.warning:
        log.warning("%s: %s", result.test_name, plan.warning)
        result.flags.append(SHARED_CORES)


def _prepare(suite: Suite, env: RunEnv, running: _Running, target: ClientTarget,
             client: redis.Redis, plan: CpuPlan) -> float | None:
    preload = suite.dbconfig.preload_tool
    driver = env.drivers.get(preload.tool) if preload else None
    ctx = PreloadContext(client, target, env.registry, running.out_dir, env.preload_timeout_s,
                         driver, plan.client)
    return prepare_dataset(ctx, suite.dbconfig)


def _run_clients(suite: Suite, drivers: list[ClientDriver], env: RunEnv, running: _Running,
                 target: ClientTarget, plan: CpuPlan, rates: list[float | None]) -> ToolResult:
    """Start every client config at once (``clientconfigs`` run in parallel) and wait."""
    result = running.result
    invocations = [d.invocation(cfg, target, running.out_dir / f"client-{i}", env.test_time,
                                rate)
                   for i, (d, cfg, rate) in enumerate(zip(drivers, suite.clientconfigs, rates))]
    result.argv = [redact(inv.argv) for inv in invocations]
    result.paths.update({f"client_{i}_output": str(inv.stdout_path)
                         for i, inv in enumerate(invocations)})
    result.tool_version = ",".join(sorted({f"{d.tool} {d.version()}" for d in drivers}))
    sampler = CpuSampler()
    assert running.server is not None
    sampler.watch("server", running.server.pids)
    started = time.monotonic()
    procs = [env.registry.spawn(inv.argv, inv.stdout_path, cpus=plan.client)
             for inv in invocations]
    sampler.watch("client", [p.pid for p in procs])
    sampler.start()
    try:
        codes = [_wait(p, inv, env) for p, inv in zip(procs, invocations)]
    finally:
        sampler.stop()
        for p in procs:
            env.registry.stop(p)
    result.tool_duration_s = time.monotonic() - started
    _saturation(result, sampler, plan, env.thresholds)
    return _parse_all(drivers, invocations, codes)


SECRET_OPTIONS = {"-a", "--authenticate", "--pass", "--user-password"}


def redact(argv: list[str]) -> list[str]:
    """argv as stored in results: values of password options replaced."""
    out = list(argv)
    for i, arg in enumerate(out[:-1]):
        if arg in SECRET_OPTIONS:
            out[i + 1] = "***"
    return [a.split("=", 1)[0] + "=***" if a.split("=", 1)[0] in SECRET_OPTIONS and "=" in a
            else a for a in out]


def _warm_up(suite: Suite, drivers: list[ClientDriver], env: RunEnv, running: _Running,
             target: ClientTarget, plan: CpuPlan) -> list[float | None]:
    """Rates measured by each driver's warm-up (None where a driver needs none)."""
    rates: list[float | None] = []
    for i, (driver, cfg) in enumerate(zip(drivers, suite.clientconfigs)):
        inv = driver.warmup(cfg, target, running.out_dir / f"client-{i}", env.test_time)
        if inv is None:
            rates.append(None)
            continue
        proc = env.registry.spawn(inv.argv, inv.stdout_path, cpus=plan.client)
        try:
            code = _wait(proc, inv, env)
        finally:
            env.registry.stop(proc)
        rates.append(_parse_all([driver], [inv], [code]).totals.ops_per_sec or None)
    return rates


def _wait(proc: subprocess.Popen[bytes], inv: Invocation, env: RunEnv) -> int:
    expected = float(env.test_time) if env.test_time else inv.expected_duration_s
    timeout = expected * 3 + env.timeout_buffer_s
    try:
        return proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired as exc:
        raise RunFailure(f"client {inv.argv[0]} timed out after {timeout:.0f}s",
                          tail(inv.stdout_path)) from exc


def _parse_all(drivers: list[ClientDriver], invocations: list[Invocation],
               codes: list[int]) -> ToolResult:
    parsed = []
    for driver, inv, code in zip(drivers, invocations, codes):
        try:
            parsed.append(driver.parse(inv, code))
        except ServerErrorReplies:
            raise
        except (RuntimeError, ValueError) as exc:
            raise RunFailure(f"{driver.tool}: {exc}", tail(inv.stdout_path)) from exc
    if len(parsed) == 1:
        return parsed[0]
    from redis_benchmarks_spec.loadgen.memtier import merge_results
    return merge_results(parsed)


def _saturation(result: RunResult, sampler: CpuSampler, plan: CpuPlan,
                thresholds: SaturationThresholds) -> None:
    client = sampler.usage("client", len(plan.client))
    server = sampler.usage("server", len(plan.server))
    result.cpu = {"client": client, "server": server}
    if is_client_bound(client, server, thresholds):
        result.flags.append(CLIENT_BOUND)


def _check_errors(before: info_mod.InfoSnapshot, after: info_mod.InfoSnapshot) -> None:
    count, kinds = info_mod.error_replies(before, after)
    if count > 0:
        raise ServerErrorReplies(count, f"server INFO errorstats: {kinds or 'unknown kinds'}")


def _finish_result(suite: Suite, result: RunResult, tool_result: ToolResult) -> None:
    result.result = tool_result
    metrics, missing = evaluate_metrics(tool_result.data, suite.exporter.metrics)
    result.metrics, result.missing_metrics = metrics, missing


def _cleanup(env: RunEnv, running: _Running) -> None:
    if running.server is not None:
        env.launcher.stop(running.server)
        kept = running.out_dir / "redis-server.log"
        shutil.copyfile(running.server.log_path, kept)
        running.result.paths["server_log"] = str(kept)
        if running.result.status != STATUS_OK and not running.result.log_tail:
            running.result.log_tail = tail(kept)
    if running.server_dir is not None:
        shutil.rmtree(running.server_dir, ignore_errors=True)
