"""Getting the source tree a build request names: a tarball in Redis or S3, or a git remote.

Provenance: the tree built must be the commit the request claims. A tarball must be a
``git archive`` of a commit, which records the commit id in its pax global header (what
``git get-tar-commit-id`` prints); a git source is checked out and ``rev-parse HEAD`` must
name the sha. Anything else raises :class:`ProvenanceError` naming the claimed and the found
commit, and the builder dead-letters the request instead of building it. The header is the
archive's own word: it catches an archive of another tree sent under a sha (by mistake or
by a confused trigger), not a forger who writes the expected id into the header.

Git sources are fetched by sha (``git fetch --depth 1 <remote> <sha>``); a remote that refuses
to serve a bare sha gets a full fetch of its branches and tags instead. A builder can override
the request's remote (an internal mirror URL) and keep a local bare mirror per remote, so
repeated builds fetch only what is new.
"""

from __future__ import annotations

import fcntl
import hashlib
import io
import os
import subprocess
import tarfile
import zlib
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

import redis

from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.common.process import minimal_env
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    SOURCE_REDIS,
    SOURCE_S3,
    BuildRequest,
)

GIT_TIMEOUT_S = 600.0
# never wait for a password prompt: a daemon has nobody to type it; and no transport that
# runs a command (ext::) whatever a remote URL asks for
GIT_ENV = {"GIT_TERMINAL_PROMPT": "0", "GIT_ASKPASS": "/bin/false",
           "GIT_ALLOW_PROTOCOL": "https:http:git:ssh:file"}
# what git may need of ours (ssh keys, its config); never the daemon's other secrets
GIT_INHERITED = ("HOME", "SSH_AUTH_SOCK", "GIT_SSH_COMMAND")


class SourceError(RuntimeError):
    """The source could not be fetched; the build fails with this reason."""


class ProvenanceError(SourceError):
    """The source is not the commit the request claims (or does not say which it is)."""

    def __init__(self, claimed: str, found: str | None, where: str) -> None:
        self.claimed = claimed
        self.found = found
        what = f"records commit {found}" if found else "records no commit id"
        super().__init__(f"provenance: the request claims commit {claimed}, {where} {what}")


@dataclass(frozen=True)
class VerifiedSource:
    """A source tree on disk and the commit it was verified to be."""

    root: Path
    sha: str


@dataclass(frozen=True)
class GitOptions:
    """How a builder fetches git sources.

    ``remote`` replaces the request's remote URL (e.g. a mirror next to the builders);
    ``mirror_dir`` holds one bare mirror per remote, updated only when a sha is missing.
    """

    remote: str | None = None
    mirror_dir: Path | None = None
    timeout_s: float = GIT_TIMEOUT_S
    # True: ``dest`` is a tree kept from an earlier build (builder ``--keep-trees``); the
    # checkout is forced over it so only the files that differ get new mtimes and make
    # recompiles only what they touch
    reuse_tree: bool = False

    def __post_init__(self) -> None:
        # the mirror is handed to ``git -C <tree> fetch``: a relative one would be read
        # from inside the tree
        if self.mirror_dir is not None:
            object.__setattr__(self, "mirror_dir", absolute(self.mirror_dir))


def git(*args: str, timeout_s: float = GIT_TIMEOUT_S) -> str:
    """Run ``git`` with ``args``; its stdout, or :class:`SourceError` with its stderr.

    Callers put ``--end-of-options`` before every value that came from a request (remote,
    sha), so a value starting with ``-`` is never read as an option (``--upload-pack=...``).
    """
    env = minimal_env({**{k: os.environ[k] for k in GIT_INHERITED if k in os.environ},
                       **GIT_ENV})
    try:
        proc = subprocess.run(["git", *args], capture_output=True, text=True,
                              timeout=timeout_s, check=False, env=env)
    except subprocess.TimeoutExpired as exc:
        raise SourceError(f"git {' '.join(args[:3])} timed out after {timeout_s:.0f}s") from exc
    if proc.returncode != 0:
        raise SourceError(f"git {' '.join(args[:3])} failed: {proc.stderr.strip()[-500:]}")
    return proc.stdout


MAX_SOURCE_BYTES = 1024**3  # unpacked; redis.git's tree is ~30 MB
MAX_SOURCE_RATIO = 64  # unpacked / packed: source trees compress 4-5x, a gzip bomb 1000x
MAX_SOURCE_MEMBERS = 200_000


def _bounded(limit_bytes: int, limit_members: int):  # type: ignore[no-untyped-def]
    """tarfile's ``data`` filter (no absolute paths, no ``..``, no links out) plus totals."""
    seen = {"bytes": 0, "members": 0}

    def check(member: tarfile.TarInfo, path: str) -> tarfile.TarInfo:
        checked = tarfile.data_filter(member, path)
        seen["bytes"] += checked.size
        seen["members"] += 1
        if seen["bytes"] > limit_bytes or seen["members"] > limit_members:
            raise SourceError(f"source archive exceeds {limit_bytes} bytes or "
                              f"{limit_members} members unpacked")
        return checked
    return check


def _safe_extract(data: bytes, dest: Path) -> str | None:
    """Extract with the limits above; the commit id the archive's pax header records.

    An archive that declares a second, different id further on (a later global header)
    is answered as recording none: one archive, one commit.
    """
    try:
        with tarfile.open(fileobj=io.BytesIO(data), mode="r:*") as tar:
            first = tar.pax_headers.get("comment")
            limit = min(MAX_SOURCE_BYTES, max(len(data) * MAX_SOURCE_RATIO, 64 * 1024**2))
            tar.extractall(dest, filter=_bounded(limit, MAX_SOURCE_MEMBERS))
            last = tar.pax_headers.get("comment")
    except (tarfile.TarError, OSError, EOFError, zlib.error) as exc:
        raise SourceError(f"source archive does not extract: {exc}") from exc
    return first if first == last else None


def _check_archive_commit(request: BuildRequest, recorded: str | None) -> str:
    """The archive's recorded commit when it is the one the request claims."""
    found = recorded.strip() if recorded is not None else None
    if found != request.sha:
        shown = found[:80] if found else None  # the header is untrusted text
        raise ProvenanceError(request.sha, shown,
                              f"source archive {request.source.location!r}")
    return found


def _single_root(dest: Path) -> Path:
    """A tarball with one top folder (orig.tar.gz style) builds from inside that folder."""
    entries = list(dest.iterdir())
    if len(entries) == 1 and entries[0].is_dir() and not (dest / "Makefile").exists():
        return entries[0]
    return dest


def _from_redis(client: redis.Redis, request: BuildRequest, dest: Path) -> str:
    data = client.get(request.source.location)
    if data is None:
        raise SourceError(f"source archive key {request.source.location!r} is missing "
                          f"(expired TTL?) for request {request.id}")
    assert isinstance(data, bytes)
    if request.source.sha256 and hashlib.sha256(data).hexdigest() != request.source.sha256:
        raise SourceError(f"source archive {request.source.location!r}: sha256 mismatch")
    return _check_archive_commit(request, _safe_extract(data, dest))


def _has_commit(repo: Path, sha: str, timeout_s: float) -> bool:
    try:
        git("-C", str(repo), "cat-file", "-e", "--end-of-options", f"{sha}^{{commit}}",
            timeout_s=timeout_s)
    except SourceError:
        return False
    return True


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive file lock: builders on one host share a mirror one at a time."""
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("a") as fh:
        fcntl.flock(fh, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(fh, fcntl.LOCK_UN)


def update_mirror(remote: str, sha: str, options: GitOptions) -> Path:
    """The local bare mirror of ``remote``, fetched if it does not hold ``sha`` yet."""
    assert options.mirror_dir is not None
    name = hashlib.sha256(remote.encode()).hexdigest()[:16]
    mirror = options.mirror_dir / f"{name}.git"
    with _locked(options.mirror_dir / f"{name}.lock"):
        if not mirror.exists():
            git("clone", "-q", "--mirror", "--end-of-options", remote, str(mirror),
                timeout_s=options.timeout_s)
        elif not _has_commit(mirror, sha, options.timeout_s):
            git("-C", str(mirror), "fetch", "-q", "--prune", "origin",
                timeout_s=options.timeout_s)
        if not _has_commit(mirror, sha, options.timeout_s):
            raise SourceError(f"commit {sha} is not in {remote} (mirror {mirror})")
    return mirror


def _fetch_commit(remote: str, sha: str, dest: Path, timeout_s: float) -> None:
    """Fetch ``sha`` into the repository ``dest``: by sha, else every branch and tag."""
    repo = str(dest)
    try:
        git("-C", repo, "fetch", "-q", "--depth", "1", "--end-of-options", remote, sha,
            timeout_s=timeout_s)
        return
    except SourceError as by_sha:
        first_error = by_sha
    git("-C", repo, "fetch", "-q", "--end-of-options", remote,
        "+refs/heads/*:refs/remotes/src/*",
        "+refs/tags/*:refs/tags/*", timeout_s=timeout_s)
    if not _has_commit(dest, sha, timeout_s):
        raise SourceError(f"commit {sha} is not in {remote} ({first_error})")


def _from_git(request: BuildRequest, dest: Path, options: GitOptions) -> str:
    remote = options.remote or request.source.location
    if options.mirror_dir is not None:
        remote = str(update_mirror(remote, request.sha, options))
    git("init", "-q", str(dest), timeout_s=options.timeout_s)
    _fetch_commit(remote, request.sha, dest, options.timeout_s)
    # checkout refuses --end-of-options with --detach; the sha is validated hex and the
    # trailing "--" makes it a revision, never a path or an option
    force = ["-f"] if options.reuse_tree else []
    if options.reuse_tree:
        # the index's stat data of a tree that was copied or restored no longer matches its
        # files: without a refresh, checkout -f rewrites every file and make rebuilds all
        git("-C", str(dest), "update-index", "-q", "--refresh", timeout_s=options.timeout_s)
    git("-C", str(dest), "checkout", "-q", *force, "--detach", request.sha, "--",
        timeout_s=options.timeout_s)
    head = git("-C", str(dest), "rev-parse", "HEAD", timeout_s=options.timeout_s).strip()
    if head != request.sha:
        raise ProvenanceError(request.sha, head, "the checkout")
    return head


def _from_s3(request: BuildRequest, dest: Path) -> str:
    try:
        import boto3  # optional dependency: pip install redis-benchmarks-spec[s3]
    except ImportError as exc:
        raise SourceError("S3 sources need boto3 (pip install 'redis-benchmarks-spec[s3]')") \
            from exc
    bucket, _, key = request.source.location.removeprefix("s3://").partition("/")
    s3 = boto3.session.Session().client("s3")  # credentials as they are now
    body = s3.get_object(Bucket=bucket, Key=key)["Body"].read()
    if request.source.sha256 and hashlib.sha256(body).hexdigest() != request.source.sha256:
        raise SourceError(f"source archive {request.source.location!r}: sha256 mismatch")
    return _check_archive_commit(request, _safe_extract(body, dest))


def fetch_source(client: redis.Redis, request: BuildRequest, dest: Path,
                 options: GitOptions | None = None) -> VerifiedSource:
    """Materialize the request's source under ``dest``, verified to be the commit the
    request claims (:class:`ProvenanceError` otherwise); the tree's root and that sha."""
    dest.mkdir(parents=True, exist_ok=True)
    kind = request.source.kind
    if kind == SOURCE_REDIS:
        sha = _from_redis(client, request, dest)
    elif kind == SOURCE_GIT:
        sha = _from_git(request, dest, options or GitOptions())
    elif kind == SOURCE_S3:
        sha = _from_s3(request, dest)
    else:
        raise SourceError(f"unknown source kind {kind!r}")
    return VerifiedSource(_single_root(dest), sha)
