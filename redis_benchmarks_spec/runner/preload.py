"""Getting the dataset in place before the measured run: init commands, preload, check."""

from __future__ import annotations

import shlex
import subprocess
import time
from dataclasses import dataclass, replace
from pathlib import Path

import redis

from redis_benchmarks_spec.common.credentials import mask_text, redact_argv
from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import ProcessRegistry, tail
from redis_benchmarks_spec.loadgen.base import ClientDriver, ClientTarget
from redis_benchmarks_spec.runner import run_user
from redis_benchmarks_spec.suites.suite import DbConfig


class PreloadError(TestRunError):
    """The dataset could not be prepared; the test fails with this reason."""


class KeyspaceMismatch(PreloadError):
    def __init__(self, expected: int, actual: int) -> None:
        super().__init__(f"keyspace check failed: expected {expected} keys "
                         f"(dbconfig.check.keyspacelen), found {actual}")
        self.expected, self.actual = expected, actual


@dataclass
class PreloadContext:
    client: redis.Redis
    target: ClientTarget
    registry: ProcessRegistry
    out_dir: Path
    timeout_s: float
    driver: ClientDriver | None = None  # for redis-benchmark / memtier preloads
    client_cpus: list[int] | None = None


def run_init_commands(client: redis.Redis, commands: list[list[str]]) -> None:
    for argv in commands:
        try:
            client.execute_command(*argv)
        except redis.ResponseError as exc:
            shown = shlex.join(redact_argv(argv))
            raise PreloadError(f"init command {shown!r} failed: {mask_text(str(exc))}") from exc


def _connection(ctx: PreloadContext) -> redis.Redis:
    """A connection of its own whose reads may last as long as the preload may."""
    t = ctx.target
    return redis.Redis(host=t.host, port=t.port, username=t.user, password=t.password,
                       socket_timeout=ctx.timeout_s)


def run_init_lua(ctx: PreloadContext, scripts: list[str]) -> None:
    """``dbconfig.init_lua``: each script once, as ``EVAL <script> 0``."""
    if not scripts:
        return
    conn = _connection(ctx)
    try:
        for i, script in enumerate(scripts):
            try:
                conn.execute_command("EVAL", script, 0)
            except redis.TimeoutError as exc:
                raise PreloadError(f"dbconfig.init_lua[{i}] timed out after "
                                   f"{ctx.timeout_s:.0f}s") from exc
            except redis.ResponseError as exc:
                first = str(exc).splitlines()[0] if str(exc) else type(exc).__name__
                raise PreloadError(f"dbconfig.init_lua[{i}] failed: {first}") from exc
    finally:
        conn.close()


def _preload_with_command(ctx: PreloadContext, arguments: str) -> None:
    argv = shlex.split(arguments)
    if not argv:
        raise PreloadError("dbconfig.preload_tool.arguments is empty")
    conn = _connection(ctx)
    try:
        conn.execute_command(*argv)
    except redis.TimeoutError as exc:
        raise PreloadError(f"preload command timed out after {ctx.timeout_s:.0f}s") from exc
    except redis.ResponseError as exc:
        raise PreloadError(f"preload command {argv[0]} failed: {exc}") from exc
    finally:
        conn.close()


def _preload_with_tool(ctx: PreloadContext, tool_cfg) -> None:  # type: ignore[no-untyped-def]
    if ctx.driver is None:
        raise PreloadError(f"preload tool {tool_cfg.tool!r} is not available")
    # the tool takes a password only in argv: a throwaway user's (runner/run_user.py)
    target, user, _ = run_user.for_tools([ctx.client], ctx.target)
    inv = ctx.driver.invocation(tool_cfg, target, ctx.out_dir / "preload", None)
    try:
        proc = ctx.registry.spawn(inv.argv, inv.stdout_path, cpus=ctx.client_cpus)
        try:
            code = proc.wait(timeout=ctx.timeout_s)
        except subprocess.TimeoutExpired as exc:
            raise PreloadError(f"preload with {tool_cfg.tool} timed out after "
                               f"{ctx.timeout_s:.0f}s; output tail:\n"
                               f"{tail(inv.stdout_path)}") from exc
        finally:
            ctx.registry.stop(proc)
    finally:
        if user is not None:
            user.delete()
    try:
        ctx.driver.parse(inv, code)
    except (RuntimeError, ValueError) as exc:
        raise PreloadError(f"preload with {tool_cfg.tool} failed: {exc}; output tail:\n"
                           f"{tail(inv.stdout_path)}") from exc


def keyspace_size(client: redis.Redis) -> int:
    """Keys in every database (INFO keyspace), not just db 0."""
    info = client.info("keyspace")
    return sum(int(v.get("keys", 0)) for k, v in info.items()
               if k.startswith("db") and isinstance(v, dict))


def prepare_dataset(ctx: PreloadContext, db: DbConfig) -> float | None:
    """Init commands, init_lua, preload and keyspace check; returns the preload duration."""
    run_init_commands(ctx.client, db.init_commands)
    run_init_lua(ctx, db.init_lua)
    duration = None
    if db.preload_tool:
        if db.preload_tool.timeout_s is not None:  # the suite's own limit for its preload
            ctx = replace(ctx, timeout_s=db.preload_tool.timeout_s)
        start = time.monotonic()
        if db.preload_tool.tool == "redis-cli":
            _preload_with_command(ctx, db.preload_tool.arguments)
        else:
            _preload_with_tool(ctx, db.preload_tool)
        duration = time.monotonic() - start
    if db.keyspacelen is not None:
        actual = keyspace_size(ctx.client)
        if actual != db.keyspacelen:
            raise KeyspaceMismatch(db.keyspacelen, actual)
    return duration
