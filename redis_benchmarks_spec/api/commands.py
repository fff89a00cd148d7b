"""Acting on ``/rbs`` commands (:mod:`.pr_command`) of ``issue_comment`` deliveries.

``benchmark`` queues the pull request's newest head (recorded from its ``pull_request``
deliveries by :func:`record_head`: a comment's payload names no commit) through the same
queue-once script as the webhook, marked by the delivery id and by the command itself, so a
redelivery or the same command repeated on the same head queues nothing; what it asks beyond
the request's fields (pairs, profilers) is stored beside the request for the agents
(:func:`save_ask`, :func:`load_ask`). ``cancel`` marks every request queued for the pull
request cancelled (``events.status.cancel``). Every command gets a :class:`Reply` to post on
the pull request: accepted with what will run, or refused with why; a redelivery gets none.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass
from typing import Any

import redis

from redis_benchmarks_spec.api.enqueue import DELIVERY_TTL_S, OnceQueue
from redis_benchmarks_spec.api.github import TriggerPolicy
from redis_benchmarks_spec.api.pr_command import (
    ASSOCIATIONS,
    MAX_PAIRS,
    PROFILERS,
    CommandRefused,
    PrCommand,
    PrRef,
    of_delivery,
    parse,
)
from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.events import validation
from redis_benchmarks_spec.events.errors import MessageError
from redis_benchmarks_spec.events.messages import SOURCE_GIT, BuildRequest, SourceLocation, now_ms
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import cancel

HEAD_TTL_S = 30 * 24 * 3600
_SHA_CHARS = set("0123456789abcdef")


@dataclass(frozen=True)
class Reply:
    """What the lab answers on the pull request."""

    pr: PrRef
    text: str


@dataclass(frozen=True)
class Handled:
    """The HTTP answer to the delivery, and the reply to post (None: post nothing)."""

    status: int
    answer: dict[str, Any]
    reply: Reply | None = None


@dataclass(frozen=True)
class Ask:
    """A command's asks the build request has no field for."""

    pairs: int | None = None
    profilers: tuple[str, ...] = ()


def _sha(value: Any) -> str | None:
    ok = isinstance(value, str) and len(value) == 40 and set(value) <= _SHA_CHARS
    return value if ok else None


def record_head(client: redis.Redis, names: StreamNames, payload: Any) -> bool:
    """Keep the head (and base) a ``pull_request`` delivery names; False when it names none
    that reads (the delivery itself is judged elsewhere)."""
    pr = payload.get("pull_request") if isinstance(payload, dict) else None
    if not isinstance(pr, dict):
        return False
    head, base = pr.get("head"), pr.get("base")
    repo = base.get("repo") if isinstance(base, dict) else None
    owner = repo.get("owner") if isinstance(repo, dict) else None
    if not (isinstance(head, dict) and isinstance(base, dict) and isinstance(repo, dict)
            and isinstance(owner, dict)):
        return False
    head_repo: dict[str, Any] = head["repo"] if isinstance(head.get("repo"), dict) else repo
    record = {"sha": _sha(head.get("sha")), "ref": head.get("ref"),
              "base_sha": _sha(base.get("sha")), "clone_url": head_repo.get("clone_url")}
    number = pr.get("number")
    try:
        ref = PrRef(str(owner.get("login")), str(repo.get("name")), int(str(number))).ref
        validation.url("clone_url", record["clone_url"])
        if record["sha"] is None or not isinstance(record["ref"], str) or \
                validation.ref_problem(record["ref"]) is not None:
            return False
    except (TypeError, ValueError, MessageError):
        return False
    client.set(names.pr_head_key(ref), json.dumps(record), ex=HEAD_TTL_S)
    return True


def remember_request(client: redis.Redis, names: StreamNames, pr: PrRef,
                     request_id: str) -> None:
    """A request queued for ``pr`` (by its label or a command): ``/rbs cancel`` stops it."""
    key = names.pr_requests_key(pr.ref)
    pipe = client.pipeline(transaction=False)
    pipe.sadd(key, request_id)
    pipe.expire(key, HEAD_TTL_S)
    pipe.execute()


def _head(client: redis.Redis, names: StreamNames, pr: PrRef) -> dict[str, Any] | None:
    raw = client.get(names.pr_head_key(pr.ref))
    record = bounded_loads(raw, 3) if raw is not None and len(raw) < 4096 else None
    return record if isinstance(record, dict) and _sha(record.get("sha")) else None


def save_ask(client: redis.Redis, names: StreamNames, request_id: str, ask: Ask) -> None:
    client.set(names.pr_ask_key(request_id),
               json.dumps({"pairs": ask.pairs, "profilers": list(ask.profilers)}),
               ex=HEAD_TTL_S)


def load_ask(client: redis.Redis, names: StreamNames, request_id: str) -> Ask | None:
    """The asks stored for a request (untrusted: checked again), None when none."""
    raw = client.get(names.pr_ask_key(request_id))
    data = bounded_loads(raw, 3) if raw is not None and len(raw) < 4096 else None
    if not isinstance(data, dict):
        return None
    pairs = data.get("pairs")
    profilers = data.get("profilers") or []
    if not (pairs is None or (type(pairs) is int and 2 <= pairs <= MAX_PAIRS)) or \
            not isinstance(profilers, list) or not set(profilers) <= set(PROFILERS):
        return None
    return Ask(pairs, tuple(profilers))


class Commands:
    """The command half of the webhook receiver (module doc)."""

    def __init__(self, client: redis.Redis, names: StreamNames, policy: TriggerPolicy,
                 queue: OnceQueue) -> None:
        self.client, self.names, self.policy, self.queue = client, names, policy, queue

    def handle(self, payload: Any, delivery: str) -> Handled:
        """Act on one ``issue_comment`` delivery (signature already checked)."""
        got = of_delivery(payload)
        if got is None:
            return Handled(202, {"status": "ignored", "reason": "not a new comment on a "
                                 "pull request"})
        pr, user, association, body = got
        if self.policy.repos and f"{pr.org}/{pr.repo}" not in self.policy.repos:
            return Handled(202, {"status": "ignored",
                                 "reason": f"repository {pr.org}/{pr.repo} is not configured"})
        try:
            command = parse(body, pr, user, self.policy.platforms)
        except CommandRefused as exc:
            return self._once(delivery, pr, f"@{user}: refused: {exc}.")
        if command is None:
            return Handled(202, {"status": "ignored", "reason": "no /rbs command"})
        if association not in ASSOCIATIONS:
            return self._once(delivery, pr, (
                f"@{user}: refused: only members, owners and collaborators of "
                f"{pr.org}/{pr.repo} can command the lab (your association: "
                f"{association.lower()[:40]})."))
        if command.action == "cancel":
            return self._cancel(delivery, command)
        return self._benchmark(delivery, command)

    def refuse(self, payload: Any, delivery: str, text: str) -> Handled:
        """The answer to a command refused before it was read as one (on an issue)."""
        issue, sender = payload.get("issue") or {}, payload.get("sender") or {}
        repo = payload.get("repository") or {}
        pr = PrRef(str((repo.get("owner") or {}).get("login", ""))[:100],
                   str(repo.get("name", ""))[:100], int(issue.get("number") or 0))
        return self._once(delivery, pr, f"@{str(sender.get('login', ''))[:100]}: {text}")

    def claim(self, delivery: str) -> bool:
        """True the first time a delivery id is seen (commands that queue nothing)."""
        return self._claim(delivery)

    def _claim(self, delivery: str) -> bool:
        if not delivery:
            return True
        return bool(self.client.set(self.names.webhook_delivery_key(delivery[:200]), "1",
                                    nx=True, ex=DELIVERY_TTL_S))

    def _once(self, delivery: str, pr: PrRef, text: str) -> Handled:
        if not self._claim(delivery):
            return Handled(202, {"status": "duplicate delivery", "delivery": delivery})
        return Handled(202, {"status": "refused", "reply": text}, Reply(pr, text))

    def _cancel(self, delivery: str, command: PrCommand) -> Handled:
        if not self._claim(delivery):
            return Handled(202, {"status": "duplicate delivery", "delivery": delivery})
        ids = sorted(m.decode() if isinstance(m, bytes) else str(m) for m in
                     self.client.smembers(self.names.pr_requests_key(command.pr.ref)))
        stopped = [i for i in ids if cancel(self.client, self.names, i)]
        text = (f"@{command.user}: cancelled {len(stopped)} queued request(s) of "
                f"#{command.pr.number}; tests already running finish first."
                if stopped else f"@{command.user}: nothing queued for #{command.pr.number} "
                "to cancel.")
        return Handled(202, {"status": "cancelled", "requests": stopped, "reply": text},
                       Reply(command.pr, text))

    def _request(self, command: PrCommand, head: dict[str, Any]) -> BuildRequest:
        return BuildRequest(
            org=command.pr.org, repo=command.pr.repo, branch=head["ref"], sha=head["sha"],
            commit_time_ms=now_ms(), pr=command.pr.number, base_sha=head.get("base_sha"),
            source=SourceLocation(SOURCE_GIT, self.policy.git_remote or head["clone_url"]),
            filters=command.filters(),
            platforms=list(command.platforms or self.policy.platforms),
            build_variants=list(self.policy.build_variants),
            triggering_env=self.policy.triggering_env)

    def _benchmark(self, delivery: str, command: PrCommand) -> Handled:
        pr, user = command.pr, command.user
        if delivery and self.client.exists(self.names.webhook_delivery_key(delivery[:200])):
            return Handled(202, {"status": "duplicate delivery", "delivery": delivery})
        head = _head(self.client, self.names, pr)
        if head is None:
            return self._once(delivery, pr, (
                f"@{user}: refused: the lab has not seen the head of #{pr.number} yet (it "
                "learns it from the pull request's own deliveries: push to it or label it)."))
        try:  # the recorded head is read back from the broker: checked again here
            request = self._request(command, head)
        except (MessageError, KeyError, TypeError) as exc:
            return self._once(delivery, pr, f"@{user}: refused: the head recorded for "
                              f"#{pr.number} does not read ({str(exc)[:120]}).")
        same = hashlib.sha256(f"{pr.ref}@{head['sha']} {command.canonical()}".encode())
        marks = [self.names.webhook_payload_key("command-" + same.hexdigest())]
        if delivery:
            marks.append(self.names.webhook_delivery_key(delivery[:200]))
        entry = self.queue.add(request, marks)
        if entry is None:
            text = (f"@{user}: `{command.canonical()}` is already queued for "
                    f"{head['sha'][:10]}; nothing more queued.")
            return Handled(202, {"status": "repeated command", "reply": text}, Reply(pr, text))
        self._remember(request, command)
        text = (f"@{user}: accepted `{command.text}`. Queued {head['sha'][:10]} "
                f"(request {request.id[:8]}): {command.describe()}; "
                f"{self._ahead()} ahead of it. The results comment follows.")
        return Handled(201, {"status": "enqueued", "request_id": request.id,
                             "entry_id": entry, "sha": request.sha, "reply": text},
                       Reply(pr, text))

    def _remember(self, request: BuildRequest, command: PrCommand) -> None:
        remember_request(self.client, self.names, command.pr, request.id)
        if command.pairs or command.profilers:
            save_ask(self.client, self.names, request.id, Ask(command.pairs, command.profilers))

    def _ahead(self) -> str:
        """How many build requests no builder has taken yet (the builders' group lag)."""
        try:
            groups = self.client.xinfo_groups(self.names.build_requests)
        except redis.ResponseError:
            return "no builder has joined yet, nothing"
        lag = max((int(g.get("lag") or 0) for g in groups), default=0)
        return f"{max(lag - 1, 0)} build request(s)"
