"""Artifacts in a real Redis: chunking, reuse lookup, sha256 verification, variants."""

from __future__ import annotations

import dataclasses
import hashlib
import os
import sys
from pathlib import Path

import pytest

from redis_benchmarks_spec.builder import artifacts
from redis_benchmarks_spec.builder.compile import Artifact
from redis_benchmarks_spec.builder.variants import load_variant, load_variants
from redis_benchmarks_spec.events.messages import ARTIFACT_S3, ArtifactRef
from redis_benchmarks_spec.suites.problems import SpecError

KEY = b"k" * 32


def signer(sha: str) -> artifacts.Signer:
    return artifacts.Signer(KEY, sha, "v1")


def artifact(size: int) -> Artifact:
    data = os.urandom(size)
    return Artifact(data=data, sha256=hashlib.sha256(data).hexdigest(), variant="v1",
                    env={"REDIS_CFLAGS": "-O3"}, redis_version="7.0.15",
                    compiler_version="gcc 12.2.0", build_seconds=1.0)


def test_large_artifact_is_chunked_and_round_trips(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    # built from a source verified to be commit a...a (builder/source.py)
    art = dataclasses.replace(artifact(2 * artifacts.CHUNK_BYTES + 123), source_sha="a" * 40)
    key = artifacts.artifact_key("t", "a" * 40, "v1")
    ref = artifacts.store(client, key, art, signer("a" * 40), ttl_s=600)
    assert ref.chunks == 3 and ref.size_bytes == len(art.data)
    assert 0 < client.ttl(f"{key}:2") <= 600 and 0 < client.ttl(key) <= 600
    assert artifacts.fetch(client, ref) == art.data
    stored = artifacts.existing(client, key, signer("a" * 40))
    assert stored is not None and stored.ref == ref and stored.env == {"REDIS_CFLAGS": "-O3"}


def test_corrupt_chunk_is_detected(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    key = artifacts.artifact_key("t", "b" * 40, "v1")
    ref = artifacts.store(client, key, artifact(1000), signer("b" * 40))
    client.setrange(f"{key}:0", 10, b"XX")
    with pytest.raises(artifacts.ArtifactCorrupt, match="does not match"):
        artifacts.fetch(client, ref)


def test_expired_chunk_means_missing_and_no_reuse(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    key = artifacts.artifact_key("t", "c" * 40, "v1")
    ref = artifacts.store(client, key, artifact(artifacts.CHUNK_BYTES + 1), signer("c" * 40))
    client.delete(f"{key}:1")
    with pytest.raises(artifacts.ArtifactMissing, match=r"chunks \[1\]"):
        artifacts.fetch(client, ref)
    assert artifacts.existing(client, key, signer("c" * 40)) is None  # the builder rebuilds it


def test_s3_without_boto3_is_a_clear_error(redis_server,  # type: ignore[no-untyped-def]
                                           monkeypatch: pytest.MonkeyPatch) -> None:
    # setup installs the s3 extra: hide boto3 (a None entry makes its import fail) so this
    # runs, rather than skipping on every machine that ran setup
    monkeypatch.setitem(sys.modules, "boto3", None)
    ref = ArtifactRef(ARTIFACT_S3, "s3://bucket/x.tar.gz", "0" * 64, 1)
    with pytest.raises(artifacts.S3Unavailable, match="boto3"):
        artifacts.fetch(redis_server.client(), ref)
    assert artifacts.S3Target.parse("s3://b/some/prefix/") == artifacts.S3Target("b", "some/prefix")


def test_shipped_build_variants_load_and_reach_make() -> None:
    variants = load_variants()
    default = variants["gcc:12.2.0-amd64-debian-bookworm-default"]
    assert default.make_env()["CC"] == "gcc"
    marked = [v for v in variants.values() if "-O3" in v.env.get("REDIS_CFLAGS", "")]
    assert marked, "a variant with extra REDIS_CFLAGS proves env reaches the compiler"


def test_variant_with_unknown_key_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "v.yml"
    path.write_text("id: x\ncompilr: gcc\n")
    with pytest.raises(SpecError, match="compilr"):
        load_variant(path)
