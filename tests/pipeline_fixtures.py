"""Helpers for pipeline tests: artifacts from the installed Redis binaries, event publishing."""

from __future__ import annotations

import hashlib
import os
import io
import shutil
import tarfile

import redis

from redis_benchmarks_spec.build import artifacts
from redis_benchmarks_spec.build.compile import BINARIES, Artifact
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildEvent,
    SourceLocation,
    TestFilters,
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
    ref = artifacts.store(client, artifacts.artifact_key(names.prefix, sha, variant), artifact)
    request_id = new_id()
    event = BuildEvent(
        id=event_id_for(request_id, variant), request_id=request_id, org="redis", repo="redis",
        branch="unstable", sha=sha, commit_time_ms=1_700_000_000_000, build_variant=variant,
        artifact=ref, redis_version="7.0.15", filters=TestFilters(),
        platforms=platforms or [])
    publish(client, names.builds, event)
    return event


def unused_source() -> SourceLocation:
    return SourceLocation(SOURCE_GIT, "file:///nonexistent")
