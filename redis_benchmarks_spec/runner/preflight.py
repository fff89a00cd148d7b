"""Before an A/B spends its first run: each side's server starts and answers PING once, and
each client tool the suites use runs once (``--version``). A side that cannot start is named
with its binary and the loader's or the server's own message, instead of a session that runs
every baseline run and then reports ``0 run(s)`` for the other side.
"""

from __future__ import annotations

import subprocess
import tempfile
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import ProcessRegistry, minimal_env, tail
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.launcher import ProcessLauncher, ServerSpec, ServerStartError
from redis_benchmarks_spec.suites.suite import Suite

TOOL_TIMEOUT_S = 30.0
START_TIMEOUT_S = 15.0


@dataclass(frozen=True)
class ServerSide:
    """One side to try: its name, binary and the arguments and environment it runs with."""

    name: str
    binary: str
    args: list[str]
    env: dict[str, str]


def _reason(log: Path, exc: Exception) -> str:
    """The server's last words (a loader's ``error while loading shared libraries: ...``,
    a config error), else the start error's first line."""
    lines = [line.strip() for line in tail(log, 8).splitlines() if line.strip()]
    return lines[-1] if lines else str(exc).splitlines()[0]


def check_server(side: ServerSide, workdir: Path) -> str:
    """'' when ``side`` starts and answers PING, else one line naming side, binary, why."""
    registry = ProcessRegistry()
    launcher = ProcessLauncher(registry, side.env)
    spec = ServerSpec(side.binary, list(side.args), [], workdir / side.name,
                      start_timeout=START_TIMEOUT_S)
    try:
        launcher.stop(launcher.start(spec))
    except (ServerStartError, OSError) as exc:
        return (f"{side.name} side: {side.binary} did not start: "
                f"{_reason(spec.workdir / 'redis-server.log', exc)}")
    finally:
        registry.stop_all()
    return ""


def check_tool(tool: str, binary: str) -> str:
    """'' when ``binary --version`` runs (exit 0), else one line with its message."""
    try:
        done = subprocess.run([binary, "--version"], capture_output=True, text=True,
                              timeout=TOOL_TIMEOUT_S, env=minimal_env(), check=False)
    except (OSError, subprocess.TimeoutExpired) as exc:
        return f"client tool {tool}: {binary} did not run: {exc}"
    if done.returncode != 0:
        said = (done.stderr or done.stdout).strip().splitlines()
        return (f"client tool {tool}: {binary} --version exited {done.returncode}"
                + (f": {said[-1]}" if said else ""))
    return ""


def preflight(sides: list[ServerSide], tools: ToolPaths, suites: list[Suite]) -> list[str]:
    """Every problem found, one line each (empty: both sides and the tools are alive)."""
    problems = []
    with tempfile.TemporaryDirectory(prefix="rbs-preflight-") as tmp:
        for side in sides:
            problems.append(check_server(side, Path(tmp)))
    resolved = tools.resolve()
    for tool in sorted({t for s in suites for t in s.tools}):
        binary = resolved.binaries.get(tool)
        if binary:  # a missing tool is reported by the run itself (its suites are skipped)
            problems.append(check_tool(tool, binary))
    return [p for p in problems if p]
