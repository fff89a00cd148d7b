"""GitHub API settings: base URL and token (from the environment or a file, never argv).

Kept apart from the client so the command line can offer the options without importing
PyGithub.
"""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path

DEFAULT_API_URL = "https://api.github.com"
ENV_TOKEN = "RBS_GITHUB_TOKEN"
ENV_TOKEN_FILE = "RBS_GITHUB_TOKEN_FILE"
ENV_API_URL = "RBS_GITHUB_API_URL"


class GitHubConfigError(ValueError):
    """The GitHub settings cannot work (unreadable token file, empty token)."""


@dataclass(frozen=True)
class GitHubConfig:
    """Where the API is and the token to use (kept out of repr, so it never reaches a log)."""

    api_url: str = DEFAULT_API_URL
    token: str = ""
    timeout_s: int = 15

    def __repr__(self) -> str:
        return f"GitHubConfig(api_url={self.api_url!r}, token=<{len(self.token)} chars>)"


def load_config(api_url: str | None = None, token_file: Path | None = None) -> GitHubConfig | None:
    """The config from ``token_file`` / ``$RBS_GITHUB_TOKEN_FILE`` / ``$RBS_GITHUB_TOKEN``;
    None when no token is configured (comments are then not posted)."""
    url = api_url or os.environ.get(ENV_API_URL) or DEFAULT_API_URL
    path = token_file or (Path(os.environ[ENV_TOKEN_FILE]) if os.environ.get(ENV_TOKEN_FILE)
                          else None)
    if path is not None:
        try:
            token = path.read_text().strip()
        except OSError as exc:
            raise GitHubConfigError(f"GitHub token file {path}: {exc.strerror}") from None
        if not token:
            raise GitHubConfigError(f"GitHub token file {path} is empty")
        return GitHubConfig(api_url=url, token=token)
    token = os.environ.get(ENV_TOKEN, "").strip()
    return GitHubConfig(api_url=url, token=token) if token else None
