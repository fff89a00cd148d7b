"""Every Redis key and consumer-group name of the event pipeline, built in one place.

Defaults (prefix ``rbs``):

=============================  =========================================================
``rbs:build-requests``         stream of BuildRequest (trigger, webhook -> builders)
``rbs:builds``                 stream of BuildEvent (builders -> agents)
``rbs:build-failures``         stream of BuildFailure
``rbs:test-status``            stream of RunStatus (every state change, for followers)
``rbs:dead-letter``            stream of entries no consumer could decode, with the reason
``rbs:status:<event id>``      hash ``<platform>|<test name>`` -> encoded RunStatus
``rbs:status-index``           sorted set of event ids by last status update (ms)
``rbs:heartbeat:<pf>:<agent>`` string with a TTL, refreshed by each live agent
``rbs:heartbeats``             sorted set of heartbeat keys by last beat (ms)
``rbs:cancelled``              set of cancelled event / request ids
``rbs:source:<sha>:<id>``      source archive (``git archive`` tar.gz) with a TTL
``rbs:published:<request>``    set of variants a builder published for a request
``rbs:artifact:<sha>:<v>[:<d>]`` artifact manifest hash (chunks at ``...:<i>``), see builder
``rbs:results:<event>:<pf>``   agent ledger: hash test -> result documents
``rbs:done:<event>:<pf>``      agent ledger: set of tests pushed to the datasink
``rbs:webhook-delivery:<id>``  GitHub delivery id already enqueued (TTL), for dedupe
``rbs:webhook-payload:<sha>``  sha256 of a delivery body already enqueued (TTL), for dedupe
group ``builders``             the builders' group on the build-requests stream
group ``platform:<name>``      one group per platform on the builds stream
=============================  =========================================================

Override the prefix or any name with environment variables (``RBS_STREAM_PREFIX``,
``RBS_BUILD_REQUESTS_STREAM``, ``RBS_BUILDS_STREAM``, ``RBS_BUILD_FAILURES_STREAM``,
``RBS_TEST_STATUS_STREAM``, ``RBS_DEAD_LETTER_STREAM``, ``RBS_BUILDERS_GROUP``) or the
``--stream-prefix`` CLI option (see :func:`add_arguments`).
"""

from __future__ import annotations

import argparse
import os
from collections.abc import Mapping
from dataclasses import dataclass, fields, replace

ENV_PREFIX = "RBS_STREAM_PREFIX"
ENV_OVERRIDES = {
    "build_requests": "RBS_BUILD_REQUESTS_STREAM",
    "builds": "RBS_BUILDS_STREAM",
    "build_failures": "RBS_BUILD_FAILURES_STREAM",
    "test_status": "RBS_TEST_STATUS_STREAM",
    "dead_letter": "RBS_DEAD_LETTER_STREAM",
    "builders_group": "RBS_BUILDERS_GROUP",
}


@dataclass(frozen=True)
class StreamNames:
    """Stream, key and group names; build one with :meth:`with_prefix` or :meth:`from_env`."""

    prefix: str = "rbs"
    build_requests: str = "rbs:build-requests"
    builds: str = "rbs:builds"
    build_failures: str = "rbs:build-failures"
    test_status: str = "rbs:test-status"
    dead_letter: str = "rbs:dead-letter"
    builders_group: str = "builders"
    platform_group_prefix: str = "platform:"

    @classmethod
    def with_prefix(cls, prefix: str) -> StreamNames:
        """All default names under another prefix (e.g. one namespace per test or lab)."""
        return cls(
            prefix=prefix,
            build_requests=f"{prefix}:build-requests",
            builds=f"{prefix}:builds",
            build_failures=f"{prefix}:build-failures",
            test_status=f"{prefix}:test-status",
            dead_letter=f"{prefix}:dead-letter",
        )

    @classmethod
    def from_env(cls, environ: Mapping[str, str] | None = None,
                 prefix: str | None = None) -> StreamNames:
        """Defaults, then ``prefix`` (or ``RBS_STREAM_PREFIX``), then per-name variables."""
        env = os.environ if environ is None else environ
        names = cls.with_prefix(prefix or env.get(ENV_PREFIX) or "rbs")
        overrides = {attr: env[var] for attr, var in ENV_OVERRIDES.items() if env.get(var)}
        return replace(names, **overrides)

    # ---- per-entity keys
    def status_key(self, event_id: str) -> str:
        """Hash of every test status of one build event."""
        return f"{self.prefix}:status:{event_id}"

    @property
    def status_index(self) -> str:
        """Sorted set of event ids by last status update, so admin never needs KEYS."""
        return f"{self.prefix}:status-index"

    def heartbeat_key(self, platform: str, agent: str) -> str:
        """Key an agent refreshes (with a TTL) while it is alive."""
        return f"{self.prefix}:heartbeat:{platform}:{agent}"

    @property
    def heartbeat_index(self) -> str:
        """Sorted set of heartbeat keys by last beat (ms)."""
        return f"{self.prefix}:heartbeats"

    @property
    def cancelled(self) -> str:
        """Set of cancelled event ids and request ids; agents and builders skip those."""
        return f"{self.prefix}:cancelled"

    def source_key(self, sha: str, request_id: str) -> str:
        """Key of a source archive uploaded by ``rbs trigger``."""
        return f"{self.prefix}:source:{sha}:{request_id}"

    def published_key(self, request_id: str) -> str:
        """Set of build variants a builder has published for one build request."""
        return f"{self.prefix}:published:{request_id}"

    @property
    def artifact_prefix(self) -> str:
        """Every artifact key starts with this (agents refuse locations outside it)."""
        return f"{self.prefix}:artifact:"

    def artifact_key(self, sha: str, variant: str, digest: str | None = None) -> str:
        """Manifest key of the artifact of ``sha`` in ``variant`` (``digest`` of its make
        variables, see ``builder.artifacts.env_digest``); chunks append ``:<i>``."""
        key = f"{self.artifact_prefix}{sha}:{variant}"
        return f"{key}:{digest}" if digest is not None else key

    def ledger_results_key(self, event_id: str, platform: str) -> str:
        """Agent ledger: hash test -> JSON list of the result documents of that test."""
        return f"{self.prefix}:results:{event_id}:{platform}"

    def ledger_done_key(self, event_id: str, platform: str) -> str:
        """Agent ledger: set of tests whose results reached the datasink."""
        return f"{self.prefix}:done:{event_id}:{platform}"

    def webhook_delivery_key(self, delivery: str) -> str:
        """A GitHub delivery id already turned into a build request (dedupe, with a TTL)."""
        return f"{self.prefix}:webhook-delivery:{delivery}"

    def webhook_payload_key(self, digest: str) -> str:
        """The sha256 of a delivery body already enqueued: a replay under a fresh delivery
        id is the same payload (dedupe, with a TTL)."""
        return f"{self.prefix}:webhook-payload:{digest}"

    def pr_head_key(self, pr_ref: str) -> str:
        """The newest head of a pull request (``org/repo#number``) a delivery named: what a
        ``/rbs benchmark`` comment on it builds (the comment's payload has no sha)."""
        return f"{self.prefix}:pr-head:{pr_ref}"

    def pr_requests_key(self, pr_ref: str) -> str:
        """Set of the build request ids queued for a pull request (``/rbs cancel`` stops
        them)."""
        return f"{self.prefix}:pr-requests:{pr_ref}"

    def pr_ask_key(self, request_id: str) -> str:
        """What a ``/rbs benchmark`` comment asked beyond the request's own fields (pairs,
        profilers), for the agents that run it."""
        return f"{self.prefix}:pr-ask:{request_id}"

    def platform_group(self, platform: str) -> str:
        """Consumer group of one platform on the builds stream."""
        return f"{self.platform_group_prefix}{platform}"

    def platform_of_group(self, group: str) -> str | None:
        """The platform a group name belongs to, or None for other groups."""
        if group.startswith(self.platform_group_prefix):
            return group[len(self.platform_group_prefix):]
        return None

    def streams(self) -> list[str]:
        """Every stream of the pipeline, in flow order."""
        return [self.build_requests, self.builds, self.build_failures, self.test_status,
                self.dead_letter]

    def as_dict(self) -> dict[str, str]:
        """Names as a plain mapping (for display)."""
        return {f.name: getattr(self, f.name) for f in fields(self)}


def add_arguments(parser: argparse.ArgumentParser) -> None:
    """Add ``--stream-prefix`` to a command that uses the pipeline's streams."""
    parser.add_argument("--stream-prefix", default=None,
                        help=f"prefix of every stream and key (default: ${ENV_PREFIX} or 'rbs')")


def from_args(args: argparse.Namespace) -> StreamNames:
    """The names selected by :func:`add_arguments` options and the environment."""
    return StreamNames.from_env(prefix=getattr(args, "stream_prefix", None))
