"""Fetching a build request's source: real git repositories, a mirror, tarballs in Redis."""

from __future__ import annotations

import hashlib
import io
import tarfile
from pathlib import Path

import pytest

from redis_benchmarks_spec.builder.source import GitOptions, SourceError, fetch_source
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    SOURCE_REDIS,
    BuildRequest,
    SourceLocation,
)
from tests.pipeline_fixtures import commit_all, git, tiny_redis_repo


def request(sha: str, source: SourceLocation) -> BuildRequest:
    return BuildRequest(org="redis", repo="redis", branch="unstable", sha=sha,
                        commit_time_ms=0, source=source)


def test_git_source_checks_out_the_exact_older_commit(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "origin")
    first = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "server.c").write_text("int main(void) { return 1; }\n")
    second = commit_all(repo, "second")
    tree = fetch_source(None, request(first, SourceLocation(SOURCE_GIT, str(repo))),  # type: ignore[arg-type]
                        tmp_path / "src")
    assert git(tree, "rev-parse", "HEAD") == first != second
    assert "Redis server" in (tree / "src" / "server.c").read_text()


def test_git_remote_override_and_mirror_follow_new_commits(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "origin")
    options = GitOptions(remote=str(repo), mirror_dir=tmp_path / "mirrors")
    bogus = SourceLocation(SOURCE_GIT, "https://example.invalid/redis.git")
    sha1 = git(repo, "rev-parse", "HEAD")
    fetch_source(None, request(sha1, bogus), tmp_path / "a", options)  # type: ignore[arg-type]
    (mirror,) = (tmp_path / "mirrors").glob("*.git")
    sha2 = commit_all(repo, "newer")
    tree = fetch_source(None, request(sha2, bogus), tmp_path / "b", options)  # type: ignore[arg-type]
    assert git(tree, "rev-parse", "HEAD") == sha2
    assert git(mirror, "rev-parse", "unstable") == sha2  # the mirror fetched the new commit


def test_unknown_commit_is_a_source_error(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "origin")
    missing = "0123456789abcdef0123456789abcdef01234567"
    with pytest.raises(SourceError, match=missing):
        fetch_source(None, request(missing, SourceLocation(SOURCE_GIT, str(repo))),  # type: ignore[arg-type]
                     tmp_path / "src", GitOptions(mirror_dir=tmp_path / "mirrors"))
    with pytest.raises(SourceError):
        fetch_source(None, request(missing, SourceLocation(SOURCE_GIT, str(repo))),  # type: ignore[arg-type]
                     tmp_path / "src2")


def _tarball(root: Path) -> bytes:
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(root / "src", arcname="redis-7.9.0/src")
        tar.add(root / "Makefile", arcname="redis-7.9.0/Makefile")
    return buf.getvalue()


def test_redis_tarball_source_is_verified_and_unwrapped(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    data = _tarball(tiny_redis_repo(tmp_path / "origin"))
    client.set("src:1", data)
    good = SourceLocation(SOURCE_REDIS, "src:1", hashlib.sha256(data).hexdigest())
    tree = fetch_source(client, request("a" * 40, good), tmp_path / "ok")
    assert tree.name == "redis-7.9.0" and (tree / "Makefile").exists()
    bad = SourceLocation(SOURCE_REDIS, "src:1", "0" * 64)
    with pytest.raises(SourceError, match="sha256 mismatch"):
        fetch_source(client, request("a" * 40, bad), tmp_path / "bad")
    with pytest.raises(SourceError, match="missing"):
        fetch_source(client, request("a" * 40, SourceLocation(SOURCE_REDIS, "src:gone")),
                     tmp_path / "gone")
