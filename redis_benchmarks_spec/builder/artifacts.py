"""Build artifacts: tar.gz bytes in Redis (chunked, with a TTL) or in S3, verified on fetch.

Keys (all built here):
    <prefix>:artifact:<sha>:<variant>:<env digest>      manifest hash: kind, location, sha256,
                                                        size, chunks, redis_version, env,
                                                        compiler, redis_server_version,
                                                        source_sha (the verified commit),
                                                        build_kind (clean | incremental),
                                                        built_over (the kept tree's previous
                                                        commit), build_reason, deps (JSON:
                                                        bundled dependency versions)
    <prefix>:artifact:<sha>:<variant>:<env digest>:<i>  chunk i of the tar.gz (kind redis)
The manifest is the index for both kinds, so an artifact for the same sha and variant is
found and reused wherever its bytes live. In Redis the manifest is written in the same
MULTI/EXEC as the chunks, so a reader that finds a manifest always finds every chunk.
"""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import redis

from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.builder.compile import Artifact
from redis_benchmarks_spec.events.messages import (
    ARTIFACT_REDIS,
    ARTIFACT_S3,
    ArtifactRef,
    BuildEvent,
    MessageError,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.validation import ARTIFACT_CHUNK_BYTES
from redis_benchmarks_spec.results.binary import valid_versions

CHUNK_BYTES = ARTIFACT_CHUNK_BYTES
DEFAULT_TTL_S = 14 * 24 * 3600
BUILD_KINDS = ("clean", "incremental")  # the manifest's build_kind (builder/kept_tree.py)


class ArtifactError(RuntimeError):
    """An artifact cannot be stored or fetched."""


class ArtifactMissing(ArtifactError):
    """The artifact (or one of its chunks) is gone, typically expired."""


class ArtifactCorrupt(ArtifactError):
    """The fetched bytes do not match the sha256 the build event carries."""


class ArtifactForged(ArtifactError):
    """The artifact's MAC is missing or wrong: no builder holding our key made it."""


class S3Unavailable(ArtifactError):
    """S3 was asked for but boto3 is not installed."""


class ArtifactUnreachable(ArtifactError):
    """The store refused or failed the fetch (no credentials, access denied, no such key)."""


@dataclass(frozen=True)
class S3Target:
    """Where a builder uploads artifacts when S3 is configured: ``s3://bucket/prefix``."""

    bucket: str
    prefix: str = "rbs-artifacts"

    @classmethod
    def parse(cls, url: str) -> S3Target:
        """``s3://bucket/some/prefix`` -> S3Target."""
        if not url.startswith("s3://"):
            raise ValueError(f"not an s3:// URL: {url!r}")
        bucket, _, prefix = url.removeprefix("s3://").partition("/")
        return cls(bucket, prefix.strip("/") or "rbs-artifacts")


@dataclass(frozen=True)
class StoredArtifact:
    """An artifact found by its manifest: the reference plus what built it."""

    ref: ArtifactRef
    redis_version: str
    env: dict[str, str]


def env_digest(env: Mapping[str, str]) -> str:
    """A short digest of a variant's make variables (part of the artifact key)."""
    return hashlib.sha256(json.dumps(dict(env), sort_keys=True).encode()).hexdigest()[:12]


def artifact_key(prefix: str, sha: str, variant: str,
                 env: Mapping[str, str] | None = None) -> str:
    """The manifest key of the artifact of ``sha`` built in ``variant``.

    With ``env`` (the variant's make variables) the key also names them, so a variant file
    edited under the same id builds anew instead of reusing, or overwriting, the old build.
    """
    digest = env_digest(env) if env is not None else None
    return StreamNames.with_prefix(prefix).artifact_key(sha, variant, digest)


def _s3_client() -> Any:
    try:
        import boto3  # optional dependency: pip install redis-benchmarks-spec[s3]
    except ImportError as exc:
        raise S3Unavailable("S3 artifacts need boto3 "
                            "(pip install 'redis-benchmarks-spec[s3]')") from exc
    # a session per client: boto3's default session keeps the first credentials it found
    # for the life of the process (a daemon would never see rotated ones)
    return boto3.session.Session().client("s3")


def _manifest(artifact: Artifact, ref: ArtifactRef) -> Mapping[Any, str | int]:
    return {"kind": ref.kind, "location": ref.location, "sha256": artifact.sha256,
            "mac": ref.mac, "chunks": ref.chunks,
            "size": len(artifact.data),
            "redis_version": artifact.redis_version,
            "redis_server_version": artifact.redis_server_version,
            "env": json.dumps(artifact.env, sort_keys=True),
            "compiler": artifact.compiler_version,
            "cflags_verified": int(artifact.cflags_verified),
            "source_sha": artifact.source_sha,
            "build_kind": artifact.build_kind, "built_over": artifact.built_over,
            "build_reason": artifact.build_reason, "verification": artifact.verification,
            "deps": json.dumps(artifact.deps, sort_keys=True)}


@dataclass(frozen=True)
class Signer:
    """What a stored artifact is signed for: the commit and the variant, with the key."""

    key: bytes
    sha: str
    variant: str

    def mac(self, sha256: str, size: int) -> str:
        return signing.mac(self.key, self.sha, self.variant, sha256, size)


def store(client: redis.Redis, key: str, artifact: Artifact, signer: Signer,
          ttl_s: int = DEFAULT_TTL_S, s3: S3Target | None = None) -> ArtifactRef:
    """Store ``artifact`` (in Redis chunks, or in S3 when ``s3`` is set) and its manifest."""
    mac = signer.mac(artifact.sha256, len(artifact.data))
    if s3 is not None:
        return _store_s3(client, key, artifact, ttl_s, s3, mac)
    chunks = [artifact.data[i:i + CHUNK_BYTES]
              for i in range(0, len(artifact.data), CHUNK_BYTES)] or [b""]
    ref = ArtifactRef(ARTIFACT_REDIS, key, artifact.sha256, len(artifact.data), len(chunks),
                      mac)
    pipe = client.pipeline(transaction=True)
    for i, chunk in enumerate(chunks):
        pipe.set(f"{key}:{i}", chunk, ex=ttl_s)
    pipe.hset(key, mapping=_manifest(artifact, ref))
    pipe.expire(key, ttl_s)
    pipe.execute()
    return ref


def _store_s3(client: redis.Redis, key: str, artifact: Artifact, ttl_s: int,
              s3: S3Target, mac: str) -> ArtifactRef:
    object_key = f"{s3.prefix}/{key.replace(':', '/')}.tar.gz"
    _s3_client().put_object(Bucket=s3.bucket, Key=object_key, Body=artifact.data,
                            Metadata={"sha256": artifact.sha256})
    location = f"s3://{s3.bucket}/{object_key}"
    ref = ArtifactRef(ARTIFACT_S3, location, artifact.sha256, len(artifact.data), 1, mac)
    pipe = client.pipeline(transaction=True)
    pipe.hset(key, mapping=_manifest(artifact, ref))
    pipe.expire(key, ttl_s)
    pipe.execute()
    return ref


def existing(client: redis.Redis, key: str, signer: Signer) -> StoredArtifact | None:
    """The artifact already stored under ``key`` (reused for the same sha and variant).

    The manifest lives in the broker, which others can write: it is reused only when it
    parses, its MAC is ours, it records that its source was verified to be ``signer.sha``
    and, for Redis chunks, every chunk is there. Anything else is rebuilt (and
    overwritten), never trusted.
    """
    raw: dict[bytes, bytes] = client.hgetall(key)  # type: ignore[assignment]
    if not raw:
        return None
    try:
        fields = {k.decode(): v.decode() for k, v in raw.items()}
        ref = ArtifactRef(fields.get("kind", ARTIFACT_REDIS), fields.get("location", key),
                          fields["sha256"], int(fields["size"]), int(fields["chunks"]),
                          fields.get("mac", ""))
        env = json.loads(fields["env"])
    except (KeyError, ValueError, MessageError):  # UnicodeDecodeError is a ValueError
        return None
    if not signing.verify(signer.key, ref.mac, signer.sha, signer.variant, ref.sha256,
                          ref.size_bytes) or fields.get("source_sha") != signer.sha:
        return None
    if fields.get("build_kind") not in BUILD_KINDS:
        return None  # stored before kept trees knew build inputs (builder/kept_tree.py)
    if ref.kind == ARTIFACT_REDIS and (ref.location != key or client.exists(
            *[f"{key}:{i}" for i in range(ref.chunks)]) != ref.chunks):
        return None  # chunks expired before the manifest: rebuild
    return StoredArtifact(ref, fields.get("redis_version", ""), env)


def _fetch_redis(client: redis.Redis, ref: ArtifactRef) -> bytes:
    parts = client.mget([f"{ref.location}:{i}" for i in range(ref.chunks)])
    missing = [i for i, p in enumerate(parts) if p is None]
    if missing:
        raise ArtifactMissing(f"artifact {ref.location}: chunks {missing} missing (expired?)")
    return b"".join(parts)  # type: ignore[arg-type]


def _fetch_s3(ref: ArtifactRef) -> bytes:
    bucket, _, object_key = ref.location.removeprefix("s3://").partition("/")
    client = _s3_client()
    from botocore.exceptions import BotoCoreError, ClientError  # installed with boto3

    try:
        stream = client.get_object(Bucket=bucket, Key=object_key)["Body"]
        body: bytes = stream.read(ref.size_bytes + 1)  # never more than the event announced
    except (BotoCoreError, ClientError) as exc:
        # NoCredentialsError, AccessDenied, NoSuchKey...: the event cannot be run here
        raise ArtifactUnreachable(f"artifact {ref.location}: {type(exc).__name__}: {exc}") \
            from exc
    return body


def check_mac(key: bytes, ref: ArtifactRef, sha: str, variant: str) -> None:
    """:class:`ArtifactForged` unless ``ref`` carries our MAC for that commit and variant."""
    if not signing.verify(key, ref.mac, sha, variant, ref.sha256, ref.size_bytes):
        raise ArtifactForged(f"artifact {ref.location}: "
                             f"{'wrong' if ref.mac else 'no'} MAC for {sha[:12]} {variant} "
                             "(not made by a builder holding the artifact key)")


def fetch(client: redis.Redis, ref: ArtifactRef) -> bytes:
    """The artifact's bytes, verified against the size and sha256 its event carries."""
    data = _fetch_s3(ref) if ref.kind == ARTIFACT_S3 else _fetch_redis(client, ref)
    if len(data) != ref.size_bytes:
        raise ArtifactCorrupt(f"artifact {ref.location}: {len(data)} bytes, the event says "
                              f"{ref.size_bytes}")
    digest = hashlib.sha256(data).hexdigest()
    if digest != ref.sha256:
        raise ArtifactCorrupt(f"artifact {ref.location}: sha256 {digest} does not match the "
                              f"event's {ref.sha256}")
    return data



def manifest_key(prefix: str, event: BuildEvent) -> str:
    """The manifest of the event's artifact: its location for Redis chunks, else the key
    of the event's commit, variant and make variables."""
    if event.artifact.kind == ARTIFACT_REDIS:
        return event.artifact.location
    return artifact_key(prefix, event.sha, event.build_variant, event.env)


def provenance(client: redis.Redis, key: str) -> dict[str, Any]:
    """How the artifact under manifest ``key`` was built, as its manifest records it:
    ``build_kind``, ``built_over``, ``build_reason`` and ``deps``; {} when there is no
    manifest. The manifest is broker data: each value is kept only when it has its form."""
    raw: dict[bytes, bytes] = client.hmget(key, "build_kind", "built_over",  # type: ignore[assignment]
                                           "build_reason", "deps")
    kind, over, reason, deps = (v.decode(errors="replace") if v else "" for v in raw)
    out: dict[str, Any] = {}
    if kind in BUILD_KINDS:
        out["build_kind"] = kind
    if re.fullmatch(r"[0-9a-f]{40}", over):
        out["built_over"] = over
    if reason:
        out["build_reason"] = reason[:300]
    try:
        parsed = json.loads(deps) if deps else {}
    except ValueError:
        parsed = {}
    if isinstance(parsed, dict) and (versions := valid_versions(parsed)):
        out["deps"] = versions
    return out
