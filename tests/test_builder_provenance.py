"""The builder builds only the commit a request claims: an archive of another tree sent under
a sha is refused with a dead letter naming both shas; a genuine one builds, and its artifact
records the verified sha. A real redis-server broker and the tiny Redis-shaped tree."""

from __future__ import annotations

import hashlib
import subprocess
import uuid
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.follow import Follower
from redis_benchmarks_spec.events.messages import (
    SOURCE_REDIS,
    BuildEvent,
    BuildRequest,
    SourceLocation,
)
from redis_benchmarks_spec.events.names import StreamNames
from tests.pipeline_fixtures import commit_all, git, tiny_redis_repo, tiny_variant_yaml

TINY = "gcc:test-plain"


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"v{uuid.uuid4().hex[:8]}")


def queue_archive(client: redis.Redis, names: StreamNames, repo: Path, rev: str,
                  claimed: str) -> tuple[BuildRequest, str]:
    """What ``rbs trigger`` sends: ``git archive`` of ``rev`` in Redis, under ``claimed``."""
    data = subprocess.run(["git", "-C", str(repo), "archive", "--format=tar.gz", rev],
                          check=True, capture_output=True, timeout=60).stdout
    key = names.source_key(claimed, uuid.uuid4().hex)
    client.set(key, data)
    request = BuildRequest(org="redis", repo="redis", branch="unstable", sha=claimed,
                           commit_time_ms=1, build_variants=[TINY],
                           source=SourceLocation(SOURCE_REDIS, key,
                                                 hashlib.sha256(data).hexdigest()))
    return request, publish(client, names.build_requests, request)


def run_builder(client: redis.Redis, names: StreamNames, tmp_path: Path,
                ended: list[tuple[str, str, str]]) -> None:
    variants = tmp_path / "variants"
    variants.mkdir(exist_ok=True)
    (variants / "plain.yml").write_text(tiny_variant_yaml(TINY, ""))
    builder = Builder(client, BuilderConfig(
        names=names, consumer="b1", variants=load_variants(variants), block_ms=200,
        work_dir=tmp_path / "work", cache_dir=tmp_path / "cache"),
        on_build_ended=lambda req, variant, state, why: ended.append((variant, state, why)))
    assert builder.run(max_requests=1) == 1


def test_archive_of_another_tree_under_a_claimed_sha_is_dead_lettered(redis_server, names,  # type: ignore[no-untyped-def]
                                                                      tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    claimed = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "server.c").write_text("int main(void) { return 7; }\n")
    other = commit_all(repo, "another tree")
    request, entry_id = queue_archive(client, names, repo, other, claimed)
    ended: list[tuple[str, str, str]] = []
    run_builder(client, names, tmp_path, ended)
    assert client.xlen(names.builds) == 0 and client.xlen(names.build_failures) == 0
    rows: Any = client.xrange(names.dead_letter)
    [(_, letter)] = rows
    reason = letter[b"reason"].decode()
    assert claimed in reason and other in reason and "provenance" in reason, reason
    assert client.xpending(names.build_requests, names.builders_group)["pending"] == 0
    assert not list(client.scan_iter(f"{names.artifact_prefix}*"))  # nothing was stored
    assert not list((tmp_path / "cache").glob("*"))  # nothing cached either
    assert ended == [(TINY, "dead-lettered", reason)]
    follower = Follower(client, names, [(request, entry_id)])
    [progress] = follower.poll()
    assert follower.finished() and progress.dead_letter == reason


def test_genuine_archive_builds_and_the_artifact_records_the_verified_sha(redis_server,  # type: ignore[no-untyped-def]
                                                                          names,
                                                                          tmp_path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue_archive(client, names, repo, sha, sha)
    ended: list[tuple[str, str, str]] = []
    run_builder(client, names, tmp_path, ended)
    rows: Any = client.xrange(names.builds)
    [(entry_id, fields)] = rows
    event = BuildEvent.decode(fields, entry_id.decode())
    assert event.sha == sha and ended == [] and client.xlen(names.dead_letter) == 0
    manifest = client.hgetall(event.artifact.location)
    assert manifest[b"source_sha"] == sha.encode()
    # how it was built: a fresh tree (no kept tree), over no earlier commit's build
    assert manifest[b"build_kind"] == b"clean" and manifest[b"built_over"] == b""


def test_a_manifest_without_a_verified_source_is_not_reused(redis_server, names,  # type: ignore[no-untyped-def]
                                                            tmp_path) -> None:
    """An artifact stored before provenance was checked (or by anyone else) is rebuilt."""
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue_archive(client, names, repo, sha, sha)
    run_builder(client, names, tmp_path, [])
    rows: Any = client.xrange(names.builds)
    first = BuildEvent.decode(rows[0][1])
    client.hdel(first.artifact.location, "source_sha")
    for stale in (tmp_path / "cache").glob("*.json"):
        stale.unlink()  # the local cache would otherwise answer first
    queue_archive(client, names, repo, sha, sha)
    run_builder(client, names, tmp_path, [])
    assert client.hget(first.artifact.location, "source_sha") == sha.encode()  # rebuilt


def test_a_tampered_cache_entry_is_discarded_rebuilt_and_logged(redis_server, names,  # type: ignore[no-untyped-def]
                                                               tmp_path, caplog) -> None:
    """Someone who can write the cache folder rewrites an entry consistently (tarball, its
    sha256 and size in the JSON): it is never announced; the builder rebuilds it."""
    import io
    import json
    import logging
    import tarfile

    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue_archive(client, names, repo, sha, sha)
    run_builder(client, names, tmp_path, [])
    rows: Any = client.xrange(names.builds)
    genuine = BuildEvent.decode(rows[0][1])
    [meta_path] = (tmp_path / "cache").glob("*.json")
    assert meta_path.with_suffix(".mac").exists()
    evil = io.BytesIO()
    with tarfile.open(fileobj=evil, mode="w:gz") as tar:
        body = b"#!/bin/sh\necho owned\n"
        info = tarfile.TarInfo("redis-server")
        info.size, info.mode = len(body), 0o755
        tar.addfile(info, io.BytesIO(body))
    data = evil.getvalue()
    meta = json.loads(meta_path.read_text())
    meta["sha256"] = hashlib.sha256(data).hexdigest()
    meta_path.with_suffix(".tar.gz").write_bytes(data)
    meta_path.write_text(json.dumps(meta))
    client.delete(genuine.artifact.location)  # the broker's manifest would answer first
    queue_archive(client, names, repo, sha, sha)
    with caplog.at_level(logging.WARNING, logger="redis_benchmarks_spec.builder.cache"):
        run_builder(client, names, tmp_path, [])
    rows = client.xrange(names.builds)
    rebuilt = BuildEvent.decode(rows[1][1])
    assert rebuilt.artifact.sha256 != meta["sha256"]  # the tampered bytes were not announced
    assert rebuilt.artifact.sha256 == genuine.artifact.sha256 or rebuilt.artifact.size_bytes > 200
    assert any("discarded, rebuilding" in r.getMessage() and "MAC" in r.getMessage()
               for r in caplog.records), caplog.text
    # the rebuilt entry is cached again, signed
    assert json.loads(meta_path.read_text())["sha256"] == rebuilt.artifact.sha256
    assert meta_path.with_suffix(".mac").exists()


def test_an_artifact_that_does_not_say_how_it_was_built_is_rebuilt(redis_server, names,  # type: ignore[no-untyped-def]
                                                                  tmp_path) -> None:
    """A manifest or cache entry from before kept trees knew build inputs may hold a binary
    built over another commit's deps/: neither is reused."""
    import json

    from redis_benchmarks_spec.builder import cache as build_cache
    from redis_benchmarks_spec.builder import signing

    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    queue_archive(client, names, repo, sha, sha)
    run_builder(client, names, tmp_path, [])
    rows: Any = client.xrange(names.builds)
    first = BuildEvent.decode(rows[0][1])
    client.hdel(first.artifact.location, "build_kind")
    [meta_path] = (tmp_path / "cache").glob("*.json")
    meta = json.loads(meta_path.read_text())
    del meta["build_kind"]
    # a genuine entry of the old form, signed with the builder's key
    old_json = json.dumps(meta).encode()
    who = build_cache.Identity(signing.load_key(), sha, TINY)
    meta_path.write_bytes(old_json)
    meta_path.with_suffix(".mac").write_text(build_cache._mac(
        who, meta_path.with_suffix(".tar.gz").read_bytes(), old_json))
    queue_archive(client, names, repo, sha, sha)
    run_builder(client, names, tmp_path, [])
    assert client.hget(first.artifact.location, "build_kind") == b"clean"  # rebuilt
    assert json.loads(meta_path.read_text())["build_kind"] == "clean"
