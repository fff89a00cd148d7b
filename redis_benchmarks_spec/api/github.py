"""What a GitHub delivery means for the pipeline: pure functions, no I/O.

``pull_request`` events for actions labeled/synchronize/opened/reopened whose PR carries the
trigger label, and ``push`` events to a configured branch, become a :class:`BuildRequest`
naming the repository and sha; the builder fetches the source with git from the configured
mirror or the payload's clone URL (nothing slow happens while GitHub waits for the answer).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

from redis_benchmarks_spec.events import validation
from redis_benchmarks_spec.events.messages import (
    SOURCE_GIT,
    BuildRequest,
    SourceLocation,
    SuiteFilters,
    now_ms,
)

DEFAULT_TRIGGER_LABEL = "action:run-benchmark"
DEFAULT_BRANCHES = ("unstable",)
PR_ACTIONS = ("labeled", "synchronize", "opened", "reopened")
ZERO_SHA = "0" * 40


class PayloadError(ValueError):
    """A delivery whose JSON does not have the shape GitHub documents."""


@dataclass(frozen=True)
class TriggerPolicy:
    """Which deliveries become build requests, and what those requests ask for."""

    trigger_label: str = DEFAULT_TRIGGER_LABEL
    branches: tuple[str, ...] = DEFAULT_BRANCHES
    repos: tuple[str, ...] = ()  # "org/repo" allow-list; empty = any repository
    git_remote: str | None = None  # a mirror to fetch from instead of the payload's clone URL
    platforms: tuple[str, ...] = ()
    build_variants: tuple[str, ...] = ()
    filters: SuiteFilters = field(default_factory=SuiteFilters)
    triggering_env: str = "ci"


@dataclass(frozen=True)
class Decision:
    """The outcome for one delivery: a request to enqueue, or why there is none."""

    request: BuildRequest | None
    reason: str


def decide(event: str, payload: Any, policy: TriggerPolicy) -> Decision:
    """The build request (if any) for a delivery of GitHub event ``event``."""
    if not isinstance(payload, dict):
        raise PayloadError("payload is not a JSON object")
    if event == "pull_request":
        return _pull_request(payload, policy)
    if event == "push":
        return _push(payload, policy)
    return Decision(None, f"event {event!r} is not handled")


def _pull_request(payload: dict[str, Any], policy: TriggerPolicy) -> Decision:
    action = _get(payload, "action", str)
    pr = _get(payload, "pull_request", dict)
    base_repo = _get(_get(pr, "base", dict), "repo", dict)
    full_name = _get(base_repo, "full_name", str)
    if action not in PR_ACTIONS:
        return Decision(None, f"pull_request action {action!r} is not handled")
    if policy.repos and full_name not in policy.repos:
        return Decision(None, f"repository {full_name} is not configured")
    labels = [_get(lb, "name", str) for lb in _get(pr, "labels", list) if isinstance(lb, dict)]
    # GitHub's label names are case-insensitive ("Action:Run-Benchmark" is the same label)
    if policy.trigger_label.casefold() not in {label.casefold() for label in labels}:
        return Decision(None, f"pull request lacks the label {policy.trigger_label!r}")
    head = _get(pr, "head", dict)
    head_repo = head.get("repo") if isinstance(head.get("repo"), dict) else base_repo
    _branch(_get(pr, "base", dict), "base")  # the comparison's baseline branch: checked too
    request = BuildRequest(
        org=_owner(base_repo), repo=_get(base_repo, "name", str),
        branch=_branch(head, "head"), sha=_sha(_get(head, "sha", str)),
        # the payload has no commit time; the builder knows the real one from git
        commit_time_ms=_iso_ms(pr.get("updated_at")),
        source=_source(policy, _get(head_repo, "clone_url", str)),
        pr=_get(pr, "number", int), base_sha=_base_sha(pr),
        **_common(policy),
    )
    return Decision(request, f"pull request #{request.pr} {action}")


def _base_sha(pr: dict[str, Any]) -> str | None:
    """The base commit when the delivery names one (GitHub always does)."""
    base = pr.get("base")
    sha = base.get("sha") if isinstance(base, dict) else None
    return _sha(sha) if isinstance(sha, str) else None


def _push(payload: dict[str, Any], policy: TriggerPolicy) -> Decision:
    ref = _get(payload, "ref", str)
    repo = _get(payload, "repository", dict)
    full_name = _get(repo, "full_name", str)
    if not ref.startswith("refs/heads/"):
        return Decision(None, f"push to {ref} is not a branch")
    branch = ref[len("refs/heads/"):]
    problem = validation.ref_problem(branch)
    if problem is not None:
        raise PayloadError(f"field 'ref': {branch[:80]!r} {problem}")
    if branch not in policy.branches:
        return Decision(None, f"branch {branch!r} is not tracked")
    if policy.repos and full_name not in policy.repos:
        return Decision(None, f"repository {full_name} is not configured")
    after = _sha(_get(payload, "after", str))
    if payload.get("deleted") or after == ZERO_SHA:
        return Decision(None, f"branch {branch!r} was deleted")
    head_commit = payload.get("head_commit") or {}
    before = payload.get("before")
    request = BuildRequest(
        org=_owner(repo), repo=_get(repo, "name", str), branch=branch, sha=after,
        commit_time_ms=_iso_ms(head_commit.get("timestamp") if isinstance(head_commit, dict)
                               else None),
        source=_source(policy, _get(repo, "clone_url", str)),
        # the commit the branch pointed at before: what the push changes is before..after
        # (the agents' suite selection); a new branch (all zeros) has none
        base_sha=_sha(before) if isinstance(before, str) and before != ZERO_SHA else None,
        **_common(policy),
    )
    return Decision(request, f"push to {branch}")


def _common(policy: TriggerPolicy) -> dict[str, Any]:
    return {"filters": policy.filters, "platforms": list(policy.platforms),
            "build_variants": list(policy.build_variants),
            "triggering_env": policy.triggering_env}


def _source(policy: TriggerPolicy, clone_url: str) -> SourceLocation:
    return SourceLocation(SOURCE_GIT, policy.git_remote or clone_url)


def _owner(repo: dict[str, Any]) -> str:
    owner = _get(repo, "owner", dict)
    login = owner.get("login") or owner.get("name")
    if not isinstance(login, str) or not login:
        raise PayloadError("repository.owner has no login")
    return login


def _get(obj: dict[str, Any], key: str, kind: type) -> Any:
    value = obj.get(key)
    if not isinstance(value, kind) or (kind is int and isinstance(value, bool)):
        raise PayloadError(f"field {key!r} is missing or not a {kind.__name__}")
    return value


def _branch(side: dict[str, Any], name: str) -> str:
    """``pull_request.<name>.ref``: a branch name git accepts (events/validation.py)."""
    value = _get(side, "ref", str)
    problem = validation.ref_problem(value)
    if problem is not None:
        raise PayloadError(f"field '{name}.ref': {value[:80]!r} {problem}")
    return value


def _sha(value: str) -> str:
    if len(value) != 40 or any(c not in "0123456789abcdef" for c in value):
        raise PayloadError(f"{value!r} is not a 40-character git sha")
    return value


def _iso_ms(value: Any) -> int:
    """Milliseconds of an ISO-8601 timestamp; now when GitHub left it out."""
    if not isinstance(value, str):
        return now_ms()
    try:
        return int(datetime.fromisoformat(value.replace("Z", "+00:00")).timestamp() * 1000)
    except ValueError as exc:
        raise PayloadError(f"bad timestamp {value!r}") from exc
