"""One pull-request comment, found by a hidden marker and created once, then edited.

Talks to the GitHub REST API through PyGithub (issue comments: list, create, update) at a
configurable base URL, so GitHub Enterprise and the tests' local stand-in work alike. The
token comes from the environment or a file, never from a command line, and PyGithub masks
it in its debug log.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass

from github import Auth, Github, GithubException

from redis_benchmarks_spec.common.comment_size import body_chars, fit
from redis_benchmarks_spec.notify.github_config import (
    DEFAULT_API_URL,
    ENV_API_URL,
    ENV_TOKEN,
    ENV_TOKEN_FILE,
    GitHubConfig,
    GitHubConfigError,
    load_config,
)

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class PullRequestRef:
    """Which pull request: ``org/repo#number``."""

    org: str
    repo: str
    number: int

    def __str__(self) -> str:
        return f"{self.org}/{self.repo}#{self.number}"


@dataclass(frozen=True)
class Upserted:
    """What :func:`upsert_comment` did."""

    comment_id: int
    created: bool
    url: str


def _client(config: GitHubConfig) -> Github:
    # lazy: no GET of the repository or the issue before the comment calls
    return Github(base_url=config.api_url.rstrip("/"), auth=Auth.Token(config.token),
                  timeout=config.timeout_s, retry=None, lazy=True)


def upsert_comment(config: GitHubConfig, pr: PullRequestRef, marker: str,
                   body: str) -> Upserted:
    """Edit the comment holding ``marker`` on ``pr``, or create it; ``body`` must contain
    the marker so the next call finds it. Raises ``GithubException`` on API errors."""
    if marker not in body:
        raise ValueError("the comment body must contain its marker")
    body = _within_limit(body, str(pr))
    if marker not in body:
        raise ValueError("the comment's marker must lie within GitHub's limit")
    issue = _client(config).get_repo(f"{pr.org}/{pr.repo}").get_issue(pr.number)
    for comment in issue.get_comments():
        if marker in (comment.body or ""):
            if comment.body != body:
                comment.edit(body)
            return Upserted(comment.id, False, comment.html_url)
    created = issue.create_comment(body)
    return Upserted(created.id, True, created.html_url)


def _within_limit(body: str, where: str) -> str:
    """The last guard: GitHub refuses a body over 65,536 characters (the writers keep under
    it; a body that is not is cut at a line, said in it and logged, rather than lost)."""
    cut = fit(body)
    if cut is not body:
        log.warning("comment body for %s was %d characters: cut to GitHub's limit", where,
                    body_chars(body))
    return cut


@dataclass(frozen=True)
class CreatedIssue:
    """What :func:`create_issue` made."""

    number: int
    url: str


def create_issue(config: GitHubConfig, repo: tuple[str, str], title: str,
                 body: str) -> CreatedIssue:
    """Open an issue on ``org/repo`` (the tracked branch's alerts, ``notify.watch_alert``).
    Raises ``GithubException`` on API errors."""
    body = _within_limit(body, f"{repo[0]}/{repo[1]} (new issue)")
    issue = _client(config).get_repo(f"{repo[0]}/{repo[1]}").create_issue(title=title,
                                                                        body=body)
    return CreatedIssue(issue.number, issue.html_url)


__all__ = [
    "DEFAULT_API_URL",
    "ENV_API_URL",
    "ENV_TOKEN",
    "ENV_TOKEN_FILE",
    "CreatedIssue",
    "GitHubConfig",
    "GitHubConfigError",
    "GithubException",
    "PullRequestRef",
    "Upserted",
    "create_issue",
    "load_config",
    "upsert_comment",
]
