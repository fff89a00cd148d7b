"""Where pull-request code runs on a builder: ``make`` and the built binary's ``--version``.

Two engines (see docs/security.md for the choice):

- ``docker``: the build variant's ``build_image``, used when the local engine has that image:
  ``--network none``, memory/pids/CPU limits, the source folder the only mount, the make
  variables the only environment;
- ``bwrap`` (bubblewrap, the default otherwise): the host toolchain read-only (``/usr`` and
  the few ``/etc`` files the compiler needs; no ``/home``, ``/root``, ``/var``, ``/run`` or
  ``/etc/rbs``), the source folder the only writable path, new network/PID/IPC namespaces (no
  network at all), a cleared environment, ``--die-with-parent``, and rlimits (address
  space, file size, open files, processes, CPU time) set by ``prlimit``.

Neither sees the daemon's environment, so broker, datasink and webhook secrets never reach
``make`` or its log (which the failure stream publishes).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import tool_env

ENGINES = ("auto", "bwrap", "docker")
SANDBOX_PATH = "/usr/local/bin:/usr/bin:/bin:/usr/local/sbin:/usr/sbin:/sbin"
# the only host files visible besides /usr (merged-usr Debian: /bin, /lib are links into it)
HOST_DIRS = ("/usr", "/bin", "/sbin", "/lib", "/lib32", "/lib64", "/libx32")
ETC_FILES = ("/etc/alternatives", "/etc/ld.so.cache", "/etc/ld.so.conf", "/etc/ld.so.conf.d",
             "/etc/passwd", "/etc/group", "/etc/localtime", "/etc/os-release")


class SandboxUnavailable(RuntimeError):
    """No engine can contain the build (bubblewrap missing and no usable docker image)."""


@dataclass(frozen=True)
class Limits:
    """Resource limits of one sandboxed command."""

    memory_bytes: int = 8 * 1024**3  # address space per process (docker: the container)
    file_bytes: int = 4 * 1024**3  # largest file a process may write
    open_files: int = 4096
    processes: int = 4096  # RLIMIT_NPROC counts the user's processes; root is exempt
    cpus: float = 0.0  # docker --cpus; 0 = no cap


@dataclass(frozen=True)
class Sandbox:
    """How to run a command over one source folder (see the module docstring)."""

    engine: str = "auto"
    limits: Limits = Limits()
    docker_bin: str = "docker"

    def argv(self, command: Sequence[str], workdir: Path, env: Mapping[str, str],
             image: str = "", timeout_s: float = 3600) -> list[str]:
        """The argv that runs ``command`` in ``workdir`` inside the sandbox."""
        engine = self.choose(image)
        if engine == "docker":
            return self._docker(command, workdir, env, image)
        return self._bwrap(command, workdir, env, timeout_s)

    def remove(self, argv: Sequence[str]) -> None:
        """Remove the container a docker ``argv`` of :meth:`argv` started, by its name:
        killing a timed-out ``docker run`` client leaves its container running. (bwrap's
        ``--die-with-parent`` needs nothing.)"""
        if list(argv[:2]) != [self.docker_bin, "run"] or "--name" not in argv:
            return
        name = argv[list(argv).index("--name") + 1]
        subprocess.run([self.docker_bin, "rm", "-f", name], capture_output=True, timeout=60,
                       check=False, env=tool_env())

    def choose(self, image: str) -> str:
        """The engine for a variant whose build image is ``image``."""
        if self.engine == "docker" or (self.engine == "auto" and image and
                                       _docker_has(self.docker_bin, image)):
            if not image:
                raise SandboxUnavailable("the docker engine needs the variant's build_image")
            return "docker"
        if shutil.which("bwrap") is None or shutil.which("prlimit") is None:
            raise SandboxUnavailable("bubblewrap (bwrap) and prlimit are needed to contain "
                                     "builds: apt-get install bubblewrap util-linux")
        return "bwrap"

    def _bwrap(self, command: Sequence[str], workdir: Path, env: Mapping[str, str],
               timeout_s: float) -> list[str]:
        lim = self.limits
        argv = ["prlimit", f"--as={lim.memory_bytes}", f"--fsize={lim.file_bytes}",
                f"--nofile={lim.open_files}", f"--nproc={lim.processes}",
                f"--cpu={int(timeout_s * 4) + 60}", "--",
                "bwrap", "--die-with-parent", "--new-session",
                "--unshare-net", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
                "--hostname", "rbs-build", "--clearenv"]
        for path in HOST_DIRS:
            argv += ["--ro-bind-try", path, path]
        for path in ETC_FILES:
            argv += ["--ro-bind-try", path, path]
        argv += ["--dev", "/dev", "--proc", "/proc", "--tmpfs", "/tmp",
                 "--bind", str(workdir), str(workdir), "--chdir", str(workdir)]
        for name, value in _env(env).items():
            argv += ["--setenv", name, value]
        return [*argv, "--", *command]

    def _docker(self, command: Sequence[str], workdir: Path, env: Mapping[str, str],
                image: str) -> list[str]:
        lim = self.limits
        argv = [self.docker_bin, "run", "--rm", "--init", "--network", "none",
                "--name", f"rbs-build-{uuid.uuid4().hex[:12]}",
                "--label", "rbs.role=build", f"--memory={lim.memory_bytes}",
                f"--pids-limit={lim.processes}", "--ulimit",
                f"nofile={lim.open_files}:{lim.open_files}",
                "--ulimit", f"fsize={lim.file_bytes}:{lim.file_bytes}",
                "--user", f"{os.getuid()}:{os.getgid()}",  # files stay the builder's
                "-v", f"{workdir}:{workdir}", "-w", str(workdir)]
        if lim.cpus:
            argv.append(f"--cpus={lim.cpus}")
        for name, value in _env(env).items():
            argv += ["-e", f"{name}={value}"]
        return [*argv, "--", image, *command]


def _env(env: Mapping[str, str]) -> dict[str, str]:
    """The whole environment of sandboxed code: chosen here, nothing inherited."""
    return {"PATH": SANDBOX_PATH, "HOME": "/tmp", "LANG": "C.UTF-8", "TMPDIR": "/tmp", **env}


def _docker_has(docker_bin: str, image: str) -> bool:
    if shutil.which(docker_bin) is None:
        return False
    try:
        proc = subprocess.run([docker_bin, "image", "inspect", "--format", "{{.Id}}", "--",
                               image], capture_output=True, timeout=30, check=False,
                              env=tool_env())
    except (OSError, subprocess.TimeoutExpired):
        return False
    return proc.returncode == 0
