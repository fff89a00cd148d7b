"""Helpers for pipeline tests: artifacts from the installed Redis binaries, event publishing."""

from __future__ import annotations

import hashlib
import io
import os
import shutil
import subprocess
import tarfile
from pathlib import Path

import redis

from redis_benchmarks_spec.builder import artifacts, signing
from redis_benchmarks_spec.builder.compile import BINARIES, Artifact
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    SourceLocation,
    SuiteFilters,
    event_id_for,
    new_id,
)
from redis_benchmarks_spec.events.names import StreamNames

SUITE = """
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
tested-commands: [set]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n {n} -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def system_artifact() -> Artifact:
    """The Debian redis binaries as an artifact (real binaries, packaged like a build)."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        for name in BINARIES:
            path = shutil.which(name)
            assert path, f"{name} is not installed"
            tar.add(os.path.realpath(path), arcname=name)
    data = buf.getvalue()
    return Artifact(data=data, sha256=hashlib.sha256(data).hexdigest(),
                    variant="gcc:12.2.0-amd64-debian-bookworm-default", env={},
                    redis_version="7.0.15", compiler_version="debian", build_seconds=0.0)


def publish_event(client: redis.Redis, names: StreamNames, sha: str,
                  platforms: list[str] | None = None) -> BuildEvent:
    variant = "gcc:12.2.0-amd64-debian-bookworm-default"
    artifact = system_artifact()
    signer = artifacts.Signer(signing.load_key(), sha, variant)  # the host key agents use
    ref = artifacts.store(client, artifacts.artifact_key(names.prefix, sha, variant), artifact,
                          signer)
    request_id = new_id()
    event = BuildEvent(
        id=event_id_for(request_id, variant), request_id=request_id, org="redis", repo="redis",
        branch="unstable", sha=sha, commit_time_ms=1_700_000_000_000, build_variant=variant,
        artifact=ref, redis_version="7.0.15", filters=SuiteFilters(),
        platforms=platforms or [])
    publish(client, names.builds, event)
    return event


def unused_source() -> SourceLocation:
    return SourceLocation(SOURCE_GIT, "file:///nonexistent")


# --------------------------------------------------------------------------- a tiny "Redis"
# A source tree laid out like Redis (top Makefile -> src/Makefile) whose three binaries are
# real C programs, compiled in a second: REDIS_CFLAGS and CC travel exactly as in Redis's
# Makefile, and ``redis-server --version`` prints the RBS_MARKER the flags defined.

TINY_TOP_MAKEFILE = "all:\n\t$(MAKE) -C src\n"
TINY_SRC_MAKEFILE = """\
CC ?= cc
all: redis-server redis-cli redis-benchmark
%.o: %.c
\t$(CC) $(REDIS_CFLAGS) -c $< -o $@
redis-server: server.o
\t$(CC) server.o -o $@
redis-cli: tool.o
\t$(CC) tool.o -o $@
redis-benchmark: tool.o
\t$(CC) tool.o -o $@
"""
TINY_SERVER_C = """\
#include <stdio.h>
#define STR(x) #x
#define XSTR(x) STR(x)
#ifdef RBS_MARKER
#define MARK XSTR(RBS_MARKER)
#else
#define MARK "none"
#endif
int main(void) {
    printf("Redis server v=%s sha=00000000:0 malloc=libc bits=64 build=%s\\n",
           "VERSION", MARK);
    return 0;
}
"""
TINY_TOOL_C = "int main(void) { return 0; }\n"

GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com"}


def git(repo: Path, *args: str) -> str:
    """Run git in ``repo`` (test helper: fails loudly)."""
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=60, env={**os.environ, **GIT_ENV}).stdout.strip()


def tiny_redis_repo(root: Path, version: str = "7.9.0") -> Path:
    """A git repository holding the tiny Redis tree; its one commit is on ``unstable``."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "src").mkdir(exist_ok=True)
    (root / "Makefile").write_text(TINY_TOP_MAKEFILE)
    (root / "src" / "Makefile").write_text(TINY_SRC_MAKEFILE)
    (root / "src" / "server.c").write_text(TINY_SERVER_C.replace("VERSION", version))
    (root / "src" / "tool.c").write_text(TINY_TOOL_C)
    git(root, "init", "-q", "-b", "unstable")
    commit_all(root, f"tiny redis {version}")
    return root


def commit_all(repo: Path, message: str) -> str:
    """Commit every change in ``repo``; the new sha."""
    git(repo, "add", "-A")
    git(repo, "commit", "-q", "--allow-empty", "-m", message)
    return git(repo, "rev-parse", "HEAD")


def tiny_variant_yaml(variant_id: str, cflags: str) -> str:
    """A build-variant file for the tiny tree."""
    return (f"id: '{variant_id}'\nos: debian-bookworm\narch: amd64\ncompiler: gcc\n"
            f"cpp_compiler: g++\nenv:\n  REDIS_CFLAGS: '{cflags}'\n")
