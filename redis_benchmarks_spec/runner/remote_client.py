"""The runner's end of a two-host run: one SSH connection to the client host, on which the
supervisor (``common/supervisor.py``, sent as source) starts, stops and reports the tools.

Why SSH rather than the broker's streams: the run stays one object on one host from plan to
written result (the server side drives the client side, as redisbench-admin does), and the
connection itself is the liveness signal both ways. kill -9 of this process kills the ssh
client (``PR_SET_PDEATHSIG``), the connection closes, the supervisor reads EOF and kills its
tools; kill -9 of the supervisor (or of the client host's sshd session) ends the connection,
the waits here fail at once, and the run stops its servers as on any failure. A silent
partition is caught by the supervisor's lease (we ping every ``lease_s / 4``) and by ssh's
``ServerAliveInterval`` here.
"""

from __future__ import annotations

import base64
import json
import logging
import os
import shlex
import shutil
import subprocess
import threading
import time
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.common import supervisor
from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import ProcessRegistry, dies_with_parent, tail
from redis_benchmarks_spec.runner.client_host import ClientHostConfig

log = logging.getLogger(__name__)

CALL_TIMEOUT_S = 60.0
# after "quit", ssh ends with the supervisor: how long close lets it before stopping it
QUIT_WAIT_S = 5.0


class RemoteClientError(TestRunError):
    """The client host could not be reached or stopped answering; says which and why."""


def ssh_argv(config: ClientHostConfig, ssh: str) -> list[str]:
    """ssh with no prompt (BatchMode), no pty, keepalives, and the supervisor as command."""
    argv = [ssh, "-T", "-o", "BatchMode=yes",
            "-o", f"ConnectTimeout={max(1, int(config.connect_timeout_s))}",
            "-o", "ServerAliveInterval=5", "-o", "ServerAliveCountMax=3"]
    if config.ssh_config is not None:
        argv += ["-F", str(config.ssh_config)]
    source = Path(supervisor.__file__).read_text()
    # sshd runs the command with the user's shell: one quoted word each, exec'd in place
    command = "exec " + shlex.join([config.python, "-c", source, str(config.lease_s)])
    return [*argv, "--", config.ssh, command]


def _ssh_env() -> dict[str, str]:
    """ssh's environment: the minimal one, plus the operator's agent socket if any."""
    from redis_benchmarks_spec.common.process import minimal_env
    agent = os.environ.get("SSH_AUTH_SOCK")
    return minimal_env({"SSH_AUTH_SOCK": agent} if agent else None)


class RemoteClient:
    """One supervisor on the client host, reached over SSH (see the module doc)."""

    def __init__(self, config: ClientHostConfig, registry: ProcessRegistry,
                 log_path: Path) -> None:
        self.config, self.registry, self.log_path = config, registry, log_path
        self.proc: subprocess.Popen[bytes] | None = None
        self.hello: dict[str, Any] = {}
        self._cond = threading.Condition()
        self._replies: dict[int, dict[str, Any]] = {}
        self._exits: dict[str, dict[str, Any]] = {}
        self._next = 0
        self._dead = ""  # why the connection ended, once it has
        self._write = threading.Lock()

    @property
    def name(self) -> str:
        return self.config.ssh

    @property
    def lost(self) -> bool:
        """The connection has ended (the supervisor has killed its tools, or soon will)."""
        return bool(self._dead)

    def open(self) -> dict[str, Any]:
        """Connect and start the supervisor; its hello (host, pid, CPUs) is returned.
        Call from the thread that owns the run: the ssh client dies with that thread."""
        ssh = shutil.which("ssh")
        if ssh is None:
            raise RemoteClientError("ssh not found on PATH (apt-get install openssh-client)")
        self.log_path.parent.mkdir(parents=True, exist_ok=True)
        with self.log_path.open("ab") as err:
            self.proc = subprocess.Popen(
                dies_with_parent(ssh_argv(self.config, ssh)), stdin=subprocess.PIPE,
                stdout=subprocess.PIPE, stderr=err, env=_ssh_env(), start_new_session=True)
        self.registry.adopt(self.proc)
        threading.Thread(target=self._read, name="client-host-reader", daemon=True).start()
        deadline = time.monotonic() + self.config.connect_timeout_s + 10
        with self._cond:
            while not self.hello and not self._dead and time.monotonic() < deadline:
                self._cond.wait(0.1)
        if not self.hello:
            self.close()
            raise RemoteClientError(f"client host {self.name}: no answer from the supervisor "
                                    f"over ssh ({self._dead or 'timed out'}): "
                                    f"{self._ssh_said()}")
        if self.hello.get("protocol") != supervisor.PROTOCOL:
            self.close()
            raise RemoteClientError(f"client host {self.name}: supervisor protocol "
                                    f"{self.hello.get('protocol')!r}, want {supervisor.PROTOCOL}")
        threading.Thread(target=self._ping, name="client-host-lease", daemon=True).start()
        return self.hello

    def _ssh_said(self) -> str:
        return " | ".join(tail(self.log_path, 3).splitlines()) or "ssh printed nothing"

    def _read(self) -> None:
        assert self.proc is not None and self.proc.stdout is not None
        try:
            for line in self.proc.stdout:
                self._take(line)
        except OSError as exc:
            log.warning("client host %s: reading from ssh: %s", self.name, exc)
        code = self.proc.wait()
        with self._cond:
            self._dead = f"ssh exited with code {code}"
            self._cond.notify_all()

    def _take(self, line: bytes) -> None:
        """One line from the client host: a message, or something a login script printed
        there before the supervisor started (logged and skipped)."""
        try:
            msg = json.loads(line)
            if not isinstance(msg, dict):
                raise TypeError("not an object")
            with self._cond:
                if msg.get("event") == "hello":
                    self.hello = msg
                elif msg.get("event") == "exited":
                    self._exits[str(msg["id"])] = msg
                elif "req" in msg:
                    self._replies[int(msg["req"])] = msg
                self._cond.notify_all()
        except (ValueError, KeyError, TypeError) as exc:
            log.warning("client host %s: skipped a line that is no message (%s): %.200r",
                        self.name, exc, line)

    def _ping(self) -> None:
        while not self._dead:
            time.sleep(self.config.lease_s / 4)
            try:
                self._send({"op": "ping"})
            except RemoteClientError:
                return

    def _send(self, msg: dict[str, Any]) -> None:
        assert self.proc is not None and self.proc.stdin is not None
        data = (json.dumps(msg) + "\n").encode()
        with self._write:
            try:
                self.proc.stdin.write(data)
                self.proc.stdin.flush()
            except (BrokenPipeError, ValueError, OSError) as exc:
                raise self._lost(f"write failed: {exc}") from exc

    def _lost(self, why: str) -> RemoteClientError:
        return RemoteClientError(f"client host {self.name}: connection lost ({why}; "
                                 f"{self._dead or 'ssh still running'}): {self._ssh_said()}")

    def call(self, op: str, timeout: float = CALL_TIMEOUT_S, **args: Any) -> dict[str, Any]:
        """One request and its reply; ``RemoteClientError`` when it fails or never comes."""
        with self._cond:
            self._next += 1
            req = self._next
        self._send({"req": req, "op": op, **args})
        deadline = time.monotonic() + timeout
        with self._cond:
            while req not in self._replies:
                if self._dead:
                    raise self._lost(f"waiting for {op}")
                if time.monotonic() > deadline:
                    raise self._lost(f"no reply to {op} within {timeout:.0f}s")
                self._cond.wait(0.1)
            reply = self._replies.pop(req)
        if reply.get("error"):
            raise RemoteClientError(f"client host {self.name}: {op} failed: {reply['error']}")
        return reply

    def wait_exit(self, key: str, timeout: float) -> dict[str, Any] | None:
        """The tool's exit record, or None when it is still running after ``timeout``."""
        deadline = time.monotonic() + timeout
        with self._cond:
            while key not in self._exits:
                if self._dead:
                    raise self._lost(f"waiting for client {key}")
                if time.monotonic() > deadline:
                    return None
                self._cond.wait(0.1)
            return self._exits[key]

    def fetch(self, names: list[str], into: Path) -> list[str]:
        """Copy the named output files here; returns the names that did not exist there."""
        reply = self.call("fetch", names=names)
        for name in names:  # only what was asked for, never a name the reply made up
            data = reply["files"].get(name)
            if data is not None:
                (into / name).write_bytes(base64.b64decode(data))
        return [n for n in names if n not in reply["files"]]

    def close(self) -> None:
        """Ask the supervisor to clean up and leave, let ssh end with it (it exits once the
        remote command has), then stop ssh by its own pid if it has not."""
        if self.proc is None:
            return
        if not self._dead:
            try:
                self.call("quit", timeout=15)
            except RemoteClientError as exc:
                log.warning("%s", exc)
        if self.proc.stdin is not None:
            try:
                self.proc.stdin.close()
            except OSError:
                pass  # the pipe is gone with ssh: nothing left to close
        try:
            self.proc.wait(timeout=QUIT_WAIT_S)
        except subprocess.TimeoutExpired:
            log.warning("client host %s: ssh still open %.0f s after the supervisor quit; "
                        "stopping it", self.config.ssh, QUIT_WAIT_S)
        self.registry.stop(self.proc)
