"""Fetching a build request's source: real git repositories, a mirror, tarballs in Redis,
and the provenance check (the tree is the commit the request claims, or it is refused)."""

from __future__ import annotations

import hashlib
import io
import subprocess
import tarfile
from pathlib import Path

import pytest

from redis_benchmarks_spec.builder.source import (
    GitOptions,
    ProvenanceError,
    SourceError,
    fetch_source,
)
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
    source = fetch_source(None, request(first, SourceLocation(SOURCE_GIT, str(repo))),  # type: ignore[arg-type]
                          tmp_path / "src")
    tree = source.root
    assert git(tree, "rev-parse", "HEAD") == first != second
    assert source.sha == first
    assert "Redis server" in (tree / "src" / "server.c").read_text()


def test_git_remote_override_and_mirror_follow_new_commits(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "origin")
    options = GitOptions(remote=str(repo), mirror_dir=tmp_path / "mirrors")
    bogus = SourceLocation(SOURCE_GIT, "https://example.invalid/redis.git")
    sha1 = git(repo, "rev-parse", "HEAD")
    fetch_source(None, request(sha1, bogus), tmp_path / "a", options)  # type: ignore[arg-type]
    (mirror,) = (tmp_path / "mirrors").glob("*.git")
    sha2 = commit_all(repo, "newer")
    tree = fetch_source(None, request(sha2, bogus), tmp_path / "b", options).root  # type: ignore[arg-type]
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
    """A tarball of the tree that is not a ``git archive``: it names no commit."""
    buf = io.BytesIO()
    with tarfile.open(fileobj=buf, mode="w:gz") as tar:
        tar.add(root / "src", arcname="redis-7.9.0/src")
        tar.add(root / "Makefile", arcname="redis-7.9.0/Makefile")
    return buf.getvalue()


def _archive(repo: Path, rev: str) -> bytes:
    """What ``rbs trigger`` uploads: ``git archive --format=tar.gz`` of ``rev``."""
    return subprocess.run(["git", "-C", str(repo), "archive", "--format=tar.gz",
                           "--prefix=redis-7.9.0/", rev], check=True, capture_output=True,
                          timeout=60).stdout


def _stored(client, data: bytes, key: str) -> SourceLocation:  # type: ignore[no-untyped-def]
    client.set(key, data)
    return SourceLocation(SOURCE_REDIS, key, hashlib.sha256(data).hexdigest())


def test_redis_tarball_source_is_verified_and_unwrapped(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    data = _archive(repo, sha)
    good = _stored(client, data, "src:1")
    source = fetch_source(client, request(sha, good), tmp_path / "ok")
    assert source.root.name == "redis-7.9.0" and (source.root / "Makefile").exists()
    assert source.sha == sha
    bad = SourceLocation(SOURCE_REDIS, "src:1", "0" * 64)
    with pytest.raises(SourceError, match="sha256 mismatch"):
        fetch_source(client, request(sha, bad), tmp_path / "bad")
    with pytest.raises(SourceError, match="missing"):
        fetch_source(client, request(sha, SourceLocation(SOURCE_REDIS, "src:gone")),
                     tmp_path / "gone")


def test_archive_of_another_commit_under_a_claimed_sha_is_refused(redis_server,  # type: ignore[no-untyped-def]
                                                                  tmp_path: Path) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    claimed = git(repo, "rev-parse", "HEAD")
    (repo / "src" / "server.c").write_text("int main(void) { return 42; }\n")
    other = commit_all(repo, "another tree")
    location = _stored(client, _archive(repo, other), "src:other")
    with pytest.raises(ProvenanceError) as refused:
        fetch_source(client, request(claimed, location), tmp_path / "other")
    assert refused.value.claimed == claimed and refused.value.found == other
    assert claimed in str(refused.value) and other in str(refused.value)
    # the same bytes under their own sha are fine: the check is the commit, not the bytes
    assert fetch_source(client, request(other, location), tmp_path / "own").sha == other


@pytest.mark.parametrize("kind", ["plain tarball", "tree archive"])
def test_archive_that_names_no_commit_is_refused(redis_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                 kind: str) -> None:
    client = redis_server.client()
    repo = tiny_redis_repo(tmp_path / "origin")
    sha = git(repo, "rev-parse", "HEAD")
    # a tree (not a commit) archive has no commit id in its header, like a hand-made tarball
    data = _tarball(repo) if kind == "plain tarball" else _archive(repo, f"{sha}^{{tree}}")
    with pytest.raises(ProvenanceError, match="records no commit id") as refused:
        fetch_source(client, request(sha, _stored(client, data, "src:x")), tmp_path / "x")
    assert refused.value.claimed == sha and refused.value.found is None
