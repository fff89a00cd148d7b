"""Artifacts in Redis: chunked tar.gz bytes under one key prefix, with a TTL, verified on fetch.

Keys (all built here):
    <prefix>:artifact:<sha>:<variant>            hash: sha256, size, chunks, redis_version, env
    <prefix>:artifact:<sha>:<variant>:<i>        chunk i of the tar.gz
The manifest hash is written last, in the same MULTI/EXEC as the chunks, so a reader that
finds a manifest always finds every chunk.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass

import redis

from redis_benchmarks_spec.build.compile import Artifact
from redis_benchmarks_spec.events.messages import ARTIFACT_REDIS, ArtifactRef

CHUNK_BYTES = 4 * 1024 * 1024
DEFAULT_TTL_S = 14 * 24 * 3600


class ArtifactError(RuntimeError):
    """An artifact is missing, incomplete or corrupted (sha256 mismatch)."""


@dataclass(frozen=True)
class StoredArtifact:
    ref: ArtifactRef
    redis_version: str
    env: dict[str, str]


def artifact_key(prefix: str, sha: str, variant: str) -> str:
    return f"{prefix}:artifact:{sha}:{variant}"


def store(client: redis.Redis, key: str, artifact: Artifact,
          ttl_s: int = DEFAULT_TTL_S) -> ArtifactRef:
    """Write chunks and manifest atomically; returns the reference for build events."""
    chunks = [artifact.data[i:i + CHUNK_BYTES]
              for i in range(0, len(artifact.data), CHUNK_BYTES)] or [b""]
    pipe = client.pipeline(transaction=True)
    for i, chunk in enumerate(chunks):
        pipe.set(f"{key}:{i}", chunk, ex=ttl_s)
    pipe.hset(key, mapping={"sha256": artifact.sha256, "size": len(artifact.data),
                            "chunks": len(chunks), "redis_version": artifact.redis_version,
                            "env": json.dumps(artifact.env, sort_keys=True),
                            "compiler": artifact.compiler_version,
                            "cflags_verified": int(artifact.cflags_verified)})
    pipe.expire(key, ttl_s)
    pipe.execute()
    return ArtifactRef(ARTIFACT_REDIS, key, artifact.sha256, len(artifact.data), len(chunks))


def existing(client: redis.Redis, key: str) -> StoredArtifact | None:
    """The artifact already stored under ``key`` (reused for the same sha and variant)."""
    raw = client.hgetall(key)
    if not raw:
        return None
    fields = {k.decode(): v.decode() for k, v in raw.items()}  # type: ignore[union-attr]
    ref = ArtifactRef(ARTIFACT_REDIS, key, fields["sha256"], int(fields["size"]),
                      int(fields["chunks"]))
    if client.exists(*[f"{key}:{i}" for i in range(ref.chunks)]) != ref.chunks:
        return None  # chunks expired before the manifest: rebuild
    return StoredArtifact(ref, fields.get("redis_version", ""), json.loads(fields["env"]))


def fetch(client: redis.Redis, ref: ArtifactRef) -> bytes:
    """The artifact's bytes, verified against the sha256 its event carries."""
    if ref.kind != ARTIFACT_REDIS:
        raise ArtifactError(f"artifact kind {ref.kind!r} is not fetchable from Redis")
    parts = client.mget([f"{ref.location}:{i}" for i in range(ref.chunks)])
    missing = [i for i, p in enumerate(parts) if p is None]
    if missing:
        raise ArtifactError(f"artifact {ref.location}: chunks {missing} missing (expired?)")
    data = b"".join(parts)  # type: ignore[arg-type]
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise ArtifactError(f"artifact {ref.location}: sha256 {digest} does not match the "
                            f"event's {ref.sha256}")
    return data
