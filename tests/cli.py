"""One way for tests to call ``rbs`` and one way to write a suite.

``rbs`` runs the installed CLI as a user does: its own process, with a timeout so a hung
command fails its test instead of the whole run. The process is forked from a zygote that
imported the CLI once (tests/rbs_zygote.py says what that changes and what it does not);
``RBS_TEST_ZYGOTE=0``, and the timing tests, start the console script instead. ``rbs_in_process`` calls ``main(argv)`` here,
for tests that read what the command wrote with ``capsys`` or need no process.
``write_suite`` writes one suite file as the catalog reads them: ``<folder>/<name>.yml``.
"""

from __future__ import annotations

import atexit
import io
import json
import os
import select
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Mapping
from pathlib import Path

from redis_benchmarks_spec.cli.main import main
from tests import component_audit
from tests.rbs_zygote import send_request

REPO = Path(__file__).resolve().parents[1]
#: the CLI the tests run; with PYTHONPATH set, it imports the checkout under test
RBS = str(REPO / ".venv" / "bin" / "rbs")


def rbs(*args: str, timeout: float = 300, env: Mapping[str, str] | None = None,
        cwd: Path | None = None) -> subprocess.CompletedProcess[str]:
    """``rbs *args`` in its own process; its output captured as text, never raising on a
    non-zero exit. ``env`` adds to (or overrides) this process's environment."""
    if not _zygote_wanted():
        return subprocess.run([RBS, *args], capture_output=True, text=True, timeout=timeout,
                              check=False,
                              env={**os.environ, **env} if env is not None else None, cwd=cwd)
    return _Zygote.get().run(list(args), {**os.environ, **(env or {})},
                             str(cwd or Path.cwd()), timeout)


def _zygote_wanted() -> bool:
    return os.environ.get("RBS_TEST_ZYGOTE", "1") != "0" and \
        os.environ.get("RBS_TEST_PHASE") != "timing"


class _Zygote:
    """This process's zygote (tests/rbs_zygote.py), started at the first ``rbs``."""

    _one: _Zygote | None = None
    _lock = threading.Lock()

    @classmethod
    def get(cls) -> _Zygote:
        with cls._lock:
            if cls._one is None or cls._one.proc.poll() is not None:
                cls._one = cls()
            return cls._one

    def __init__(self) -> None:
        self.dir = tempfile.mkdtemp(prefix="rbs-zygote-")
        self.path = os.path.join(self.dir, "sock")
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.rbs_zygote", self.path, RBS], cwd=REPO,
            stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        ready = self.proc.stdout.readline() if self.proc.stdout else b""
        if ready.strip() != b"ready":
            self.proc.kill()
            raise RuntimeError(f"the rbs zygote did not start (exit {self.proc.wait(30)})")
        atexit.register(self.close)

    def close(self) -> None:
        if self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait(timeout=30)
        shutil.rmtree(self.dir, ignore_errors=True)

    def spawn(self, argv: list[str], env: dict[str, str], cwd: str,
              fds: tuple[int, int, int]) -> WarmProcess:
        """``rbs argv`` forked with ``fds`` as its stdin, stdout and stderr."""
        component_audit.started([RBS, *argv])
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(self.path)
            send_request(sock, {"argv": argv, "env": env, "cwd": cwd}, list(fds))
            return WarmProcess(sock, [RBS, *argv])
        except BaseException:
            sock.close()
            raise

    def run(self, argv: list[str], env: dict[str, str], cwd: str,
            timeout: float) -> subprocess.CompletedProcess[str]:
        deadline = time.monotonic() + timeout
        out_r, out_w = os.pipe()
        err_r, err_w = os.pipe()
        try:
            with open(os.devnull, "rb") as null:
                proc = self.spawn(argv, env, cwd, (null.fileno(), out_w, err_w))
        finally:
            os.close(out_w)
            os.close(err_w)
        try:
            out, err = _read_both(out_r, err_r, deadline)
            code = proc.wait(max(deadline - time.monotonic(), 0.1))
        except (TimeoutError, subprocess.TimeoutExpired) as exc:
            raise subprocess.TimeoutExpired(proc.args, timeout) from exc
        finally:
            if proc.returncode is None:  # as subprocess.run: a child it gave up on is killed
                proc.kill()
        return subprocess.CompletedProcess(proc.args, code, _text(out), _text(err))


class WarmProcess:
    """An ``rbs`` forked from the zygote, with the part of ``Popen`` tests use: ``pid``,
    ``poll``, ``wait``, ``send_signal``, ``terminate``, ``kill``, ``returncode``. The zygote
    reaps it and says how it ended (and its CPU, filed with the test running then)."""

    def __init__(self, sock: socket.socket, args: list[str]) -> None:
        self._sock, self.args = sock, args
        self._buf = b""
        self.returncode: int | None = None
        self.pid = int(self._line(None)["pid"])

    def _line(self, timeout: float | None) -> dict:
        self._sock.settimeout(timeout)
        while b"\n" not in self._buf:
            chunk = self._sock.recv(4096)  # BlockingIOError/TimeoutError: nothing yet
            if not chunk:
                raise RuntimeError("the rbs zygote closed the connection (see its stderr)")
            self._buf += chunk
        line, self._buf = self._buf.split(b"\n", 1)
        return json.loads(line)

    def _ended(self, timeout: float | None) -> int | None:
        if self.returncode is None:
            try:
                end = self._line(timeout)
            except (BlockingIOError, TimeoutError):
                return None
            self.returncode = int(end["exit"])
            self._sock.close()
            component_audit.add_cpu(float(end["cpu_s"]))
        return self.returncode

    def poll(self) -> int | None:
        return self._ended(0)

    def wait(self, timeout: float | None = None) -> int:
        code = self._ended(timeout)
        if code is None:
            raise subprocess.TimeoutExpired(self.args, timeout or 0)
        return code

    def send_signal(self, sig: int) -> None:
        if self.poll() is None:
            try:
                os.kill(self.pid, sig)
            except ProcessLookupError:
                pass  # ended since the poll: the zygote's answer is on its way

    def terminate(self) -> None:
        self.send_signal(signal.SIGTERM)

    def kill(self) -> None:
        self.send_signal(signal.SIGKILL)


def rbs_daemon(args: list[str], log: Path, env: Mapping[str, str]) -> WarmProcess | subprocess.Popen[bytes]:
    """``rbs *args`` left running, its stdout and stderr appended to ``log``, the environment
    exactly ``env``: forked from the zygote (a test that reads a daemon's ``/proc`` argv or
    environment starts it with ``subprocess.Popen`` instead: the zygote's title is not its)."""
    with log.open("ab") as out:
        if not _zygote_wanted():
            return subprocess.Popen([RBS, *args], stdout=out, stderr=subprocess.STDOUT,
                                    env=dict(env))
        with open(os.devnull, "rb") as null:
            return _Zygote.get().spawn(list(args), dict(env), str(Path.cwd()),
                                       (null.fileno(), out.fileno(), out.fileno()))


def _reply(replies: io.BufferedReader) -> dict:
    line = replies.readline()
    if not line:
        raise RuntimeError("the rbs zygote closed the connection (see its stderr)")
    return json.loads(line)


def _read_both(out_fd: int, err_fd: int, deadline: float) -> tuple[bytes, bytes]:
    """Both pipes read to their end (closing them), or TimeoutError at ``deadline``."""
    bufs: dict[int, list[bytes]] = {out_fd: [], err_fd: []}
    open_fds = [out_fd, err_fd]
    try:
        while open_fds:
            left = deadline - time.monotonic()
            if left <= 0:
                raise TimeoutError
            ready, _, _ = select.select(open_fds, [], [], left)
            for fd in ready:
                chunk = os.read(fd, 1 << 16)
                if chunk:
                    bufs[fd].append(chunk)
                else:
                    open_fds.remove(fd)
    finally:
        os.close(out_fd)
        os.close(err_fd)
    return b"".join(bufs[out_fd]), b"".join(bufs[err_fd])


def _text(data: bytes) -> str:
    """As ``subprocess.run(text=True)`` decodes: the locale's encoding, universal newlines."""
    return io.TextIOWrapper(io.BytesIO(data)).read()


def rbs_in_process(argv: list[str]) -> int:
    """``rbs argv`` through ``main`` in this process; its exit code."""
    return int(main(argv))


def write_suite(folder: Path, name: str, text: str) -> Path:
    """Write ``text`` as the suite file ``<folder>/<name>.yml`` (the folder made if needed)
    and return the file's path."""
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.yml"
    path.write_text(text)
    return path
