"""``rbs trigger``: turn commits of a git repository into build requests.

For each commit (oldest first) the ``git archive`` tarball is stored, in Redis with a TTL or
in S3, and a :class:`BuildRequest` pointing at it is XADDed to the build-requests stream. In
Redis, the archive and the request are written in one MULTI/EXEC, so a builder never sees a
request whose source is missing.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Protocol

import redis

from redis_benchmarks_spec.events.consumer import publish
from redis_benchmarks_spec.events.messages import (
    SOURCE_REDIS,
    SOURCE_S3,
    BuildRequest,
    SourceLocation,
    SuiteFilters,
    new_id,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake import gitsource
from redis_benchmarks_spec.intake.gitsource import Commit

DEFAULT_SOURCE_TTL_S = 7 * 24 * 3600


class TriggerError(RuntimeError):
    """The trigger cannot proceed (bad selection, missing optional dependency, ...)."""


@dataclass(frozen=True)
class Selection:
    """Which commits to request: one of commit, branch (with ``last``) or tag."""

    commit: str | None = None
    branch: str | None = None
    tag: str | None = None
    last: int = 1
    # a commit asked for apart from any branch (a bisect probe): its points are filed by
    # commit only, never as a new point of the checked-out branch's history
    detached: bool = False

    def rev(self) -> str:
        """The revision to start from."""
        chosen = [r for r in (self.commit, self.tag) if r]
        if len(chosen) > 1:
            raise TriggerError("give one of --commit or --tag")
        if chosen:
            return chosen[0]
        if self.branch:
            return self.branch
        raise TriggerError("give --commit, --branch or --tag")


@dataclass(frozen=True)
class RequestOptions:
    """Everything in a build request that does not come from git."""

    org: str | None = None  # default: from a GitHub origin remote
    repo_name: str | None = None
    pr: int | None = None
    filters: SuiteFilters = field(default_factory=SuiteFilters)
    platforms: tuple[str, ...] = ()
    build_variants: tuple[str, ...] = ()
    triggering_env: str = "ci"


class SourceStore(Protocol):
    """Where source archives go; ``stage`` may defer writes into a Redis pipeline."""

    def stage(self, pipe: Any, key_hint: str, data: bytes) -> SourceLocation:
        """Store (or queue the storing of) ``data``; where a builder will find it."""
        ...


class RedisSourceStore:
    """Archives as Redis strings with a TTL, written in the request's own transaction."""

    def __init__(self, ttl_s: int = DEFAULT_SOURCE_TTL_S) -> None:
        if ttl_s <= 0:
            raise TriggerError("--source-ttl must be positive")
        self.ttl_s = ttl_s

    def stage(self, pipe: Any, key_hint: str, data: bytes) -> SourceLocation:
        """Queue ``SET key data EX ttl`` on ``pipe``."""
        pipe.set(key_hint, data, ex=self.ttl_s)
        return SourceLocation(SOURCE_REDIS, key_hint, hashlib.sha256(data).hexdigest())


class S3SourceStore:
    """Archives in an S3 bucket (needs the optional ``boto3``)."""

    def __init__(self, bucket: str, prefix: str = "rbs/sources") -> None:
        try:
            import boto3
        except ImportError as exc:
            raise TriggerError("--s3-bucket needs boto3: pip install "
                               "'redis-benchmarks-spec[s3]'") from exc
        self.client = boto3.session.Session().client("s3")
        self.bucket = bucket
        self.prefix = prefix.strip("/")

    def stage(self, pipe: Any, key_hint: str, data: bytes) -> SourceLocation:
        """Upload now (before the request is queued)."""
        key = f"{self.prefix}/{key_hint.replace(':', '/')}.tar.gz"
        self.client.put_object(Bucket=self.bucket, Key=key, Body=data)
        return SourceLocation(SOURCE_S3, f"s3://{self.bucket}/{key}",
                              hashlib.sha256(data).hexdigest())


@dataclass(frozen=True)
class Triggered:
    """One request that was queued."""

    request: BuildRequest
    entry_id: str
    archive_bytes: int


def select_commits(repo: Path, selection: Selection) -> list[Commit]:
    """The commits a selection names, oldest first."""
    last = selection.last if selection.branch and not (selection.commit or selection.tag) else 1
    return gitsource.commits(repo, selection.rev(), last)


def _org_repo(repo: Path, location: str, options: RequestOptions) -> tuple[str, str]:
    found = (gitsource.github_org_repo(location) if gitsource.is_remote(location)
             else gitsource.origin_org_repo(repo))
    org = options.org or (found[0] if found else None)
    name = options.repo_name or (found[1] if found else None)
    if not org or not name:
        raise TriggerError("cannot tell the GitHub org/repo: give --org and --repo-name")
    return org, name


def trigger(client: redis.Redis, names: StreamNames, location: str, selection: Selection,
            options: RequestOptions, store: SourceStore) -> list[Triggered]:
    """Store sources and queue one build request per selected commit, oldest first."""
    with gitsource.local_repo(location) as repo:
        org, repo_name = _org_repo(repo, location, options)
        picked = select_commits(repo, selection)
        branch = None if selection.detached else selection.branch or (
            gitsource.current_branch(repo) if selection.commit else None)
        return [_queue_one(client, names, repo, commit, _Context(org, repo_name, branch,
                                                                  selection.tag, options), store)
                for commit in picked]


@dataclass(frozen=True)
class _Context:
    org: str
    repo: str
    branch: str | None
    tag: str | None
    options: RequestOptions


def _queue_one(client: redis.Redis, names: StreamNames, repo: Path, commit: Commit,
               ctx: _Context, store: SourceStore) -> Triggered:
    data = gitsource.archive(repo, commit.sha)
    request_id = new_id()
    pipe = client.pipeline(transaction=True)
    source = store.stage(pipe, names.source_key(commit.sha, request_id), data)
    opts = ctx.options
    request = BuildRequest(
        id=request_id, org=ctx.org, repo=ctx.repo, branch=ctx.branch, sha=commit.sha,
        commit_time_ms=commit.commit_time_ms, source=source, pr=opts.pr, tag=ctx.tag,
        version=ctx.tag.removeprefix("v") if ctx.tag else None, filters=opts.filters,
        platforms=list(opts.platforms), build_variants=list(opts.build_variants),
        triggering_env=opts.triggering_env,
    )
    publish(pipe, names.build_requests, request)
    results = pipe.execute()
    entry_id = results[-1]
    return Triggered(request, entry_id.decode() if isinstance(entry_id, bytes) else str(entry_id),
                     len(data))
