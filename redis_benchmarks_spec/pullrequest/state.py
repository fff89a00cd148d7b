"""What the pull-request comment is built from, kept in the broker (this module owns the
keys ``<prefix>:pr-info:<request id>`` and ``<prefix>:pr-comment:<org>/<repo>#<pr>@<sha>``).

The webhook receiver stores the pull request's base (branch and commit) when it accepts a
trigger: the build event does not carry it, and the agent needs it to pick the baseline.
Each platform that finishes stores its section (its comparison report); the comment is
rendered from every section stored so far, under a lock, so two platforms finishing at
once never lose each other's section or create two comments.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.events import validation
from redis_benchmarks_spec.events.names import StreamNames

INFO_TTL_S = 30 * 24 * 3600
_SHA = re.compile(r"^[0-9a-f]{40}$")
_ANY_SHA = re.compile(r"[0-9a-f]{40}|[0-9a-f]{64}")
_NAME = re.compile(r"^[A-Za-z0-9._/:-]{1,200}$")


class PrInfoError(ValueError):
    """A pull-request payload field that is missing or not what GitHub documents."""


@dataclass(frozen=True)
class PrInfo:
    """A triggered pull request: where to comment and what to compare against."""

    org: str
    repo: str
    number: int
    head_sha: str
    head_ref: str = ""
    base_ref: str = ""
    base_sha: str = ""
    title: str = ""
    html_url: str = ""

    @property
    def comment_id(self) -> str:
        """The comment's identity: one per pull request and triggered commit."""
        return f"{self.org}/{self.repo}#{self.number}@{self.head_sha}"

    @property
    def marker(self) -> str:
        return f"<!-- rbs-pr-comment {self.comment_id} -->"

    def __post_init__(self) -> None:
        # stored in the broker, which others can write: both refs checked where read back
        for key in ("head_ref", "base_ref"):
            value = getattr(self, key)
            if value and (not isinstance(value, str)
                          or validation.ref_problem(value) is not None):
                raise PrInfoError(f"pr-info field {key!r} is not a branch name")
        for key in ("head_sha", "base_sha"):
            value = getattr(self, key)
            if (value or key == "head_sha") and not (isinstance(value, str)
                                                     and _ANY_SHA.fullmatch(value)):
                raise PrInfoError(f"pr-info field {key!r} is not a lowercase hex git sha")

    @classmethod
    def from_dict(cls, raw: dict[str, Any]) -> PrInfo:
        return cls(**raw)


def _str(obj: dict[str, Any], key: str, pattern: re.Pattern[str]) -> str:
    value = obj.get(key)
    if not isinstance(value, str) or not pattern.match(value):
        raise PrInfoError(f"pull_request field {key!r} is missing or malformed")
    return value


def _ref(obj: dict[str, Any], key: str) -> str:
    """A branch name: anything git accepts (UTF-8 included), bounded."""
    value = obj.get(key)
    if not isinstance(value, str) or validation.ref_problem(value) is not None:
        raise PrInfoError(f"pull_request field {key!r} is missing or not a branch name")
    return value


def _obj(obj: dict[str, Any], key: str) -> dict[str, Any]:
    value = obj.get(key)
    return value if isinstance(value, dict) else {}


def _text(obj: dict[str, Any], key: str, limit: int) -> str:
    value = obj.get(key)
    return value[:limit] if isinstance(value, str) else ""


def from_payload(payload: dict[str, Any]) -> PrInfo:
    """The :class:`PrInfo` of a ``pull_request`` delivery (validated: untrusted input)."""
    pr = _obj(payload, "pull_request")
    base, head = _obj(pr, "base"), _obj(pr, "head")
    if not base or not head:
        raise PrInfoError("delivery has no pull_request with base and head")
    repo = _obj(base, "repo")
    number = pr.get("number")
    if not isinstance(number, int) or isinstance(number, bool) or number <= 0:
        raise PrInfoError("pull_request.number is not a positive integer")
    return PrInfo(org=_str(_obj(repo, "owner"), "login", _NAME), repo=_str(repo, "name", _NAME),
                  number=number, head_sha=_str(head, "sha", _SHA),
                  head_ref=_ref(head, "ref"), base_ref=_ref(base, "ref"),
                  base_sha=_str(base, "sha", _SHA), title=_text(pr, "title", 200),
                  html_url=_text(pr, "html_url", 300))


def report_name(event_id: str, platform: str) -> str:
    """The HTML report's file name (the comment's link and the file agree through this)."""
    return f"{event_id}-{platform}.html".replace(":", "_").replace("/", "_")


def info_key(names: StreamNames, request_id: str) -> str:
    return f"{names.prefix}:pr-info:{request_id}"


def sections_key(names: StreamNames, info: PrInfo) -> str:
    return f"{names.prefix}:pr-comment:{info.comment_id}"


def lock_key(names: StreamNames, info: PrInfo) -> str:
    return f"{names.prefix}:pr-comment-lock:{info.comment_id}"


def save_info(client: redis.Redis, names: StreamNames, request_id: str, info: PrInfo) -> None:
    client.set(info_key(names, request_id), json.dumps(asdict(info)), ex=INFO_TTL_S)


def load_info(client: redis.Redis, names: StreamNames, request_id: str) -> PrInfo | None:
    raw = client.get(info_key(names, request_id))
    if raw is None:
        return None
    try:
        return PrInfo.from_dict(json.loads(raw))
    except (ValueError, TypeError) as exc:
        raise PrInfoError(f"{info_key(names, request_id)}: {exc}") from exc


@dataclass
class Section:
    """One platform and build variant of the comment: its comparison, flags, state."""

    platform: str
    build_variant: str
    state: str  # "completed", "failed", "dead-lettered" or "build failed"
    report: dict[str, Any] | None = None  # ComparisonReport.to_dict()
    flags: dict[str, list[str]] = field(default_factory=dict)  # per test
    reason: str = ""
    links: dict[str, str] = field(default_factory=dict)  # label -> URL
    # interleaved A/B of the agent (pullrequest/ab_record.py): per test {pairs, looks, stopped}
    sequential: dict[str, dict[str, Any]] = field(default_factory=dict)
    notes: list[str] = field(default_factory=list)  # e.g. why no A/B was run
    # per test, the functions that moved most (pullrequest/ab_record.py), and the files the
    # pull request changes (builder/change.py), to say whether the movers lie in them
    movers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    changed_files: list[str] = field(default_factory=list)
    # per suite, how much of the changed code it executes (the selection's score: inclusive
    # instructions per op of the changed functions in the base commit's profile)
    changed_scores: dict[str, float] = field(default_factory=dict)
    machine_s: float | None = None  # wall seconds of the platform's runs for this event
    started_ms: int | None = None  # when a running platform chose its suites (epoch ms)

    @property
    def field_name(self) -> str:
        return f"{self.platform}|{self.build_variant}"


def save_section(client: redis.Redis, names: StreamNames, info: PrInfo,
                 section: Section) -> None:
    key = sections_key(names, info)
    pipe = client.pipeline(transaction=False)
    pipe.hset(key, section.field_name, json.dumps(asdict(section)))
    pipe.expire(key, INFO_TTL_S)
    pipe.execute()


def load_sections(client: redis.Redis, names: StreamNames, info: PrInfo) -> list[Section]:
    raw: Any = client.hgetall(sections_key(names, info))
    return sorted((Section(**json.loads(v)) for v in raw.values()),
                  key=lambda s: s.field_name)


# -- the comments as posted, for the lab's site (rbs site) -----------------------------------

MAX_COMMENTS = 1000  # the newest comments kept in the index
MAX_BODY = 65_536  # GitHub's limit for a comment body


def comments_index_key(names: StreamNames) -> str:
    return f"{names.prefix}:pr-comments"


def body_key(names: StreamNames, comment_id: str) -> str:
    return f"{names.prefix}:pr-comment-body:{comment_id}"


def save_body(client: redis.Redis, names: StreamNames, info: PrInfo, body: str,
              at_ms: int) -> None:
    """The comment's body as last posted, with the pull request it belongs to, and its place
    in the index of comments (newest first, :data:`MAX_COMMENTS` kept)."""
    index = comments_index_key(names)
    pipe = client.pipeline(transaction=False)
    pipe.set(body_key(names, info.comment_id),
             json.dumps({"info": asdict(info), "body": body[:MAX_BODY], "at_ms": at_ms}),
             ex=INFO_TTL_S)
    pipe.zadd(index, {info.comment_id: at_ms})
    pipe.zremrangebyrank(index, 0, -MAX_COMMENTS - 1)
    pipe.expire(index, INFO_TTL_S)
    pipe.execute()


@dataclass(frozen=True)
class PostedComment:
    """A comment as posted: its pull request, its Markdown and when it was last posted."""

    info: PrInfo
    body: str
    at_ms: int


def posted_comments(client: redis.Redis, names: StreamNames,
                    limit: int = 100) -> list[PostedComment]:
    """The newest ``limit`` comments (untrusted: one that does not read back is left out)."""
    ids = [_id.decode() if isinstance(_id, bytes) else str(_id)
           for _id in client.zrevrange(comments_index_key(names), 0, limit - 1)]
    found = [load_comment(client, names, i) for i in ids]
    return [c for c in found if c is not None]


def load_comment(client: redis.Redis, names: StreamNames,
                 comment_id: str) -> PostedComment | None:
    """The comment stored under ``comment_id``; None when absent or malformed."""
    raw: Any = client.get(body_key(names, comment_id[:400]))
    if raw is None or len(raw) > 4 * MAX_BODY:
        return None
    try:
        data = json.loads(raw)
        info = PrInfo.from_dict({k: v for k, v in data["info"].items()
                                 if k in PrInfo.__dataclass_fields__})
        if not isinstance(data["body"], str) or type(data["at_ms"]) is not int:
            return None
        return PostedComment(info, data["body"][:MAX_BODY], data["at_ms"])
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
