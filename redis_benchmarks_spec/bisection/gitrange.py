"""The commits ``rbs bisect`` searches: ``good..bad`` on the ancestry path, oldest first."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from redis_benchmarks_spec.bisection.search import BisectError
from redis_benchmarks_spec.common.process import tool_env

GIT_TIMEOUT_S = 300


def git(repo: Path, *args: str) -> str:
    """``git -C repo args`` (argv, never a shell); :class:`BisectError` with git's reason."""
    try:
        proc = subprocess.run(["git", "-C", str(repo), *args], capture_output=True, text=True,
                              timeout=GIT_TIMEOUT_S, check=False, env=tool_env())
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise BisectError(f"git {' '.join(args)}: {exc}") from exc
    if proc.returncode != 0:
        raise BisectError(f"git {' '.join(args)}: {proc.stderr.strip() or proc.returncode}")
    return proc.stdout.strip()


class UnknownCommitError(BisectError):
    """A ref (sha, branch, tag) that names no commit of the repository."""

    def __init__(self, repo: Path, ref: str) -> None:
        super().__init__(f"{ref}: no such commit in {repo}")
        self.ref = ref


def resolve_commit(repo: Path, ref: str) -> str:
    """The full sha ``ref`` names; :class:`UnknownCommitError` when it names none, and
    :class:`BisectError` when ``repo`` is not a git repository."""
    git(repo, "rev-parse", "--git-dir")
    try:
        return git(repo, "rev-parse", "--verify", "--end-of-options", f"{ref}^{{commit}}")
    except BisectError:
        raise UnknownCommitError(repo, ref) from None


def commit_range(repo: Path, good: str, bad: str) -> tuple[str, list[str]]:
    """The full sha of good, and the commits after it up to bad (oldest first)."""
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    commits = git(repo, "rev-list", "--reverse", "--ancestry-path",
                  f"{good_sha}..{bad_sha}").split()
    if not commits:
        raise BisectError(f"{bad} is not a descendant of {good}: nothing to bisect")
    return good_sha, commits


def first_parent_range(repo: Path, good: str, bad: str) -> tuple[str, list[str]]:
    """The full sha of good, and the first-parent commits after it up to bad (oldest
    first): the commits a tracked branch's pushes could have brought one by one."""
    good_sha, bad_sha = resolve_commit(repo, good), resolve_commit(repo, bad)
    commits = git(repo, "rev-list", "--reverse", "--first-parent",
                  f"{good_sha}..{bad_sha}").split()
    if not commits or git(repo, "rev-parse", f"{commits[0]}^") != good_sha:
        raise BisectError(f"{bad} does not follow {good} on the first-parent line: "
                          "nothing to bisect")
    return good_sha, commits


#: a squash-merged pull request's subject ends in its number: "Optimize GEODIST (#11552)"
PR_IN_SUBJECT = re.compile(r"\(#(\d{1,7})\)\s*$")


def commit_subject(repo: Path, sha: str) -> str:
    """The first line of ``sha``'s message ('' when git cannot say)."""
    try:
        return git(repo, "log", "-1", "--format=%s", sha, "--")
    except BisectError:
        return ""


def pull_request_of(subject: str) -> int | None:
    """The pull request a commit subject names at its end, as GitHub's squash merge writes
    it, or None."""
    found = PR_IN_SUBJECT.search(subject)
    return int(found.group(1)) if found else None
