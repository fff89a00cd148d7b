"""Where a test's client tools run: on this host (the default, loopback) or on the
platform's client host over SSH. The runner starts, waits for and stops tools through this
one interface, and reads their output files from the same local paths either way."""

from __future__ import annotations

import functools
import ipaddress
import logging
import socket
import subprocess
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol, TypeVar, cast

import psutil

from redis_benchmarks_spec.common.process import ProcessRegistry, minimal_env
from redis_benchmarks_spec.loadgen.base import Invocation
from redis_benchmarks_spec.results.document import CpuUsage
from redis_benchmarks_spec.runner.client_host import ClientHostConfig
from redis_benchmarks_spec.runner.remote_client import RemoteClient, RemoteClientError

log = logging.getLogger(__name__)

DEADLINE_MARGIN_S = 60.0


class ClientProc(Protocol):
    pid: int


class ClientSide(Protocol):
    remote: bool

    def spawn(self, inv: Invocation, cpus: list[int], timeout_s: float) -> ClientProc:
        """Started and pinned; ``timeout_s`` is the wait the runner will give it."""
        ...

    def wait(self, proc: Any, timeout: float) -> int:
        """The exit code; ``subprocess.TimeoutExpired`` (tool stopped, output kept)."""
        ...

    def stop(self, proc: Any) -> None:
        """Stopped by its own id, its output files brought to their local paths."""
        ...

    def cpus(self, count: int, local: list[int]) -> list[int]: ...

    def usage(self, procs: list[Any], cores: int) -> CpuUsage | None:
        """CPU the tools used, when this side measures it (None: the sampler does)."""
        ...

    def network(self, server_host: str, server_port: int) -> dict[str, Any]:
        """The result's ``network`` record ({} for the loopback run)."""
        ...

    def close(self) -> None: ...


class LocalClients:
    """Tools as children of this process, pinned, stopped through the registry."""

    remote = False

    def __init__(self, registry: ProcessRegistry) -> None:
        self.registry = registry

    def spawn(self, inv: Invocation, cpus: list[int],
              timeout_s: float) -> subprocess.Popen[bytes]:
        return self.registry.spawn(inv.argv, inv.stdout_path, cpus=cpus, nofile=inv.nofile,
                                   env=minimal_env(inv.env) if inv.env else None)

    def wait(self, proc: subprocess.Popen[bytes], timeout: float) -> int:
        return proc.wait(timeout=timeout)

    def stop(self, proc: subprocess.Popen[bytes]) -> None:
        self.registry.stop(proc)

    def cpus(self, count: int, local: list[int]) -> list[int]:
        return local

    def usage(self, procs: list[Any], cores: int) -> CpuUsage | None:
        return None

    def network(self, server_host: str, server_port: int) -> dict[str, Any]:
        return {}  # loopback: the document stays as it always was

    def close(self) -> None:
        return None


@dataclass
class RemoteProc:
    key: str
    pid: int  # on the client host
    inv: Invocation
    names: dict[str, Path]  # output file on the client host -> where it goes here
    exit: dict[str, Any] | None = None
    fetched: bool = False


_M = TypeVar("_M", bound=Callable[..., Any])


def _checked(method: _M) -> _M:
    """A reply from the client host that is not what the protocol says fails the test in
    one line (a :class:`RemoteClientError`), never as a traceback."""
    @functools.wraps(method)
    def checked(self: RemoteClients, *args: Any, **kwargs: Any) -> Any:
        try:
            return method(self, *args, **kwargs)
        except (KeyError, TypeError, ValueError) as exc:
            raise RemoteClientError(f"client host {self.config.ssh}: unexpected answer "
                                    f"({method.__name__}): {type(exc).__name__}: {exc}"
                                    ) from exc
    return cast(_M, checked)


class RemoteClients:
    """Tools on the client host, run by its supervisor (``runner/remote_client.py``)."""

    remote = True

    def __init__(self, config: ClientHostConfig, client: RemoteClient) -> None:
        self.config, self.client = config, client
        self.tools: dict[str, str] = {}  # tool name -> its path on the client host
        self._found: dict[str, str] = {}  # local binary -> its counterpart there
        self._count = 0

    def _binary(self, local: str) -> str:
        """The tool on the client host: the platform's path for it, else the path it has
        here if that exists there, else its name on that host's PATH."""
        name = Path(local).name
        if local not in self._found:
            wanted = self.config.tools.get(name)
            candidates = [wanted] if wanted else [local, name]
            found = self.client.call("which", candidates=candidates).get("path")
            if not found:
                raise RemoteClientError(f"client host {self.config.ssh}: {name} not found "
                                        f"(tried {', '.join(candidates)}; client_host.tools "
                                        "names its path there)")
            self._found[local] = self.tools[name] = str(found)
        return self._found[local]

    @_checked
    def spawn(self, inv: Invocation, cpus: list[int], timeout_s: float) -> RemoteProc:
        self._count += 1
        key = str(self._count)
        outputs = [p for p in (inv.stdout_path, inv.result_path) if p is not None]
        names = {p.name: p for p in outputs}
        # the tool runs in the supervisor's work directory: output paths become plain names
        argv = [self._binary(inv.argv[0])] + [_relative(a, outputs) for a in inv.argv[1:]]
        # the client host's own limit comes after the runner's wait, which stops the tool
        # and fetches its output first; it matters only when the runner hangs
        reply = self.client.call("spawn", id=key, argv=argv, cpus=cpus,
                                 stdout=inv.stdout_path.name,
                                 deadline_s=timeout_s + DEADLINE_MARGIN_S)
        if reply.get("warning"):
            log.warning("client host %s: %s", self.config.ssh, reply["warning"])
        return RemoteProc(key, int(reply["pid"]), inv, names)

    @_checked
    def wait(self, proc: RemoteProc, timeout: float) -> int:
        proc.exit = self.client.wait_exit(proc.key, timeout)
        if proc.exit is None:
            self.stop(proc)
            raise subprocess.TimeoutExpired(proc.inv.argv, timeout)
        return int(proc.exit["code"])

    @_checked
    def stop(self, proc: RemoteProc) -> None:
        if self.client.lost:
            return  # the supervisor read EOF and killed its tools: nothing to stop or fetch
        if proc.exit is None:
            proc.exit = self.client.call("stop", id=proc.key)["exit"]
        if not proc.fetched:
            proc.fetched = True
            into = proc.inv.stdout_path.parent
            into.mkdir(parents=True, exist_ok=True)
            self.client.fetch(list(proc.names), into)

    @_checked
    def cpus(self, count: int, local: list[int]) -> list[int]:
        there = list(self.config.cpus or self.client.hello.get("cpus") or [])
        return [int(c) for c in there[:max(1, count)]]

    @_checked
    def usage(self, procs: list[RemoteProc], cores: int) -> CpuUsage | None:
        """The tools' CPU time (user + system, from wait4) over their wall time: one figure
        for the whole run, measured on the client host."""
        done = [p.exit for p in procs if p.exit and p.exit.get("cpu_s") is not None]
        if not done:
            return CpuUsage(0, 0.0, 0.0, cores)
        wall = max(float(e["wall_s"]) for e in done)
        pct = 100.0 * sum(float(e["cpu_s"]) for e in done) / wall if wall > 0 else 0.0
        return CpuUsage(1, round(pct, 1), round(pct, 1), cores)

    def close(self) -> None:
        self.client.close()

    @_checked
    def network(self, server_host: str, server_port: int) -> dict[str, Any]:
        """Both ends of the path the client takes to the server, with its round-trip time."""
        rtt = self.client.call("rtt", host=server_host, port=server_port, count=20)
        hello = self.client.hello
        return {
            "mode": "two-host", "transport": "ssh",
            "server": {"host": socket.gethostname(), "address": server_host,
                       "interface": interface_of(server_host)},
            "client": {"host": hello.get("host", ""), "ssh": self.config.ssh,
                       "address": rtt["source"], "interface": rtt["interface"],
                       "cpu_model": hello.get("cpu_model", ""),
                       "cpu_count": hello.get("cpu_count"), "kernel": hello.get("kernel", ""),
                       # filled as tools are found there (the same dict, written at the end)
                       "tools": self.tools},
            "rtt_ms": {k: round(float(rtt[f"{k}_ms"]), 4) for k in ("min", "median", "max")}
            | {"samples": len(rtt["samples_ms"]), "method": "PING round trips from the "
               "client host over one TCP connection"},
        }


def _relative(arg: str, outputs: list[Path]) -> str:
    """An argument naming one of the output files, with that path as a bare file name."""
    for path in outputs:
        text = str(path)
        if text in arg:
            return arg.replace(text, path.name)
    return arg


def interface_of(address: str) -> str:
    """The interface of this host that holds ``address``, or ''."""
    wanted = ipaddress.ip_address(address)
    for name, addrs in psutil.net_if_addrs().items():
        for a in addrs:
            try:
                if ipaddress.ip_address(a.address.split("%")[0]) == wanted:
                    return name
            except ValueError:
                continue  # a MAC address
    return ""


def open_client_side(config: ClientHostConfig | None, registry: ProcessRegistry,
                     out_dir: Path) -> ClientSide:
    """The local side, or a connected remote one (``RemoteClientError`` if it cannot be)."""
    if config is None:
        return LocalClients(registry)
    client = RemoteClient(config, registry, out_dir / "client-host-ssh.log")
    client.open()
    return RemoteClients(config, client)
