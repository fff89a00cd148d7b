"""redis-server in a Docker container, for lab hosts that isolate runs in containers.

There is no image registry here, so the image is built locally from the redis-server binary
under test: a root filesystem holding that binary and the shared libraries ``ldd`` lists,
``docker import``-ed under a tag derived from the binary's sha256 (rebuilt only when the
binary changes). Containers use the host network (a free port picked at run time), are pinned
with ``--cpuset-cpus``, carry the label ``rbs.managed=1`` plus a per-run label, and are stopped
and removed by their own container id; nothing else on the engine is touched.

A container is not a child of the process that started it, so it would outlive a ``kill -9``
of the agent. Each carries ``rbs.owner=<host>:<pid>:<start time>`` of its starter; a new
launcher removes the containers whose owner on this host is no longer alive
(:func:`reap_orphans`), and only those.
"""

from __future__ import annotations

import hashlib
import io
import logging
import os
import re
import socket
import subprocess
import tarfile
import uuid
from pathlib import Path

import psutil

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import free_port, minimal_env, wait_for
from redis_benchmarks_spec.runner.launcher import (
    ServerHandle,
    ServerSpec,
    ServerStartError,
    answers_ping,
    bind_args,
    refused_error,
    secret_conf,
)

LABEL = "rbs.managed"
OWNER_LABEL = "rbs.owner"
DOCKER_TIMEOUT = 120
_LDD_PATH = re.compile(r"(/\S+)")
log = logging.getLogger(__name__)


class DockerError(TestRunError):
    """The Docker engine refused or failed a command; the message carries its stderr."""


def _docker_env() -> dict[str, str]:
    """The docker CLI's environment: where the engine is, nothing of the daemon's secrets."""
    return minimal_env({k: v for k, v in os.environ.items()
                        if k in ("DOCKER_HOST", "DOCKER_CONFIG", "DOCKER_CONTEXT", "HOME")})


def docker(*args: str, timeout: float = DOCKER_TIMEOUT, stdin: bytes | None = None) -> str:
    proc = subprocess.run(["docker", *args], input=stdin, capture_output=True,
                          timeout=timeout, check=False, env=_docker_env())
    if proc.returncode != 0:
        raise DockerError(f"docker {args[0]} failed ({proc.returncode}): "
                          f"{proc.stderr.decode(errors='replace').strip()}")
    return proc.stdout.decode(errors="replace").strip()


def _shared_libraries(binary: Path) -> list[Path]:
    # ldd may run the (pull-request) binary's loader: never with our environment
    out = subprocess.run(["ldd", str(binary)], capture_output=True, text=True, timeout=30,
                         check=True, env=minimal_env()).stdout
    libs = []
    for line in out.splitlines():
        match = _LDD_PATH.search(line.split("=>")[-1])
        if match and Path(match.group(1)).exists():
            libs.append(Path(match.group(1)))
    return libs


def _rootfs_tar(binary: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w") as tar:
        tar.add(binary.resolve(), arcname="usr/local/bin/redis-server")
        for lib in _shared_libraries(binary):
            tar.add(lib.resolve(), arcname=str(lib).lstrip("/"))
        for folder in ("data", "tmp"):
            info = tarfile.TarInfo(folder)
            info.type, info.mode = tarfile.DIRTYPE, 0o1777
            tar.addfile(info)
    return buf.getvalue()


def image_for(binary: str) -> str:
    """A local image holding ``binary``; built once per distinct binary."""
    path = Path(binary)
    digest = hashlib.sha256(path.read_bytes()).hexdigest()[:16]
    tag = f"rbs-redis:{digest}"
    try:
        docker("image", "inspect", tag)
        return tag
    except DockerError:
        pass  # not built yet: build it below
    docker("import", "--change", f"LABEL {LABEL}=1", "-", tag, stdin=_rootfs_tar(path))
    return tag


def owner_id(pid: int | None = None) -> str:
    """``<host>:<pid>:<start time>`` of a process (start time: a reused pid is another one)."""
    proc = psutil.Process(pid)
    return f"{socket.gethostname()}:{proc.pid}:{int(proc.create_time())}"


def _owner_alive(owner: str) -> bool:
    parts = owner.rsplit(":", 2)
    if len(parts) != 3 or parts[0] != socket.gethostname():
        return True  # not a container this host started: never ours to remove
    try:
        return owner_id(int(parts[1])) == owner
    except (psutil.NoSuchProcess, psutil.AccessDenied, ValueError):
        return False


def reap_orphans() -> list[str]:
    """Remove our containers whose starter on this host is dead; their ids."""
    rows = docker("ps", "-a", "--filter", f"label={LABEL}=1", "--format",
                  f'{{{{.ID}}}} {{{{.Label "{OWNER_LABEL}"}}}}')
    reaped = []
    for line in rows.splitlines():
        cid, _, owner = line.partition(" ")
        if owner and not _owner_alive(owner):
            docker("rm", "-f", cid, timeout=60)
            reaped.append(cid)
    if reaped:
        log.warning("removed %d container(s) left by a dead agent: %s", len(reaped), reaped)
    return reaped


class DockerLauncher:
    """Implements the runner's ServerLauncher with one container per server."""

    def __init__(self) -> None:
        self._containers: dict[str, ServerHandle] = {}  # container id -> handle (to stop_all)
        try:
            reap_orphans()
        except (DockerError, OSError, subprocess.TimeoutExpired) as exc:
            log.warning("could not look for containers left by a dead agent: %s", exc)

    def start(self, spec: ServerSpec) -> ServerHandle:
        image = image_for(spec.binary)
        spec.workdir.mkdir(parents=True, exist_ok=True)
        port = free_port(spec.bind)
        name = f"rbs-{uuid.uuid4().hex[:12]}"
        ulimit = ["--ulimit", f"nofile={spec.nofile}:{spec.nofile}"] if spec.nofile else []
        # passwords in a file in the mounted folder, not in docker's or the server's argv
        args, conf = secret_conf(spec.workdir, spec.args)
        try:
            cid = docker("run", "-d", "--name", name, "--label", f"{LABEL}=1", *ulimit,
                         "--label", f"{OWNER_LABEL}={owner_id()}", "--network", "host",
                         "--cpuset-cpus", ",".join(map(str, spec.cpus)),
                         "-v", f"{spec.workdir}:/data", image, "/usr/local/bin/redis-server",
                         *([f"/data/{conf.name}"] if conf else []), "--port", str(port),
                         *bind_args(spec.bind), "--dir", "/data", "--save", "", *args)
        except BaseException:
            if conf is not None:
                conf.unlink(missing_ok=True)
            raise
        handle = ServerHandle(spec.bind, port, [], spec.workdir / "redis-server.log",
                             container_id=cid, auth=spec.auth)
        self._containers[cid] = handle
        handle.pids = [int(docker("inspect", "-f", "{{.State.Pid}}", cid) or 0)]
        up = wait_for(lambda: self._answers(handle, cid), spec.start_timeout)
        if conf is not None:
            conf.unlink(missing_ok=True)
        if handle.refused:
            self.stop(handle)
            raise refused_error(handle, f"container {name} ({image})")
        if not up or docker("inspect", "-f", "{{.State.Running}}", cid) != "true":
            self.stop(handle)
            raise ServerStartError(f"container {name} ({image}) did not answer PING on port "
                                   f"{port}; log tail:\n{_tail(handle.log_path)}")
        return handle

    @staticmethod
    def _answers(handle: ServerHandle, cid: str) -> bool:
        if docker("inspect", "-f", "{{.State.Running}}", cid) != "true":
            return True  # exited: start() reports it after the wait
        return answers_ping(handle)

    def stop(self, handle: ServerHandle) -> None:
        """Stop and remove the container of ``handle`` by its own id (once)."""
        cid = handle.container_id
        if self._containers.pop(cid, None) is None:
            return
        try:
            docker("stop", "-t", "10", cid, timeout=60)
        finally:
            handle.log_path.write_text(_logs(cid))
            docker("rm", "-f", cid, timeout=60)

    def stop_all(self) -> None:
        for handle in list(self._containers.values()):
            self.stop(handle)


def _logs(cid: str) -> str:
    proc = subprocess.run(["docker", "logs", cid], capture_output=True, text=True, timeout=60,
                          check=False, env=_docker_env())
    return proc.stdout + proc.stderr


def _tail(path: Path) -> str:
    try:
        return "\n".join(path.read_text(errors="replace").splitlines()[-20:])
    except OSError:
        return ""
