"""The client host's end of a two-host run: a supervisor of the load-generator processes.

Standard library only, imports nothing of this package: the runner sends this file's source
over SSH and runs it there with ``python3 -c`` (``runner/remote_client.py``), so the client
host needs Python 3 and the tools, never an install of this package at the same version.

It speaks JSON lines: requests on stdin (``{"req": n, "op": ...}``), replies and events on
stdout. Nothing it starts outlives the runner that drives it:

- stdin at EOF (the ssh client died, kill -9 of the runner included, or the connection
  dropped) and a lease that runs out (no message for ``lease_s``: a silent network
  partition) both make it kill every process group it started, delete its work directory
  and exit;
- each tool runs in its own process group with ``PR_SET_PDEATHSIG`` = SIGKILL, so kill -9
  of the supervisor itself takes the tools with it;
- each tool has a deadline of its own, enforced here, should the runner hang.
"""

from __future__ import annotations

import base64
import ctypes
import json
import os
import re
import resource
import select
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from types import FrameType
from typing import Any

PROTOCOL = 1
MAX_FETCH_BYTES = 256 << 20
STOP_GRACE_S = 10.0
_PR_SET_PDEATHSIG = 1
_NAME = re.compile(r"^[A-Za-z0-9._-]{1,200}$")  # a file of the work directory, never a path


class Child:
    """One tool process: its deadline and, once reaped, how it ended."""

    def __init__(self, proc: subprocess.Popen[bytes], deadline: float) -> None:
        self.proc, self.deadline = proc, deadline
        self.started = time.monotonic()
        self.exit: dict[str, Any] | None = None  # the "exited" event, once reaped
        self.timed_out = False


def _child_setup(parent: int, nofile: int) -> None:
    """In the child before exec: SIGKILL when the supervisor dies (and if it already did),
    and the open-file limit a tool with many connections needs (when asked for)."""
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    if os.getppid() != parent:
        os._exit(1)
    if nofile:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))


class Supervisor:
    def __init__(self, lease_s: float) -> None:
        self.lease_s = lease_s
        self.workdir = tempfile.mkdtemp(prefix="rbs-client-")
        self.children: dict[str, Child] = {}
        self.last_heard = time.monotonic()

    def send(self, msg: dict[str, Any]) -> None:
        sys.stdout.write(json.dumps(msg) + "\n")
        sys.stdout.flush()

    def hello(self) -> None:
        self.send({"event": "hello", "protocol": PROTOCOL, "host": socket.gethostname(),
                   "pid": os.getpid(), "workdir": self.workdir,
                   "cpus": sorted(os.sched_getaffinity(0)), "cpu_count": os.cpu_count(),
                   "cpu_model": _cpu_model(), "kernel": os.uname().release,
                   "python": sys.version.split()[0]})

    # -- requests ---------------------------------------------------------------------

    def handle(self, msg: dict[str, Any]) -> str | None:
        self.last_heard = time.monotonic()
        op = msg.get("op")
        if op == "ping":
            return "ping"
        handler = getattr(self, "op_" + str(op), None)
        try:
            if handler is None:
                raise ValueError(f"unknown op {op!r}")
            reply = handler(msg)
        except (OSError, ValueError, KeyError, TypeError, subprocess.SubprocessError) as exc:
            reply = {"error": f"{type(exc).__name__}: {exc}"}
        reply["req"] = msg.get("req")
        self.send(reply)
        return op

    def op_which(self, msg: dict[str, Any]) -> dict[str, Any]:
        """The first candidate that runs here: an absolute path that is executable, or a
        name on this host's PATH."""
        for cand in msg["candidates"]:
            found = cand if os.path.isabs(cand) and os.access(cand, os.X_OK) \
                else shutil.which(cand) if not os.path.isabs(cand) else None
            if found:
                return {"path": found}
        return {"path": None}

    def op_spawn(self, msg: dict[str, Any]) -> dict[str, Any]:
        key = str(msg["id"])
        name = _checked_name(msg["stdout"])
        parent, nofile = os.getpid(), int(msg.get("nofile") or 0)
        if nofile:  # refused here, in the reply, rather than as a child that cannot start
            hard = resource.getrlimit(resource.RLIMIT_NOFILE)[1]
            if hard != resource.RLIM_INFINITY and nofile > hard and os.geteuid() != 0:
                raise ValueError(f"open-file limit {nofile} is above this host's {hard}")
        with open(os.path.join(self.workdir, name), "ab") as out:
            proc = subprocess.Popen(
                [str(a) for a in msg["argv"]], cwd=self.workdir, stdin=subprocess.DEVNULL,
                stdout=out, stderr=subprocess.STDOUT, start_new_session=True,
                # safe here: the supervisor has one thread
                preexec_fn=lambda: _child_setup(parent, nofile))  # noqa: PLW1509
        warning = ""
        if msg.get("cpus"):
            try:
                os.sched_setaffinity(proc.pid, {int(c) for c in msg["cpus"]})
            except OSError as exc:
                warning = f"could not pin to cpus {msg['cpus']}: {exc}"
        self.children[key] = Child(proc, time.monotonic() + float(msg["deadline_s"]))
        return {"pid": proc.pid, "warning": warning}

    def op_stop(self, msg: dict[str, Any]) -> dict[str, Any]:
        child = self.children[str(msg["id"])]
        if child.exit is None:
            _signal_group(child.proc.pid, signal.SIGTERM)
            end = time.monotonic() + STOP_GRACE_S
            while child.exit is None and time.monotonic() < end:
                self.reap(str(msg["id"]), child)
                time.sleep(0.02)
            if child.exit is None:
                _signal_group(child.proc.pid, signal.SIGKILL)
                while child.exit is None:
                    self.reap(str(msg["id"]), child)
                    time.sleep(0.01)
        return {"exit": child.exit}

    def op_fetch(self, msg: dict[str, Any]) -> dict[str, Any]:
        files, missing, total = {}, [], 0
        for name in msg["names"]:
            path = os.path.join(self.workdir, _checked_name(name))
            if not os.path.exists(path):
                missing.append(name)
                continue
            total += os.path.getsize(path)
            if total > MAX_FETCH_BYTES:
                raise ValueError(f"outputs exceed {MAX_FETCH_BYTES} bytes")
            with open(path, "rb") as fh:
                files[name] = base64.b64encode(fh.read()).decode()
        return {"files": files, "missing": missing}

    def op_rtt(self, msg: dict[str, Any]) -> dict[str, Any]:
        """Round trips of PING to the server (an error reply such as NOAUTH is a round
        trip too), and the route this host takes to it."""
        host, port, count = str(msg["host"]), int(msg["port"]), int(msg.get("count", 20))
        samples = []
        with socket.create_connection((host, port), timeout=5) as sock:
            sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
            source = sock.getsockname()[0]
            for i in range(count + 1):
                t0 = time.perf_counter()
                sock.sendall(b"PING\r\n")
                if not sock.recv(4096):
                    raise OSError("the server closed the connection")
                if i:  # the first round trip warms the path up
                    samples.append((time.perf_counter() - t0) * 1000.0)
        return {"samples_ms": samples, "median_ms": statistics.median(samples),
                "min_ms": min(samples), "max_ms": max(samples), "source": source,
                "interface": _route_dev(host)}

    def op_quit(self, msg: dict[str, Any]) -> dict[str, Any]:
        return {"bye": True}

    # -- children ---------------------------------------------------------------------

    def reap(self, key: str, child: Child) -> None:
        if child.exit is not None:
            return
        try:
            pid, status, usage = os.wait4(child.proc.pid, os.WNOHANG)
        except ChildProcessError:
            pid, status, usage = child.proc.pid, 0, None
        if pid == 0:
            if time.monotonic() > child.deadline and not child.timed_out:
                child.timed_out = True
                _signal_group(child.proc.pid, signal.SIGKILL)
            return
        # (os.waitstatus_to_exitcode is Python 3.9+; the client host may have 3.7)
        code = -os.WTERMSIG(status) if os.WIFSIGNALED(status) else os.WEXITSTATUS(status)
        child.proc.returncode = code
        cpu = usage.ru_utime + usage.ru_stime if usage is not None else None
        exit_event = {"event": "exited", "id": key, "code": code, "cpu_s": cpu,
                      "wall_s": time.monotonic() - child.started,
                      "timed_out": child.timed_out}
        child.exit = exit_event
        self.send(exit_event)

    def reap_all(self) -> None:
        for key, child in list(self.children.items()):
            self.reap(key, child)

    def shutdown(self) -> None:
        """Every process group still running is killed, the work directory removed."""
        for child in self.children.values():
            if child.exit is None:
                _signal_group(child.proc.pid, signal.SIGKILL)
                try:
                    os.waitpid(child.proc.pid, 0)
                except ChildProcessError:
                    pass  # already reaped
        shutil.rmtree(self.workdir, ignore_errors=True)

    def loop(self) -> None:
        buf = b""
        while time.monotonic() - self.last_heard <= self.lease_s:
            ready, _, _ = select.select([0], [], [], 0.05)
            if ready:
                data = os.read(0, 1 << 16)
                if not data:
                    return  # EOF: the runner (or its connection) is gone
                buf += data
                while b"\n" in buf:
                    line, buf = buf.split(b"\n", 1)
                    if line.strip() and self.handle(json.loads(line)) == "quit":
                        return
                self.last_heard = time.monotonic()  # a long request is no silence
            self.reap_all()


def _cpu_model() -> str:
    try:
        with open("/proc/cpuinfo") as fh:
            for line in fh:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass  # not Linux, or /proc hidden: the model stays unknown
    return ""


def _checked_name(name: Any) -> str:
    if not isinstance(name, str) or not _NAME.match(name) or name in (".", ".."):
        raise ValueError(f"not a plain file name: {name!r}")
    return name


def _signal_group(pgid: int, sig: int) -> None:
    try:
        os.killpg(pgid, sig)
    except ProcessLookupError:
        pass  # the whole group is gone already


def _route_dev(host: str) -> str:
    """The interface this host reaches ``host`` through (``ip route get``), or ''."""
    ip = shutil.which("ip")
    if ip is None:
        return ""
    try:
        out = subprocess.run([ip, "-j", "route", "get", host], capture_output=True,
                             timeout=5, check=True).stdout
        routes = json.loads(out or b"[]")
    except (OSError, ValueError, subprocess.SubprocessError):
        return ""
    return str(routes[0].get("dev", "")) if routes else ""


def _exit_on_signal(signum: int, frame: FrameType | None) -> None:
    raise SystemExit(128 + signum)


def main(argv: list[str]) -> None:
    lease_s = float(argv[1]) if len(argv) > 1 else 30.0
    for sig in (signal.SIGHUP, signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, _exit_on_signal)  # clean up as at EOF
    sup = Supervisor(lease_s)
    try:
        sup.hello()
        sup.loop()
    except BrokenPipeError:
        pass  # the runner is gone: clean up below
    finally:
        sup.shutdown()


if __name__ == "__main__":
    main(sys.argv)
