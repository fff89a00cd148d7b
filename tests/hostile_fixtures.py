"""Helpers for attacker tests: real daemons (``rbs agent``/``rbs builder`` processes) against
a real broker, and raw stream entries written the way an attacker with broker access would."""

from __future__ import annotations

import hashlib
import io
import os
import subprocess
import tarfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.events.consumer import original_fields
from redis_benchmarks_spec.events.messages import (
    ArtifactRef,
    BuildEvent,
    SuiteFilters,
    event_id_for,
    new_id,
)
from redis_benchmarks_spec.events.names import StreamNames
from tests.cli import RBS as CLI
from tests.cli import WarmProcess, rbs_daemon

ARTIFACT_KEY = "0123456789abcdef0123456789abcdef"  # what the daemons under test are given
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
RBS = [CLI]  # argv prefix


def daemon_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("RBS_")}
    env.update({"RBS_ARTIFACT_KEY": ARTIFACT_KEY, "PYTHONUNBUFFERED": "1"}, **extra)
    return env


class Daemon:
    """One ``rbs <role>`` process, stopped by its own pid; its log kept for assertions."""

    def __init__(self, argv: list[str], log_path: Path, env: Mapping[str, str],
                 command: list[str] | None = None, warm: bool = False) -> None:
        """``command``: what runs ``rbs`` (this tree's installed script by default);
        ``warm``: forked from the tests' zygote (tests/cli.py ``rbs_daemon``), for tests that
        never read the daemon's ``/proc`` argv or environment."""
        self.log_path = log_path
        self.proc: subprocess.Popen[bytes] | WarmProcess
        if warm and command is None:
            self.proc = rbs_daemon(argv, log_path, env)
        else:
            self.proc = subprocess.Popen([*(command or RBS), *argv],
                                         stdout=log_path.open("ab"),
                                         stderr=subprocess.STDOUT, env=dict(env))

    def alive(self) -> bool:
        return self.proc.poll() is None

    def log(self) -> str:
        return self.log_path.read_text(errors="replace")

    def stop(self) -> int | None:
        if self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=30)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        return self.proc.returncode


def wait_until(predicate: Callable[[], Any], timeout: float = 60, what: str = "") -> Any:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.1)
    raise AssertionError(f"not met within {timeout}s: {what}")


def dead_letters(client: redis.Redis, names: StreamNames) -> dict[str, tuple[str, dict[str, bytes]]]:
    """Original entry id -> (reason, original fields) of every dead-letter entry."""
    out = {}
    rows: Any = client.xrange(names.dead_letter)
    for _, fields in rows:
        out[fields[b"entry_id"].decode()] = (fields[b"reason"].decode(errors="replace"),
                                             original_fields(fields))
    return out


def signed_ref(client: redis.Redis, names: StreamNames, sha: str, data: bytes) -> ArtifactRef:
    """``data`` stored as an artifact a builder holding ARTIFACT_KEY signed (a compromised or
    buggy builder: the agent must still survive what it unpacks)."""
    key = f"{names.prefix}:artifact:{sha}:{VARIANT}:{new_id()[:12]}"
    client.set(f"{key}:0", data)
    digest = hashlib.sha256(data).hexdigest()
    tag = signing.mac(ARTIFACT_KEY.encode(), sha, VARIANT, digest, len(data))
    return ArtifactRef("redis", key, digest, len(data), 1, tag)


def event(ref: ArtifactRef, sha: str, **kw: Any) -> BuildEvent:
    request_id = new_id()
    return BuildEvent(id=event_id_for(request_id, VARIANT), request_id=request_id, org="redis",
                      repo="redis", branch="unstable", sha=sha, commit_time_ms=1, artifact=ref,
                      build_variant=VARIANT, redis_version="7.0.15",
                      filters=kw.pop("filters", SuiteFilters()), **kw)


def tar_gz(members: dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name, data in members.items():
            info = tarfile.TarInfo(name)
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
    return buf.getvalue()


def gzip_bomb(unpacked_bytes: int) -> bytes:
    """A tar.gz whose one member is ``unpacked_bytes`` of zeros (compresses ~1000x)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        info = tarfile.TarInfo("redis-server")
        info.size = unpacked_bytes

        class Zeros:
            left = unpacked_bytes

            def read(self, size: int = -1) -> bytes:
                n = self.left if size < 0 else min(size, self.left)
                self.left -= n
                return bytes(n)

        tar.addfile(info, Zeros())  # type: ignore[arg-type]
    return buf.getvalue()
