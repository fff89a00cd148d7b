"""A warm ``rbs`` for the tests: each ``rbs ...`` a test runs to its end (``tests.cli.rbs``)
is a real process, forked from a process that has imported the CLI once.

Why: the suite runs ``rbs`` hundreds of times, and each process paid its imports before any
work: ~0.6 s of CPU for a command module, ~1.8 s more for scipy.stats once a verdict is
computed (measured in a whole parallel phase: 394 ``rbs`` processes, 56 of them importing
scipy.stats, 219 of their 489 CPU-s). The parallel phase is CPU-bound on 2 CPUs, so that is
wall time.

What stays as it was: the child is its own process, with its own pid, stdin from
/dev/null, stdout and stderr the pipes the test reads, the environment and folder the test
gives, ``sys.argv`` as the console script sets it, Python's own signal dispositions, and
the exit path of an interpreter (non-daemon threads joined, ``atexit`` run, then its exit
code; killed by a signal, ``-N``). It runs the console script's own ``entry.main``, so
argv's credential check comes first as it does for a user. What differs: the interpreter's
start and the imports were paid once in the zygote, so nothing may be read at import time
from the environment (nothing in the package is: tests/test_zygote.py checks), and the
process title is the zygote's.

Protocol (one Unix socket per test process, the zygote's child of that process): a
request is one line of JSON ``{"argv", "env", "cwd"}`` with three file descriptors
(stdin, stdout, stderr) passed beside it (SCM_RIGHTS); the zygote forks, answers
``{"pid": N}``, and once the child has ended ``{"exit": code, "cpu_s": seconds}`` (its
CPU and its reaped children's, from ``wait4``), then closes the connection. The zygote ends when its stdin closes (the test process ended, whichever thread
started it), and kills the children still running then.

Timing tests (phase 2 of scripts/test.sh) do not use it, and ``RBS_TEST_ZYGOTE=0`` turns it
off: each ``rbs`` is then started as the console script, as before.
"""

from __future__ import annotations

import atexit
import contextlib
import gc
import importlib
import json
import os
import select
import signal
import socket
import sys
import threading
import traceback
from pathlib import Path

#: imported once here, before any fork: every command module, and what commands import on
#: first use (the statistics of a verdict, the sequential design's solver, the plots of a
#: report, the site's application)
WARM = ("scipy.stats", "scipy.optimize", "gsdesign", "matplotlib.pyplot",
        "redis_benchmarks_spec.analysis.plots", "redis_benchmarks_spec.web.app")


def _warm(script: str) -> None:
    from redis_benchmarks_spec.cli import main

    for name in ("redis_benchmarks_spec.cli.entry", *main.COMMAND_MODULES, *WARM):
        importlib.import_module(name)
    # matplotlib's first figure (its fonts, the SVG backend): ~2 s of CPU that every
    # `rbs site` paid at its start (and a report its first plot), paid once here
    from redis_benchmarks_spec.web import charts

    charts.warm()
    sys.argv = [script]
    gc.collect()
    gc.freeze()  # the children touch fewer of the zygote's pages (copy-on-write)


def _child(sock: socket.socket, conns: dict[int, socket.socket], listener: socket.socket,
           request: dict, fds: list[int], script: str) -> None:
    """In the forked child: become ``rbs argv`` and never return."""
    code = 1
    try:
        for conn in (sock, listener, *conns.values()):
            conn.close()
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
        os.closerange(3, max(os.sysconf("SC_OPEN_MAX"), 4096))
        for sig in (signal.SIGTERM, signal.SIGHUP, signal.SIGCHLD, signal.SIGALRM,
                    signal.SIGUSR1, signal.SIGUSR2, signal.SIGQUIT):
            signal.signal(sig, signal.SIG_DFL)
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_IGN)  # as Python sets it at start
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = [script, *request["argv"]]
        sys.path[0] = str(Path(script).parent)  # as the console script's interpreter has it
        from redis_benchmarks_spec.cli.entry import main
        try:
            code = main()
        except SystemExit as exc:
            code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 1)
            if not isinstance(exc.code, (int, type(None))):
                print(exc.code, file=sys.stderr)
        except Exception:  # noqa: BLE001 - printed and exit 1, as the interpreter does
            traceback.print_exc()
            code = 1
        threading._shutdown()  # type: ignore[attr-defined]  # the interpreter's join
        atexit._run_exitfuncs()
        for stream in (sys.stdout, sys.stderr):
            # a pipe the reader closed: the interpreter ignores it at exit too
            with contextlib.suppress(OSError, ValueError):
                stream.flush()
    finally:  # whatever happened, the child never returns into the zygote's loop
        os._exit(code & 0xFF if isinstance(code, int) else 1)


def serve(path: str, script: str) -> None:
    """The zygote: warm up, then fork a child for each request until stdin closes."""
    _warm(script)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(path)
    listener.listen(64)
    print("ready", flush=True)
    conns: dict[int, socket.socket] = {}  # child pid -> the connection to answer
    try:
        while True:
            ready, _, _ = select.select([listener, sys.stdin], [], [], 0.05)
            if sys.stdin in ready and not os.read(sys.stdin.fileno(), 1):
                return  # the test process is gone
            if listener in ready:
                sock, _ = listener.accept()
                _accept(sock, conns, listener, script)
            _reap(conns)
    finally:
        for pid in conns:
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass  # ended since the last reap


def _accept(sock: socket.socket, conns: dict[int, socket.socket], listener: socket.socket,
            script: str) -> None:
    sock.settimeout(30)
    data, fds = b"", []
    while not data.endswith(b"\n"):
        chunk, got, _, _ = socket.recv_fds(sock, 1 << 20, 3)
        if not chunk:
            break
        data += chunk
        fds += got
    if len(fds) != 3 or not data.endswith(b"\n"):
        for fd in fds:
            os.close(fd)
        sock.close()
        return
    request = json.loads(data)
    pid = os.fork()
    if pid == 0:
        _child(sock, conns, listener, request, fds, script)
    for fd in fds:
        os.close(fd)
    sock.sendall(json.dumps({"pid": pid}).encode() + b"\n")
    conns[pid] = sock


def _reap(conns: dict[int, socket.socket]) -> None:
    while conns:
        try:
            pid, status, usage = os.wait4(-1, os.WNOHANG)
        except ChildProcessError:
            return
        if pid == 0:
            return
        sock = conns.pop(pid, None)
        if sock is not None:
            end = {"exit": os.waitstatus_to_exitcode(status), "cpu_s": usage.ru_utime + usage.ru_stime}
            try:
                sock.sendall(json.dumps(end).encode() + b"\n")
            except OSError:
                pass  # the test stopped waiting (its own timeout killed the child)
            sock.close()


def send_request(sock: socket.socket, request: dict, fds: list[int]) -> None:
    """One request: its JSON line with the child's stdin, stdout and stderr beside it."""
    socket.send_fds(sock, [json.dumps(request).encode() + b"\n"], fds)


if __name__ == "__main__":
    serve(sys.argv[1], sys.argv[2])
