"""Processes the code starts: free ports, tracked children, stopping by our own pids only."""

from __future__ import annotations

import logging
import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Sequence
from pathlib import Path

import psutil

from redis_benchmarks_spec.common.credentials import without_secrets
from redis_benchmarks_spec.common.limits import nofile_prefix

log = logging.getLogger(__name__)


# what a child process inherits from us: nothing else (the daemons hold broker, datasink and
# cloud credentials in their environment; redis-server and the clients need none of them)
INHERITED_ENV = ("PATH", "LANG", "LC_ALL", "TZ", "TMPDIR")
DEFAULT_PATH = "/usr/local/bin:/usr/bin:/bin"


def minimal_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The whole environment of a child we start, built on purpose (plus ``extra``)."""
    env = {k: os.environ[k] for k in INHERITED_ENV if k in os.environ}
    env.setdefault("PATH", DEFAULT_PATH)
    return {**env, **(extra or {})}


def tool_env(extra: dict[str, str] | None = None) -> dict[str, str]:
    """The environment of a trusted tool we run (git, docker, perf, valgrind's control):
    ours (``HOME``, ``SSH_AUTH_SOCK``, ``DOCKER_HOST`` may matter to it) less every
    credential (:func:`credentials.without_secrets`). Code from a pull request gets
    :func:`minimal_env` instead."""
    return {**without_secrets(os.environ), **(extra or {})}


def dies_with_parent(argv: Sequence[str]) -> list[str]:
    """``argv`` prefixed so the child gets SIGKILL when the thread that started it dies
    (PR_SET_PDEATHSIG via util-linux ``setpriv``, which then execs ``argv`` under the same
    pid): a kill -9 of the agent takes its redis-server and clients with it. ``setpriv``
    rather than a ``preexec_fn``, which is unsafe in a process with threads (the agent has
    keepalive and heartbeat threads)."""
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        log.warning("setpriv not found: children will outlive a killed parent")
        return list(argv)
    return [setpriv, "--pdeathsig", "KILL", "--", *argv]


def free_port(host: str = "127.0.0.1") -> int:
    """A TCP port that is free right now (the kernel picks it)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind((host, 0))
        return int(s.getsockname()[1])


def tail(path: Path, lines: int = 20) -> str:
    """The last lines of a log file, or '' when it does not exist."""
    try:
        with path.open("rb") as fh:
            fh.seek(0, os.SEEK_END)
            size = fh.tell()
            fh.seek(max(0, size - 16384))
            data = fh.read().decode(errors="replace")
    except OSError:
        return ""
    return "\n".join(data.splitlines()[-lines:])


class ProcessRegistry:
    """Every child a run starts is registered here so an interrupt can stop exactly those."""

    def __init__(self) -> None:
        self._procs: dict[int, subprocess.Popen[bytes]] = {}

    def spawn(self, argv: Sequence[str], log_path: Path, cpus: Sequence[int] | None = None,
              cwd: Path | None = None, env: dict[str, str] | None = None,
              nofile: int | None = None) -> subprocess.Popen[bytes]:
        """Start ``argv`` (never through a shell), output to ``log_path``, pinned to ``cpus``.

        The child gets ``env`` if given, else :func:`minimal_env` (never our environment),
        and dies with us (see :func:`dies_with_parent`); with ``nofile`` it starts with that
        open-file limit (see :mod:`common.limits`), the same pid all along.
        """
        if nofile is not None:
            argv = [*nofile_prefix(nofile), *argv]
        log_file = log_path.open("ab")
        try:
            proc = subprocess.Popen(
                dies_with_parent(argv), stdout=log_file, stderr=subprocess.STDOUT, cwd=cwd,
                env=minimal_env() if env is None else env,
                start_new_session=True,  # our own process group: a terminal ^C reaches us first
            )
        finally:
            log_file.close()
        if cpus:
            try:
                os.sched_setaffinity(proc.pid, set(cpus))
            except OSError as exc:
                log.warning("could not pin pid %d to cpus %s: %s", proc.pid, list(cpus), exc)
        self._procs[proc.pid] = proc
        return proc

    def adopt(self, proc: subprocess.Popen[bytes]) -> None:
        """Track a child started elsewhere (one that needs pipes, such as ssh), so an
        interrupt stops it with the others."""
        self._procs[proc.pid] = proc

    def stop(self, proc: subprocess.Popen[bytes], timeout: float = 10.0,
             kill: bool = False) -> int | None:
        """SIGTERM the process and its children, SIGKILL after ``timeout`` (at once with
        ``kill``: a process with nothing left to write); returns exit code."""
        self._procs.pop(proc.pid, None)
        if proc.poll() is not None:
            return proc.returncode
        children = _children(proc.pid)
        proc.send_signal(signal.SIGKILL if kill else signal.SIGTERM)
        try:
            proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            log.warning("pid %d did not stop within %.0fs; killing it", proc.pid, timeout)
            proc.kill()
            proc.wait(timeout=timeout)
        for child in children:
            _kill_quietly(child)
        return proc.returncode

    def stop_all(self, timeout: float = 10.0) -> None:
        for proc in list(self._procs.values()):
            self.stop(proc, timeout)

    @property
    def running(self) -> list[int]:
        return [pid for pid, p in self._procs.items() if p.poll() is None]


def _children(pid: int) -> list[psutil.Process]:
    try:
        return psutil.Process(pid).children(recursive=True)
    except psutil.NoSuchProcess:
        return []


def _kill_quietly(proc: psutil.Process) -> None:
    try:
        proc.kill()
    except psutil.NoSuchProcess:
        return  # already gone: exactly what we wanted


def wait_for(predicate, timeout: float, interval: float = 0.05) -> bool:  # type: ignore[no-untyped-def]
    """Poll ``predicate`` until it returns true or ``timeout`` seconds pass."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(interval)
    return bool(predicate())
