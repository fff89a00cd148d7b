"""Compiling Redis for one build variant and packaging the binaries as a tar.gz artifact."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import time
from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.builder.dependencies import bundled_versions
from redis_benchmarks_spec.builder.make_progress import POLL_S, MakeWatch
from redis_benchmarks_spec.builder.sandbox import Sandbox, SandboxUnavailable
from redis_benchmarks_spec.builder.unpack import unpack as safe_unpack
from redis_benchmarks_spec.builder.variants import BuildVariant
from redis_benchmarks_spec.common.process import minimal_env as sandbox_env
from redis_benchmarks_spec.common.process import tail

BINARIES = ("redis-server", "redis-cli", "redis-benchmark")
DEFAULT_TIMEOUT_S = 1800


class BuildError(RuntimeError):
    """make failed or timed out; ``log_tail`` holds the end of the build log."""

    def __init__(self, message: str, log_tail: str = "") -> None:
        super().__init__(message)
        self.log_tail = log_tail


@dataclass
class Artifact:
    """A packaged build: tar.gz bytes of the binaries plus what produced them."""

    data: bytes
    sha256: str
    variant: str
    env: dict[str, str]
    redis_version: str
    compiler_version: str
    build_seconds: float
    files: list[str] = field(default_factory=list)
    # the whole first line of ``redis-server --version`` (sha, malloc, bits, build id)
    redis_server_version: str = ""
    # every REDIS_CFLAGS token seen on the compiler command lines of the build log
    cflags_verified: bool = False
    # the commit the source was verified to be (builder/source.py), "" when not verified
    source_sha: str = ""
    # how the tree was built (builder/kept_tree.py): "clean" (a fresh or cleaned tree) or
    # "incremental" over the kept tree's build of ``built_over``; ``build_reason``: why
    build_kind: str = "clean"
    built_over: str = ""
    build_reason: str = ""
    # an incremental build checked against a clean build of its commit (builder/verify.py)
    verification: str = ""
    # versions of the dependencies bundled in deps/ (builder/dependencies.py)
    deps: dict[str, str] = field(default_factory=dict)


def _version_line(argv: list[str], sandbox: Sandbox | None = None) -> str:
    """The first output line of ``argv`` (a ``--version`` call, in ``sandbox`` if given)."""
    try:
        # sandboxed or not, it needs none of the daemon's environment (its secrets)
        proc = subprocess.run(argv, capture_output=True, text=True, timeout=60, check=False,
                              env=sandbox_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        if sandbox is not None:
            sandbox.remove(argv)
        raise BuildError(f"{argv[0]} --version failed: {exc}") from exc
    lines = (proc.stdout or proc.stderr).strip().splitlines()
    return lines[0] if lines else ""


def compiler_version(variant: BuildVariant) -> str:
    """The first line of the variant's ``<compiler> --version``."""
    return _version_line([variant.compiler, "--version"])


def run_make(source: Path, variant: BuildVariant, log_path: Path,
             timeout_s: float = DEFAULT_TIMEOUT_S, sandbox: Sandbox | None = None, *,
             watch: MakeWatch | None = None, targets: tuple[str, ...] = ()) -> None:
    """``make -j<cores>`` with the variant's variables on the command line and in the env
    (Redis's Makefile reads REDIS_CFLAGS and friends from either), inside ``sandbox``: the
    source is untrusted code, and it never sees the daemon's environment. ``watch`` follows
    the log while make runs (its phase and a heartbeat: :mod:`.make_progress`); ``targets``
    (plain make target names) replace the Makefile's default."""
    make_vars = variant.make_env()
    # V=1: the log shows every compiler command line, so the variant flags are auditable
    make = ["make", f"-j{os.cpu_count() or 2}", "V=1",
            *[f"{k}={v}" for k, v in make_vars.items()], *targets]
    sandbox = sandbox or Sandbox()
    try:
        argv = sandbox.argv(make, source, make_vars, variant.build_image, timeout_s)
    except SandboxUnavailable as exc:
        raise BuildError(str(exc)) from exc
    with log_path.open("wb") as log:
        log.write(f"$ {' '.join(make)}\n".encode())
        log.flush()
        try:
            proc = subprocess.Popen(argv, cwd=source, env=sandbox_env(), stdout=log,
                                    stderr=subprocess.STDOUT)
        except OSError as exc:
            raise BuildError(f"cannot run make in {source}: {exc}") from exc
        try:
            returncode = _wait(proc, log_path, timeout_s, watch)
        except subprocess.TimeoutExpired as exc:
            sandbox.remove(argv)
            raise BuildError(f"make timed out after {timeout_s:.0f}s", tail(log_path)) from exc
        except KeyboardInterrupt:  # Ctrl-C or SIGTERM (cli/errors.py): the same for its container
            sandbox.remove(argv)
            raise
    if returncode != 0:
        raise BuildError(f"make failed with exit code {returncode}", tail(log_path, 40))


def _wait(proc: subprocess.Popen[bytes], log_path: Path, timeout_s: float,
          watch: MakeWatch | None) -> int:
    """make's exit code; the log's new text goes to ``watch`` every :data:`POLL_S` (make
    is killed on a timeout or any exception, as :func:`subprocess.run` does)."""
    start = time.monotonic()
    try:
        with log_path.open("r", errors="replace") as follow:
            while True:
                left = timeout_s - (time.monotonic() - start)
                if left <= 0:
                    raise subprocess.TimeoutExpired(proc.args, timeout_s)
                try:
                    return proc.wait(timeout=min(POLL_S, left))
                except subprocess.TimeoutExpired:
                    if watch is not None:
                        watch.feed(follow.read())
                        watch.tick(time.monotonic() - start)
    except BaseException:
        proc.kill()
        proc.wait()
        raise


def package(source: Path) -> tuple[bytes, list[str]]:
    """tar.gz of the binaries in ``src/`` (deterministic member order and mtimes)."""
    buf = io.BytesIO()
    names = []
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in BINARIES:
            path = source / "src" / name
            if not path.exists():
                raise BuildError(f"build produced no {name} in {source / 'src'}")
            info = tar.gettarinfo(str(path), arcname=name)
            info.mtime = 0
            with path.open("rb") as fh:
                tar.addfile(info, fh)
            names.append(name)
    return buf.getvalue(), names


def build(source: Path, variant: BuildVariant, log_path: Path,
          timeout_s: float = DEFAULT_TIMEOUT_S, sandbox: Sandbox | None = None) -> Artifact:
    """Compile ``source`` for ``variant`` (in ``sandbox``) and package it."""
    sandbox = sandbox or Sandbox()
    start = time.monotonic()
    run_make(source, variant, log_path, timeout_s, sandbox)
    data, files = package(source)
    # the built binary is pull-request code too: asked for its version in the sandbox
    server_line = _version_line(sandbox.argv(
        [str(source / "src" / "redis-server"), "--version"], source, {}, variant.build_image),
        sandbox)
    return Artifact(
        data=data, sha256=hashlib.sha256(data).hexdigest(), variant=variant.id,
        env=variant.make_env(), redis_version=_redis_version(server_line),
        compiler_version=compiler_version(variant),
        build_seconds=time.monotonic() - start, files=files,
        cflags_verified=cflags_reached_compiler(log_path, variant),
        redis_server_version=server_line, deps=bundled_versions(source))


def cflags_reached_compiler(log_path: Path, variant: BuildVariant) -> bool:
    """True when some compiler command line in the log carries every REDIS_CFLAGS token."""
    tokens = variant.env.get("REDIS_CFLAGS", "").split()
    if not tokens:
        return True
    for line in log_path.read_text(errors="replace").splitlines():
        if " -c " in f" {line} " and all(t in line.split() for t in tokens):
            return True
    return False


def _redis_version(line: str) -> str:
    """``7.0.15`` from ``Redis server v=7.0.15 sha=...``."""
    for word in line.split():
        if word.startswith("v="):
            return word[2:]
    return line


def unpack(data: bytes, dest: Path) -> dict[str, Path]:
    """Extract an artifact with the limits of :mod:`.unpack`; binary name -> path."""
    names = safe_unpack(data, dest)
    return {name: dest / name for name in BINARIES if name in names}
