"""Real Redis history from the vendored bundle: unpack it once, build ``redis-server`` of a
commit once, and keep the binary by sha.

``../shared/vendor/redis-unstable-2021.git.tar.gz`` (see that folder's README) is a bare git
repository of Redis ``unstable`` 2021-02..2024-10. It is unpacked into
``.cache/redis-history/`` (or ``$RBS_TEST_CACHE/redis-history/``) and reused. A commit is
built by the one local build cache, ``rbs run --baseline-commit``'s and ``rbs bisect
--local``'s (:class:`~redis_benchmarks_spec.builder.commit_builds.CommitBuilds`: the
builder's compile step and default build variant, in one work tree, the binary kept by
commit and flags under ``.cache/commit-builds/`` or ``$RBS_TEST_CACHE/commit-builds/``). A
commit built here is built for those commands too, and the other way round: issue 41's
"build once" (tests/test_run_commits.py builds the same commits). Used by
``benchmarks/real_prs.py``, ``benchmarks/memory_pr.py`` and ``tests/test_redis_history.py``.
"""

from __future__ import annotations

import contextlib
import fcntl
import os
import re
import shutil
import subprocess
import tarfile
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.builder.commit_builds import CommitBuildError, CommitBuilds
from redis_benchmarks_spec.builder.variants import load_variants

ROOT = Path(__file__).resolve().parents[1]
BUNDLE_NAME = "redis-unstable-2021.git.tar.gz"


def vendor_candidates() -> list[Path]:
    """Where the vendor folder may be: ``$RBS_VENDOR_DIR``, beside this checkout, or beside
    the local checkout this one was cloned from (a CI clone elsewhere on the machine)."""
    out = [Path(os.environ["RBS_VENDOR_DIR"])] if os.environ.get("RBS_VENDOR_DIR") else []
    out.append(ROOT.parent / "shared" / "vendor")
    try:
        origin = subprocess.run(["git", "-C", str(ROOT), "remote", "get-url", "origin"],
                                capture_output=True, text=True, timeout=30, check=False)
    except (OSError, subprocess.TimeoutExpired):
        return out
    url = origin.stdout.strip().removeprefix("file://")
    if origin.returncode == 0 and url and Path(url).is_dir():
        out.append(Path(url).resolve().parent / "shared" / "vendor")
    return out


def _bundle() -> Path:
    found = [d / BUNDLE_NAME for d in vendor_candidates() if (d / BUNDLE_NAME).is_file()]
    return found[0] if found else vendor_candidates()[0] / BUNDLE_NAME


def cache_root() -> Path:
    """Where builds and unpacked bundles are kept: ``$RBS_TEST_CACHE`` when set (a folder
    outside the clone, shared by clones), else the clone's ``.cache``."""
    given = os.environ.get("RBS_TEST_CACHE")
    return Path(given).expanduser().resolve() if given else ROOT / ".cache"


@contextlib.contextmanager
def locked(lock: Path) -> Iterator[None]:
    """Hold an exclusive lock on ``lock`` (created): parallel test processes that need the
    same unpack or build wait for the first one instead of racing it."""
    lock.parent.mkdir(parents=True, exist_ok=True)
    with lock.open("a") as handle:
        fcntl.flock(handle, fcntl.LOCK_EX)
        try:
            yield
        finally:
            fcntl.flock(handle, fcntl.LOCK_UN)


BUNDLE = _bundle()
CACHE = cache_root() / "redis-history"
BARE_NAME = "redis-unstable-2021.git"
BUILD_TIMEOUT_S = 1200
GIT_TIMEOUT_S = 120
SHA = re.compile(r"[0-9a-f]{40}")
_VERSION = re.compile(r'#define REDIS_VERSION "([0-9.]+)"')


class HistoryError(RuntimeError):
    """The bundle, a commit or its build is not usable; the message says which and why."""


@dataclass(frozen=True)
class Built:
    """A redis-server binary of one commit, and how long building it took (0: cached)."""

    sha: str
    binary: Path
    build_seconds: float


def bare_repo(bundle: Path = BUNDLE, cache: Path = CACHE) -> Path:
    """The unpacked bare repository (unpacked on first use)."""
    repo = cache / BARE_NAME
    if (repo / "HEAD").is_file():
        return repo
    with locked(cache / "unpack.lock"):
        if (repo / "HEAD").is_file():  # unpacked while this process waited
            return repo
        return _unpack(bundle, cache, repo)


def _unpack(bundle: Path, cache: Path, repo: Path) -> Path:
    if not bundle.is_file():
        raise HistoryError(f"{bundle}: no such bundle (see ../shared/vendor/README.md)")
    cache.mkdir(parents=True, exist_ok=True)
    partial = cache / (BARE_NAME + ".partial")
    shutil.rmtree(partial, ignore_errors=True)
    with tarfile.open(bundle) as tar:
        tar.extractall(partial, filter="data")
    (partial / BARE_NAME).rename(repo)
    partial.rmdir()
    return repo


def git(repo: Path, *args: str) -> str:
    done = subprocess.run(["git", "--git-dir", str(repo), *args], capture_output=True,
                          text=True, timeout=GIT_TIMEOUT_S, check=False)
    if done.returncode != 0:
        raise HistoryError(f"git {' '.join(args)}: {done.stderr.strip()[-300:]}")
    return done.stdout.strip()


def full_sha(repo: Path, rev: str) -> str:
    """The 40-hex sha of ``rev`` (a sha prefix or ``<sha>^``), which must be a commit."""
    if not re.fullmatch(r"[0-9a-f]{4,40}\^?", rev):
        raise HistoryError(f"{rev}: not a commit sha")
    sha = git(repo, "rev-parse", "--verify", "--quiet", rev + "^{commit}")
    if not SHA.fullmatch(sha):
        raise HistoryError(f"{rev}: not a commit of {repo}")
    return sha


def version_of(repo: Path, sha: str) -> str:
    """REDIS_VERSION of ``src/version.h`` at ``sha``."""
    found = _VERSION.search(git(repo, "show", f"{sha}:src/version.h"))
    if not found:
        raise HistoryError(f"{sha}: src/version.h has no REDIS_VERSION")
    return found.group(1)


#: the build variant history is built in: the lab's default
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"


def commit_builds(repo: Path, timeout_s: float = BUILD_TIMEOUT_S) -> CommitBuilds:
    """The one local build cache for ``repo``'s commits (see the module's text)."""
    return CommitBuilds(repo, load_variants()[VARIANT], cache_root() / "commit-builds",
                        timeout_s=timeout_s)


def binary_path(repo: Path, sha: str) -> Path:
    return commit_builds(repo).kept(sha) / "redis-server"


def build(repo: Path, sha: str, timeout_s: float = BUILD_TIMEOUT_S) -> Built:
    """redis-server of ``sha`` (40 hex), built unless the cache holds it."""
    if not SHA.fullmatch(sha):
        raise HistoryError(f"{sha}: not a 40-hex commit sha")
    try:
        done = commit_builds(repo, timeout_s).server(sha)
    except CommitBuildError as exc:
        raise HistoryError(str(exc)) from None
    return Built(sha, done.binary, done.seconds)  # 0 when the cache held it
