"""Starting one Redis node. The runner only sees :class:`ServerLauncher` (this process launcher
and ``docker_launcher.DockerLauncher``); deployments of several nodes (replicas, clusters) are
built from it in ``deployment.py``."""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Protocol

import redis

from redis_benchmarks_spec.common.process import ProcessRegistry, free_port, tail, wait_for

log = logging.getLogger(__name__)


class ServerStartError(RuntimeError):
    """Redis did not come up; the message carries the reason and the log tail."""


@dataclass
class ServerSpec:
    """What to start: binary, arguments (suite config + topology), cores and a directory."""

    binary: str
    args: list[str]
    cpus: list[int]
    workdir: Path
    start_timeout: float = 15.0
    wrapper: list[str] = field(default_factory=list)  # argv prefix (a profiler, e.g. callgrind)


@dataclass
class ServerHandle:
    """A running Redis the runner can talk to, with the ids it is stopped by."""

    host: str
    port: int
    pids: list[int]
    log_path: Path
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)
    container_id: str = ""  # set by the Docker launcher

    def client(self, timeout: float = 30.0) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=timeout,
                           decode_responses=True)


class ServerLauncher(Protocol):
    def start(self, spec: ServerSpec) -> ServerHandle: ...

    def stop(self, handle: ServerHandle) -> None: ...


class ProcessLauncher:
    """redis-server as a local child process, pinned, on a free port, in its own directory."""

    def __init__(self, registry: ProcessRegistry) -> None:
        self.registry = registry

    def start(self, spec: ServerSpec) -> ServerHandle:
        spec.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port()
        log_path = spec.workdir / "redis-server.log"
        argv = [*spec.wrapper, spec.binary, "--port", str(port), "--bind", "127.0.0.1", "--dir",
                str(spec.workdir), "--daemonize", "no", "--logfile", "",
                # keep a test server from dumping a stale RDB into the test directory
                "--save", "", *spec.args]
        proc = self.registry.spawn(argv, log_path, cpus=spec.cpus, cwd=spec.workdir)
        handle = ServerHandle("127.0.0.1", port, [proc.pid], log_path, [proc])
        up = wait_for(lambda: self._answers(handle, proc), spec.start_timeout)
        if not up or proc.poll() is not None:
            self.stop(handle)
            raise ServerStartError(
                f"redis-server ({spec.binary}) did not answer PING on port {port} within "
                f"{spec.start_timeout:.0f}s (exit code {proc.returncode}); log tail:\n"
                f"{tail(log_path)}")
        return handle

    @staticmethod
    def _answers(handle: ServerHandle, proc: subprocess.Popen[bytes]) -> bool:
        if proc.poll() is not None:
            return True  # exited: stop polling, start() reports it
        try:
            return bool(handle.client(timeout=1).ping())
        except (redis.ConnectionError, redis.TimeoutError):
            return False
        except redis.ResponseError as exc:
            # LOADING: the server is up but not ready yet
            return "LOADING" not in str(exc)

    def stop(self, handle: ServerHandle) -> None:
        for proc in handle._procs:
            self.registry.stop(proc)
