"""GitHub-shaped webhook deliveries for the lab, and where they come from.

A *delivery source* turns what the operator gives (a file of pull requests today; a range of
a tracked branch later) into an ordered list of :class:`Delivery`: the GitHub event name,
the JSON payload GitHub would send, and the name the replay files its outputs under
(``pr_deliveries`` for ``--prs``; ``range_deliveries`` for ``--range A..B``). The
replay posts each one signed with the webhook secret, exactly as GitHub does
(``X-Hub-Signature-256`` over the raw body, ``X-GitHub-Delivery``, ``X-GitHub-Event``).

Pull-request mode (``--prs FILE``, one ``<base-sha> <head-sha> <name>`` a line): the base is
first pushed to the tracked branch (so the builder builds it and the agents know its
profile: that is how a base commit reaches the lab), then the pull request is labelled with
the trigger label, base and head shas being the real ones.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
import uuid
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from redis_benchmarks_spec.api.webhook import signature_for
from redis_benchmarks_spec.intake import gitsource

SHA = re.compile(r"^[0-9a-f]{40}$")
NAME = re.compile(r"^[A-Za-z0-9._-]{1,100}$")
ORG, REPO, BRANCH = "redis", "redis", "unstable"
CLONE_URL = "https://github.com/redis/redis.git"  # the api's --git-remote replaces it


class DeliveryError(ValueError):
    """A line of the operator's input that cannot be a delivery; names file and line."""


@dataclass(frozen=True)
class PullRequest:
    """One line of ``--prs``: the base and head commits and the name outputs are filed by."""

    base: str
    head: str
    name: str
    number: int


@dataclass(frozen=True)
class Delivery:
    """One webhook delivery: GitHub's event name, its payload, and what it belongs to."""

    event: str
    payload: dict[str, Any]
    name: str  # the pull request (or push) this delivery is filed under
    pr: PullRequest | None = None


def read_prs(path: Path) -> list[PullRequest]:
    """The pull requests of ``path`` (blank lines and ``#`` comments skipped)."""
    try:
        lines = path.read_text().splitlines()
    except OSError as exc:
        raise DeliveryError(f"{path}: {exc.strerror or exc}") from None
    out: list[PullRequest] = []
    for i, line in enumerate(lines, 1):
        words = line.split("#", 1)[0].split()
        if not words:
            continue
        if len(words) != 3 or not SHA.match(words[0]) or not SHA.match(words[1]) \
                or not NAME.match(words[2]):
            raise DeliveryError(f"{path}:{i}: expected '<base-sha> <head-sha> <name>' (40-hex "
                                f"shas, a name of letters, digits, '.', '_', '-'), got {line!r}")
        if any(p.name == words[2] for p in out):
            raise DeliveryError(f"{path}:{i}: name {words[2]!r} appears twice")
        digits = re.findall(r"\d+", words[2])
        number = int(digits[-1]) if digits and 0 < int(digits[-1]) < 2**31 else 90_000 + i
        out.append(PullRequest(words[0], words[1], words[2], number))
    if not out:
        raise DeliveryError(f"{path}: no pull request in it")
    return out


def _repo() -> dict[str, Any]:
    return {"name": REPO, "full_name": f"{ORG}/{REPO}", "clone_url": CLONE_URL,
            "owner": {"login": ORG}}


def push_payload(before: str, after: str) -> dict[str, Any]:
    """A ``push`` of ``after`` to the tracked branch."""
    return {"ref": f"refs/heads/{BRANCH}", "before": before, "after": after, "deleted": False,
            "repository": _repo(), "head_commit": {"id": after}}


def labeled_payload(pr: PullRequest, label: str) -> dict[str, Any]:
    """A ``pull_request`` ``labeled`` delivery of ``pr`` carrying ``label``."""
    return {"action": "labeled", "number": pr.number, "label": {"name": label},
            "repository": _repo(),
            "pull_request": {
                "number": pr.number, "title": f"replayed {pr.name}", "state": "open",
                "html_url": f"https://github.com/{ORG}/{REPO}/pull/{pr.number}",
                "labels": [{"name": label}],
                "head": {"ref": f"pr-{pr.name}", "sha": pr.head, "repo": _repo()},
                "base": {"ref": BRANCH, "sha": pr.base, "repo": _repo()}}}


def pr_deliveries(prs: list[PullRequest], label: str) -> list[Delivery]:
    """Pull-request mode: per PR, its base pushed to the branch, then the label."""
    out = []
    for pr in prs:
        out.append(Delivery("push", push_payload("0" * 40, pr.base), pr.name, pr))
        out.append(Delivery("pull_request", labeled_payload(pr, label), pr.name, pr))
    return out


_RANGE = re.compile(r"^([0-9a-f]{7,40})\.\.([0-9a-f]{7,40})$")


def first_parent_commits(git_dir: Path, spec: str) -> list[str]:
    """The first-parent commits of ``A..B`` (abbreviated or full shas), oldest first."""
    m = _RANGE.match(spec)
    if not m:
        raise DeliveryError(f"{spec!r}: expected A..B, two commits as 7 to 40 hex digits")
    try:
        out = gitsource.git(git_dir, "rev-list", "--first-parent", "--reverse",
                            "--end-of-options", f"{m[1]}..{m[2]}").decode().split()
    except gitsource.GitError as exc:
        raise DeliveryError(f"{spec}: {exc}") from None
    if not out or not all(SHA.match(s) for s in out):
        raise DeliveryError(f"{spec}: no first-parent commit in the range")
    return out


def range_deliveries(git_dir: Path, spec: str, skip: tuple[str, ...] = ()) -> list[Delivery]:
    """Tracked-branch mode (``--range A..B``): one ``push`` per first-parent commit of
    ``A..B``, in order, each naming the commit pushed before it as ``before``. A commit of
    ``skip`` (sha prefixes) is not pushed: the next push brings it with its own commit, as a
    push of several commits at once does (its ``before`` is the last pushed commit)."""
    commits = first_parent_commits(git_dir, spec)
    for prefix in skip:
        if not re.fullmatch(r"[0-9a-f]{7,40}", prefix) or \
                not any(c.startswith(prefix) for c in commits[:-1]):
            raise DeliveryError(f"--skip {prefix}: not a commit of {spec} before its last")
    try:
        before = gitsource.git(git_dir, "rev-parse", "--verify", "--end-of-options",
                               f"{commits[0]}^").decode().strip()
    except gitsource.GitError:
        before = "0" * 40  # the range starts at a root commit
    out = []
    for n, sha in enumerate(commits, 1):
        if any(sha.startswith(prefix) for prefix in skip):
            continue
        out.append(Delivery("push", push_payload(before, sha), f"{n:03d}-{sha[:10]}"))
        before = sha
    return out


#: how long a delivery is sent again while the receiver is down (restarted by the keeper)
REDELIVER_S = 120.0


def post(webhook_url: str, secret: bytes, delivery: Delivery,
         redeliver_s: float = REDELIVER_S) -> dict[str, Any]:
    """POST ``delivery`` signed as GitHub does; the receiver's JSON answer (with its
    ``http_status``). A receiver that is down (refused, or 5xx: restarting) gets the same
    delivery again, same id, every second for ``redeliver_s``, as a maintainer redelivers
    from GitHub's page; then ``OSError``."""
    body = json.dumps(delivery.payload).encode()
    headers = {"X-GitHub-Event": delivery.event, "X-GitHub-Delivery": str(uuid.uuid4()),
               "X-Hub-Signature-256": signature_for(secret, body),
               "Content-Type": "application/json", "User-Agent": "GitHub-Hookshot/rbs-lab"}
    deadline = time.monotonic() + redeliver_s
    while True:
        request = urllib.request.Request(webhook_url, data=body, method="POST",
                                         headers=headers)
        try:
            with urllib.request.urlopen(request, timeout=30) as resp:
                return {**json.loads(resp.read() or b"{}"), "http_status": resp.status}
        except urllib.error.HTTPError as exc:
            if exc.code < 500 or time.monotonic() > deadline:
                return {"error": exc.read().decode(errors="replace")[:300],
                        "http_status": exc.code}
        except OSError:
            if time.monotonic() > deadline:
                raise
        time.sleep(1.0)
