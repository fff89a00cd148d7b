"""Reading commits and source archives from a git repository with the real ``git`` binary.

Every call is an argv list with a timeout; a failure raises :class:`GitError` carrying the
command and git's own message.
"""

from __future__ import annotations

import re
import subprocess
import tempfile
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.common.process import tool_env

GIT_TIMEOUT_S = 120
CLONE_TIMEOUT_S = 900
_GITHUB_URL = re.compile(r"github\.com[:/](?P<org>[^/]+)/(?P<repo>[^/]+?)(?:\.git)?/?$")


class GitError(RuntimeError):
    """A git command failed or timed out."""


@dataclass(frozen=True)
class Commit:
    """One commit to build."""

    sha: str
    commit_time_ms: int  # committer time
    subject: str


def git(repo: Path, *args: str, timeout: float = GIT_TIMEOUT_S) -> bytes:
    """Run ``git -C repo args...``; its stdout, or :class:`GitError`."""
    argv = ["git", "-C", str(repo), *args]
    try:
        done = subprocess.run(argv, capture_output=True, timeout=timeout, check=False,
                              env=tool_env())
    except subprocess.TimeoutExpired as exc:
        raise GitError(f"{' '.join(argv)} timed out after {timeout}s") from exc
    except FileNotFoundError as exc:
        raise GitError("git is not installed") from exc
    if done.returncode != 0:
        message = done.stderr.decode(errors="replace").strip()
        raise GitError(f"{' '.join(argv)} failed ({done.returncode}): {message}")
    return done.stdout


def is_remote(location: str) -> bool:
    """True when ``location`` is a URL (or scp-like address) rather than a local path."""
    return "://" in location or (re.match(r"^[\w.-]+@[\w.-]+:", location) is not None)


@contextmanager
def local_repo(location: str) -> Iterator[Path]:
    """A local repository for ``location``: the path itself, or a temporary bare clone."""
    if not is_remote(location):
        path = Path(location)
        git(path, "rev-parse", "--git-dir")  # fails clearly when it is not a repository
        yield path
        return
    with tempfile.TemporaryDirectory(prefix="rbs-trigger-") as tmp:
        target = Path(tmp) / "repo.git"
        argv = ["git", "clone", "--bare", "--quiet", location, str(target)]
        try:
            done = subprocess.run(argv, capture_output=True, timeout=CLONE_TIMEOUT_S,
                                  check=False, env=tool_env())
        except subprocess.TimeoutExpired as exc:
            raise GitError(f"cloning {location} timed out") from exc
        if done.returncode != 0:
            raise GitError(f"cloning {location} failed: "
                           f"{done.stderr.decode(errors='replace').strip()}")
        yield target


def resolve(repo: Path, rev: str) -> str:
    """The full sha of a commit-ish (sha, branch, tag, remote branch)."""
    for candidate in (rev, f"origin/{rev}"):
        try:
            return git(repo, "rev-parse", "--verify", "--quiet",
                       f"{candidate}^{{commit}}").decode().strip()
        except GitError:
            continue
    raise GitError(f"{rev!r} is not a commit, branch or tag of {repo}")


def commits(repo: Path, rev: str, last: int = 1) -> list[Commit]:
    """The last ``last`` commits reachable from ``rev`` (first-parent), oldest first."""
    if last < 1:
        raise ValueError("last must be at least 1")
    sha = resolve(repo, rev)
    out = git(repo, "log", "--first-parent", f"-n{last}", "--format=%H %ct %s", sha)
    found = []
    for line in out.decode(errors="replace").splitlines():
        commit_sha, seconds, subject = (line.split(" ", 2) + [""])[:3]
        found.append(Commit(commit_sha, int(seconds) * 1000, subject))
    return list(reversed(found))


def archive(repo: Path, sha: str) -> bytes:
    """``git archive --format=tar.gz`` of ``sha`` (the source a builder compiles)."""
    return git(repo, "archive", "--format=tar.gz", sha)


def origin_org_repo(repo: Path) -> tuple[str, str] | None:
    """``(org, repo)`` of a GitHub ``origin`` remote, or None when there is none."""
    try:
        url = git(repo, "remote", "get-url", "origin").decode().strip()
    except GitError:
        return None
    return github_org_repo(url)


def github_org_repo(url: str) -> tuple[str, str] | None:
    """``(org, repo)`` of a GitHub URL (https or ssh), or None for other URLs."""
    match = _GITHUB_URL.search(url)
    return (match["org"], match["repo"]) if match else None


def current_branch(repo: Path) -> str | None:
    """The checked-out branch, or None when HEAD is detached or the repo is bare."""
    try:
        name = git(repo, "symbolic-ref", "--quiet", "--short", "HEAD").decode().strip()
    except GitError:
        return None
    return name or None
