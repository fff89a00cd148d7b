"""Getting the source tree a build request names: a tarball in Redis or S3, or a git remote."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import redis

from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    SOURCE_REDIS,
    SOURCE_S3,
    BuildRequest,
)

GIT_TIMEOUT_S = 600


class SourceError(RuntimeError):
    """The source could not be fetched; the build fails with this reason."""


def _safe_extract(data: bytes, dest: Path) -> None:
    with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
        tar.extractall(dest, filter="data")


def _single_root(dest: Path) -> Path:
    """A tarball with one top folder (orig.tar.gz style) builds from inside that folder."""
    entries = [p for p in dest.iterdir()]
    if len(entries) == 1 and entries[0].is_dir() and not (dest / "Makefile").exists():
        return entries[0]
    return dest


def _from_redis(client: redis.Redis, request: BuildRequest, dest: Path) -> None:
    data = client.get(request.source.location)
    if data is None:
        raise SourceError(f"source archive key {request.source.location!r} is missing "
                          f"(expired TTL?) for request {request.id}")
    assert isinstance(data, bytes)
    if request.source.sha256 and hashlib.sha256(data).hexdigest() != request.source.sha256:
        raise SourceError(f"source archive {request.source.location!r}: sha256 mismatch")
    _safe_extract(data, dest)


def _from_git(request: BuildRequest, dest: Path) -> None:
    def git(*args: str) -> None:
        proc = subprocess.run(["git", *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False)
        if proc.returncode != 0:
            raise SourceError(f"git {args[0]} failed: {proc.stderr.strip()[-500:]}")
    git("init", "-q", str(dest))
    git("-C", str(dest), "fetch", "-q", "--depth", "1", request.source.location, request.sha)
    git("-C", str(dest), "checkout", "-q", "FETCH_HEAD")


def _from_s3(request: BuildRequest, dest: Path) -> None:
    try:
        import boto3  # optional dependency: pip install redis-benchmarks-spec[s3]
    except ImportError as exc:
        raise SourceError("S3 sources need boto3 (pip install 'redis-benchmarks-spec[s3]')") \
            from exc
    bucket, _, key = request.source.location.removeprefix("s3://").partition("/")
    body = boto3.client("s3").get_object(Bucket=bucket, Key=key)["Body"].read()
    _safe_extract(body, dest)


def fetch_source(client: redis.Redis, request: BuildRequest, dest: Path) -> Path:
    """Materialize the request's source under ``dest``; returns the tree's root."""
    dest.mkdir(parents=True, exist_ok=True)
    kind = request.source.kind
    if kind == SOURCE_REDIS:
        _from_redis(client, request, dest)
    elif kind == SOURCE_GIT:
        _from_git(request, dest)
    elif kind == SOURCE_S3:
        _from_s3(request, dest)
    else:
        raise SourceError(f"unknown source kind {kind!r}")
    return _single_root(dest)
