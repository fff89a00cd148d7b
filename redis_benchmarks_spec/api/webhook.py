"""The GitHub webhook receiver: a plain WSGI application, served by waitress.

``POST /webhook`` (or ``/``): bounded body (413), ``X-Hub-Signature-256`` checked over the raw
body with the shared secret in constant time (401, nothing enqueued), the payload taken from
the body as GitHub sends it (``application/json``, or ``application/x-www-form-urlencoded``
with one ``payload=`` field: the signature covers the form body as sent), JSON parsed with a
depth limit (400), then :func:`redis_benchmarks_spec.api.github.decide` says whether to
enqueue a build request (201) or not (202). A redelivery (same ``X-GitHub-Delivery``) and a
replayed body (same payload sha256 under another delivery id) are enqueued only once. An
``issue_comment`` delivery is a ``/rbs`` command on a pull request (:mod:`.commands`): its
answer goes to ``on_reply``, to be posted there. ``GET /healthz``: 200 when Redis answers, 503 otherwise.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import urllib.parse
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.api.commands import (
    Commands,
    Handled,
    Reply,
    record_head,
    remember_request,
)
from redis_benchmarks_spec.api.enqueue import OnceQueue
from redis_benchmarks_spec.api.github import Decision, PayloadError, TriggerPolicy, decide
from redis_benchmarks_spec.api.pr_command import CommandRefused, PrRef
from redis_benchmarks_spec.api.triage_command import TriageAsk, of_comment, of_label
from redis_benchmarks_spec.common import safejson
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames

log = logging.getLogger(__name__)

DEFAULT_MAX_BODY = 5 * 1024 * 1024
CONNECTION_LIMIT = 2000
CHANNEL_TIMEOUT_S = 15
SIGNATURE_PREFIX = "sha256="

StartResponse = Callable[[str, list[tuple[str, str]]], Any]
# called after a request was enqueued, with the delivery's event name and payload (e.g. to
# post the "build started" pull-request comment); must not raise for a service's failure
OnEnqueued = Callable[[BuildRequest, str, dict[str, Any]], None]
# called with the answer to a pull request's /rbs command (api/commands.py), to post it
OnReply = Callable[[Reply], None]
# records a maintainer's word on an alert issue (api/triage_command.py); returns the answer
OnTriage = Callable[[TriageAsk], str]

MAX_JSON_DEPTH = 32  # GitHub payloads nest about 6 deep
FORM_TYPE = "application/x-www-form-urlencoded"  # GitHub's other content type (payload=)
MAX_FORM_FIELDS = 4

STATUS_TEXT = {200: "200 OK", 201: "201 Created", 202: "202 Accepted", 400: "400 Bad Request",
               401: "401 Unauthorized", 404: "404 Not Found", 405: "405 Method Not Allowed",
               411: "411 Length Required", 413: "413 Payload Too Large",
               503: "503 Service Unavailable"}


class HttpError(Exception):
    """An answer other than success, with its status code."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status
        self.message = message


@dataclass(frozen=True)
class WebhookConfig:
    """Everything the receiver needs besides its Redis client."""

    secret: bytes
    policy: TriggerPolicy = field(default_factory=TriggerPolicy)
    names: StreamNames = field(default_factory=StreamNames)
    max_body_bytes: int = DEFAULT_MAX_BODY

    def __post_init__(self) -> None:
        if not self.secret:
            raise ValueError("the webhook secret must not be empty")


def signature_for(secret: bytes, body: bytes) -> str:
    """The ``X-Hub-Signature-256`` header value GitHub sends for ``body``."""
    return SIGNATURE_PREFIX + hmac.new(secret, body, hashlib.sha256).hexdigest()


def verify_signature(secret: bytes, body: bytes, header: str | None) -> bool:
    """True when ``header`` is the HMAC-SHA256 of the raw ``body`` (constant-time compare)."""
    if not header or not header.startswith(SIGNATURE_PREFIX):
        return False
    return hmac.compare_digest(signature_for(secret, body).encode(), header.strip().encode())


def payload_json(body: bytes, content_type: str) -> bytes:
    """The JSON of a delivery whose (signed, raw) body is ``body``: the body itself, or the
    one ``payload`` field of a form-encoded delivery; :class:`ValueError` when a form holds
    anything else."""
    if content_type.split(";", 1)[0].strip().lower() != FORM_TYPE:
        return body
    try:
        fields = urllib.parse.parse_qs(body.decode("ascii"), keep_blank_values=True,
                                       strict_parsing=True, errors="strict",
                                       max_num_fields=MAX_FORM_FIELDS)
    except UnicodeDecodeError as exc:
        raise ValueError("a form-encoded body holds bytes that are not ASCII") from exc
    if set(fields) != {"payload"} or len(fields["payload"]) != 1:
        raise ValueError(f"a form-encoded delivery holds one 'payload' field, not "
                         f"{sorted(fields)[:5]}")
    return fields["payload"][0].encode()


class WebhookApp:
    """WSGI callable: ``waitress.serve(WebhookApp(config, client))``."""

    def __init__(self, config: WebhookConfig, client: redis.Redis,
                 on_enqueued: OnEnqueued | None = None, on_reply: OnReply | None = None,
                 on_triage: OnTriage | None = None) -> None:
        self.config = config
        self.client = client
        self.on_enqueued = on_enqueued
        self.on_reply = on_reply
        self.on_triage = on_triage
        self.queue = OnceQueue(client, config.names.build_requests)
        self.commands = Commands(client, config.names, config.policy, self.queue)

    def __call__(self, environ: dict[str, Any], start_response: StartResponse) -> Iterable[bytes]:
        try:
            status, body = self._route(environ)
        except HttpError as exc:
            status, body = exc.status, {"error": exc.message}
        except redis.RedisError as exc:
            log.error("webhook: redis unavailable: %s", exc)
            status, body = 503, {"error": "broker unavailable; GitHub will show a failed delivery"}
        payload = json.dumps(body).encode()
        start_response(STATUS_TEXT[status], [("Content-Type", "application/json"),
                                             ("Content-Length", str(len(payload)))])
        return [payload]

    def _route(self, environ: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        path = environ.get("PATH_INFO", "/")
        method = environ.get("REQUEST_METHOD", "GET")
        if path == "/healthz":
            self.client.ping()
            return 200, {"status": "ok"}
        if path not in ("/", "/webhook"):
            raise HttpError(404, f"no route {path}")
        if method != "POST":
            raise HttpError(405, "POST a GitHub delivery here")
        return self._delivery(environ)

    def _delivery(self, environ: dict[str, Any]) -> tuple[int, dict[str, Any]]:
        body = self._read_body(environ)
        if not verify_signature(self.config.secret, body,
                                environ.get("HTTP_X_HUB_SIGNATURE_256")):
            raise HttpError(401, "missing or wrong X-Hub-Signature-256")
        event = environ.get("HTTP_X_GITHUB_EVENT", "")
        if event == "ping":
            return 200, {"status": "pong"}
        delivery = environ.get("HTTP_X_GITHUB_DELIVERY", "")
        try:
            payload = safejson.loads(payload_json(body, environ.get("CONTENT_TYPE", "")),
                                     MAX_JSON_DEPTH)
            if event == "issue_comment":
                return self._command(payload, delivery)
            if event == "issues":
                return self._triage(of_label(payload), delivery)
            decision = decide(event, payload, self.config.policy)
        except (ValueError, PayloadError) as exc:  # JSONDecodeError is a ValueError
            raise HttpError(400, f"malformed {event or 'unknown'} payload: {exc}") from exc
        if event == "pull_request":  # its head, for the /rbs commands on it
            record_head(self.client, self.config.names, payload)
        status, answer = self._enqueue(decision, delivery, hashlib.sha256(body).hexdigest())
        if status == 201 and decision.request is not None and self.on_enqueued is not None:
            self.on_enqueued(decision.request, event, payload)
        return status, answer

    def _command(self, payload: Any, delivery: str) -> tuple[int, dict[str, Any]]:
        issue = payload.get("issue") if isinstance(payload, dict) else None
        if isinstance(issue, dict) and issue.get("pull_request") is None:
            try:  # a comment on an issue: an alert's triage, if anything
                return self._triage(of_comment(payload), delivery)
            except CommandRefused as exc:
                handled = self.commands.refuse(payload, delivery, f"refused: {exc}.")
        else:
            handled = self.commands.handle(payload, delivery)
        return self._answered(handled, delivery)

    def _triage(self, ask: TriageAsk | None, delivery: str) -> tuple[int, dict[str, Any]]:
        if ask is None:
            return 202, {"status": "ignored", "reason": "not a triage of an alert"}
        if not self.commands.claim(delivery):
            return 202, {"status": "duplicate delivery", "delivery": delivery}
        text = self.on_triage(ask) if self.on_triage is not None else \
            "this lab keeps no alerts here (rbs api was started without --datasink)"
        return self._answered(Handled(202, {"status": "triage", "reply": text},
                                      Reply(ask.issue, f"@{ask.by}: {text}")), delivery)

    def _answered(self, handled: Handled, delivery: str) -> tuple[int, dict[str, Any]]:
        log.info("webhook: issue_comment %s: %s", delivery[:40], handled.answer.get("status"))
        if handled.reply is not None and self.on_reply is not None:
            self.on_reply(handled.reply)
        return handled.status, handled.answer

    def _read_body(self, environ: dict[str, Any]) -> bytes:
        limit = self.config.max_body_bytes
        length_text = environ.get("CONTENT_LENGTH") or ""
        try:
            length = int(length_text) if length_text else None
        except ValueError as exc:
            raise HttpError(400, f"bad Content-Length {length_text!r}") from exc
        if length is not None and length > limit:
            raise HttpError(413, f"body of {length} bytes exceeds {limit}")
        stream = environ["wsgi.input"]
        body = stream.read(length if length is not None else limit + 1)
        if len(body) > limit:
            raise HttpError(413, f"body exceeds {limit} bytes")
        return bytes(body)

    def _enqueue(self, decision: Decision, delivery: str,
                 digest: str) -> tuple[int, dict[str, Any]]:
        request = decision.request
        if request is None:
            log.info("webhook: ignored (%s)", decision.reason)
            return 202, {"status": "ignored", "reason": decision.reason}
        entry_id = self._xadd(request, delivery, digest)
        if entry_id is None:
            log.info("webhook: delivery %s (payload %s) already enqueued", delivery, digest[:12])
            return 202, {"status": "duplicate delivery", "delivery": delivery,
                         "payload_sha256": digest}
        if request.pr is not None:  # /rbs cancel stops it (api/commands.py)
            remember_request(self.client, self.config.names,
                             PrRef(request.org, request.repo, request.pr), request.id)
        log.info("webhook: %s -> request %s (%s/%s %s) entry %s", decision.reason, request.id,
                 request.org, request.repo, request.sha, entry_id)
        return 201, {"status": "enqueued", "request_id": request.id, "entry_id": entry_id,
                     "sha": request.sha, "reason": decision.reason}

    def _xadd(self, request: BuildRequest, delivery: str, digest: str) -> str | None:
        # once per delivery id AND once per payload: a signed body replayed under a fresh
        # delivery id is the same payload
        marks = [self.config.names.webhook_payload_key(digest)]
        if delivery:
            marks.append(self.config.names.webhook_delivery_key(delivery[:200]))
        return self.queue.add(request, marks)


def serve(app: WebhookApp, host: str, port: int, threads: int = 4) -> None:
    """Serve ``app`` with waitress until interrupted."""
    import waitress

    # idle or half-open connections must never starve a delivery: waitress holds up to
    # connection_limit sockets without a thread each (a thread only serves a request whose
    # body has fully arrived), drops one silent for channel_timeout seconds, and polls with
    # poll() so sockets past FD_SETSIZE work (defaults: 100 connections, 120 s, select)
    waitress.serve(app, host=host, port=port, threads=threads, ident="rbs-api",
                   max_request_body_size=app.config.max_body_bytes + 1,
                   connection_limit=CONNECTION_LIMIT, channel_timeout=CHANNEL_TIMEOUT_S,
                   cleanup_interval=2, asyncore_use_poll=True, backlog=1024)
