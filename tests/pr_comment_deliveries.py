"""``issue_comment`` deliveries as GitHub sends them (its documented shape), built around the
recorded ``pull_request`` delivery of tests/fixtures/github: the same repository, sender
and pull request number; only the comment's body, author and association vary."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

SAMPLES = Path(__file__).parent / "fixtures" / "github"
LABELLED = json.loads((SAMPLES / "event_webhook_labelled_pr.json").read_text())
PR_NUMBER = LABELLED["number"]
HEAD_SHA = LABELLED["pull_request"]["head"]["sha"]
ORG = LABELLED["repository"]["owner"]["login"]
REPO = LABELLED["repository"]["name"]


def comment(body: str, association: str = "MEMBER", login: str = "maintainer",
            on_pr: bool = True, action: str = "created") -> bytes:
    """The delivery of a comment ``body`` on the recorded pull request (or an issue)."""
    repo = LABELLED["repository"]
    issue: dict[str, Any] = {
        "url": f"https://api.github.com/repos/{repo['full_name']}/issues/{PR_NUMBER}",
        "number": PR_NUMBER, "title": LABELLED["pull_request"]["title"], "state": "open",
        "user": LABELLED["pull_request"]["user"], "labels": [], "comments": 1}
    if on_pr:
        issue["pull_request"] = {
            "url": f"https://api.github.com/repos/{repo['full_name']}/pulls/{PR_NUMBER}",
            "html_url": LABELLED["pull_request"]["html_url"]}
    return json.dumps({
        "action": action, "issue": issue,
        "comment": {"id": 1_000_001, "body": body, "author_association": association,
                    "user": {"login": login, "id": 42, "type": "User"},
                    "created_at": "2021-06-01T10:00:00Z"},
        "repository": repo, "sender": {"login": login, "id": 42, "type": "User"},
    }).encode()
