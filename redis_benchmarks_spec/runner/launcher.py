"""Starting one Redis node. The runner only sees :class:`ServerLauncher` (this process launcher
and ``docker_launcher.DockerLauncher``); deployments of several nodes (replicas, clusters) are
built from it in ``deployment.py``."""

from __future__ import annotations

import logging
import os
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis

from redis_benchmarks_spec.common.credentials import split_server_secrets
from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import (
    ProcessRegistry,
    free_port,
    minimal_env,
    tail,
    wait_for,
)
from redis_benchmarks_spec.runner.server_env import server_env
from redis_benchmarks_spec.suites.auth import Credentials

log = logging.getLogger(__name__)


class ServerStartError(TestRunError):
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
    auth: Credentials | None = None  # what the suite's configuration makes the server require
    # the address it listens on: loopback, or this host's address on the benchmark network
    # when the client runs on another host (runner/client_host.py)
    bind: str = "127.0.0.1"
    nofile: int | None = None  # open-file limit to start with (None: inherited)


@dataclass
class ServerHandle:
    """A running Redis the runner can talk to, with the ids it is stopped by."""

    host: str
    port: int
    pids: list[int]
    log_path: Path
    _procs: list[subprocess.Popen[bytes]] = field(default_factory=list, repr=False)
    container_id: str = ""  # set by the Docker launcher
    # who new connections authenticate as (the runner moves it on once init commands ran)
    auth: Credentials | None = field(default=None, repr=False)
    refused: str = ""  # why the server refused our credentials while starting, if it did
    # nothing to write at exit (a server under callgrind: its window's dump is read before
    # it stops): stopped by SIGKILL, not SIGTERM and valgrind's exit (~0.1 s a counted run)
    disposable: bool = False

    def client(self, timeout: float = 30.0) -> redis.Redis:
        return redis.Redis(host=self.host, port=self.port, socket_timeout=timeout,
                           decode_responses=True, **auth_options(self.auth))


SECRET_CONF = "rbs-secrets.conf"


def secret_conf(workdir: Path, args: list[str]) -> tuple[list[str], Path | None]:
    """(``args`` without the parameters that hold a password, the file holding those).

    ``requirepass``, ``masterauth`` and ``user`` directives go to a config file (mode 0600,
    in the node's private folder, deleted once the server answered) that redis-server
    reads as its config file: on the command line they would be in ``ps`` for every local
    user (common/credentials.py ``split_server_secrets``).
    """
    public, lines = split_server_secrets(args)
    if not lines:
        return public, None
    path = workdir / SECRET_CONF
    fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write("".join(lines))
    return public, path


def auth_options(auth: Credentials | None) -> dict[str, Any]:
    """redis-py connection arguments for ``auth`` (none for a server without AUTH)."""
    return {} if auth is None else {"username": auth.user, "password": auth.password}


def answers_ping(handle: ServerHandle) -> bool:
    """True when the server answers PING, or refused our credentials (``handle.refused``
    says so, and the start fails at once with that reason instead of timing out)."""
    try:
        return bool(handle.client(timeout=1).ping())
    except redis.AuthenticationError as exc:
        handle.refused = str(exc) or type(exc).__name__
        return True
    except (redis.ConnectionError, redis.TimeoutError):
        return False
    except redis.ResponseError as exc:
        # LOADING: the server is up but not ready yet
        return "LOADING" not in str(exc)


def refused_error(handle: ServerHandle, what: str) -> ServerStartError:
    """The start failure when the server is up but will not let us in."""
    who = "no credentials" if handle.auth is None else \
        f"the password the suite declares for user {handle.auth.user or 'default'}"
    return ServerStartError(f"{what} on port {handle.port} is up but refused the runner's "
                            f"connection ({handle.refused}); it was given {who} "
                            "(requirepass / ACL users in dbconfig, see docs/suites-and-inputs.md)")


def bind_args(address: str) -> list[str]:
    """``--bind``; off loopback also ``--protected-mode no``, without which a server with no
    password refuses every client that is not local (the benchmark network is the lab's)."""
    if address == "127.0.0.1":
        return ["--bind", address]
    return ["--bind", address, "--protected-mode", "no"]


class ServerLauncher(Protocol):
    def start(self, spec: ServerSpec) -> ServerHandle: ...

    def stop(self, handle: ServerHandle) -> None: ...


class ProcessLauncher:
    """redis-server as a local child process, pinned, on a free port, in its own directory."""

    def __init__(self, registry: ProcessRegistry, env: dict[str, str] | None = None) -> None:
        self.registry = registry
        self.env = dict(env or {})  # --server-env, over what the binary needs (server_env)

    def start(self, spec: ServerSpec) -> ServerHandle:
        spec.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port(spec.bind)
        log_path = spec.workdir / "redis-server.log"
        args, conf = secret_conf(spec.workdir, spec.args)
        argv = [*spec.wrapper, spec.binary, *([str(conf)] if conf else []), "--port", str(port),
                *bind_args(spec.bind), "--dir", str(spec.workdir), "--daemonize", "no",
                "--logfile", "",
                # keep a test server from dumping a stale RDB into the test directory
                "--save", "", *args]
        env = minimal_env(server_env(spec.binary, self.env))
        try:
            proc = self.registry.spawn(argv, log_path, cpus=spec.cpus, cwd=spec.workdir,
                                       env=env, nofile=spec.nofile)
            handle = ServerHandle(spec.bind, port, [proc.pid], log_path, [proc],
                                  auth=spec.auth, disposable=bool(spec.wrapper))
            up = wait_for(lambda: self._answers(handle, proc), spec.start_timeout)
        finally:
            if conf is not None:
                conf.unlink(missing_ok=True)  # read at start; CONFIG REWRITE is not ours
        if handle.refused and proc.poll() is None:
            self.stop(handle)
            raise refused_error(handle, f"redis-server ({spec.binary})")
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
        return answers_ping(handle)

    def stop(self, handle: ServerHandle) -> None:
        for proc in handle._procs:
            self.registry.stop(proc, kill=handle.disposable)
