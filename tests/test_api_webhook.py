"""The webhook receiver with the real GitHub samples, a real redis-server and waitress."""

from __future__ import annotations

import io
import json
import threading
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import waitress

from redis_benchmarks_spec.api.github import TriggerPolicy
from redis_benchmarks_spec.api.webhook import WebhookApp, WebhookConfig, signature_for
from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames

SAMPLES = Path(__file__).parent / "fixtures" / "github"
SECRET = b"s3cr3t-webhook"
NAMES = StreamNames.with_prefix("hook")
PR_SHA = "a3448f39efb8900f6f66778783461cf49de94b4f"


def _sample(name: str) -> bytes:
    return (SAMPLES / name).read_bytes()


PR_BODY = _sample("event_webhook_labelled_pr.json")
PUSH_BODY = _sample("event_webhook_pushed_repo.json")


def _app(redis_server: Any, **policy: Any) -> WebhookApp:
    config = WebhookConfig(secret=SECRET, policy=TriggerPolicy(**policy), names=NAMES,
                           max_body_bytes=64 * 1024)
    return WebhookApp(config, redis_server.client())


def _call(app: WebhookApp, body: bytes, event: str = "pull_request",
          signature: str | None = "auto", delivery: str = "d-1",
          method: str = "POST", path: str = "/webhook") -> tuple[str, dict[str, Any]]:
    environ: dict[str, Any] = {
        "REQUEST_METHOD": method, "PATH_INFO": path, "CONTENT_LENGTH": str(len(body)),
        "wsgi.input": io.BytesIO(body), "HTTP_X_GITHUB_EVENT": event,
        "HTTP_X_GITHUB_DELIVERY": delivery,
    }
    if signature == "auto":
        signature = signature_for(SECRET, body)
    if signature is not None:
        environ["HTTP_X_HUB_SIGNATURE_256"] = signature
    status: list[str] = []
    chunks = app(environ, lambda s, _h: status.append(s))
    return status[0], json.loads(b"".join(chunks))


def _requests(redis_server: Any) -> list[BuildRequest]:
    rows = redis_server.client().xrange(NAMES.build_requests)
    return [BuildRequest.decode(f, i.decode()) for i, f in rows]


def test_labelled_pr_with_signature_enqueues_exactly_one_request(redis_server) -> None:  # type: ignore[no-untyped-def]
    status, body = _call(_app(redis_server), PR_BODY)
    assert status.startswith("201"), body
    [req] = _requests(redis_server)
    assert (req.org, req.repo, req.sha, req.pr, req.branch) == (
        "filipecosta90", "redis", PR_SHA, 9, "unstable.55555")
    assert req.source.kind == "git"
    assert req.source.location == "https://github.com/filipecosta90/redis.git"
    assert body["request_id"] == req.id


def test_redelivery_of_the_same_delivery_is_not_enqueued_twice(redis_server) -> None:  # type: ignore[no-untyped-def]
    app = _app(redis_server)
    assert _call(app, PR_BODY, delivery="abc")[0].startswith("201")
    assert _call(app, PR_BODY, delivery="abc")[0].startswith("202")
    assert len(_requests(redis_server)) == 1


def test_mirror_replaces_the_clone_url(redis_server) -> None:  # type: ignore[no-untyped-def]
    _call(_app(redis_server, git_remote="/srv/mirror/redis.git"), PR_BODY)
    assert _requests(redis_server)[0].source.location == "/srv/mirror/redis.git"


@pytest.mark.parametrize("signature", [
    None, "", "sha256=" + "0" * 64, "sha1=abc", signature_for(b"other-secret", PR_BODY),
])
def test_missing_or_wrong_signature_is_401_and_enqueues_nothing(redis_server, signature) -> None:  # type: ignore[no-untyped-def]
    status, _ = _call(_app(redis_server), PR_BODY, signature=signature)
    assert status.startswith("401")
    assert _requests(redis_server) == []


def test_signature_is_over_the_raw_body(redis_server) -> None:  # type: ignore[no-untyped-def]
    # same JSON, different bytes: the signature of the original no longer matches
    reformatted = json.dumps(json.loads(PR_BODY)).encode()
    status, _ = _call(_app(redis_server), reformatted, signature=signature_for(SECRET, PR_BODY))
    assert status.startswith("401")


@pytest.mark.parametrize("event,body,policy", [
    ("issues", PR_BODY, {}),
    ("pull_request", PR_BODY, {"trigger_label": "some-other-label"}),
    ("pull_request", PR_BODY, {"repos": ("redis/redis",)}),
    ("push", PUSH_BODY, {}),  # pushed to unstable.55555, only "unstable" is tracked
])
def test_unrelated_deliveries_are_202_and_enqueue_nothing(redis_server, event, body, policy) -> None:  # type: ignore[no-untyped-def]
    status, answer = _call(_app(redis_server, **policy), body, event=event)
    assert status.startswith("202"), answer
    assert _requests(redis_server) == []


def test_closed_pr_action_is_ignored(redis_server) -> None:  # type: ignore[no-untyped-def]
    payload = json.loads(PR_BODY)
    payload["action"] = "closed"
    status, _ = _call(_app(redis_server), json.dumps(payload).encode())
    assert status.startswith("202") and _requests(redis_server) == []


def test_push_to_tracked_branch_enqueues(redis_server) -> None:  # type: ignore[no-untyped-def]
    status, _ = _call(_app(redis_server, branches=("unstable.55555",)), PUSH_BODY, event="push")
    assert status.startswith("201")
    [req] = _requests(redis_server)
    assert req.sha == "921489d5392a13e10493c6578a27b4bd5324a929"
    assert req.branch == "unstable.55555" and req.pr is None
    assert req.commit_time_ms == 1632224535000  # head_commit.timestamp 2021-09-21T12:42:15+01:00


@pytest.mark.parametrize("body", [
    b"{not json", b"[]", b'{"action": "labeled"}',
    json.dumps({**json.loads(PR_BODY), "pull_request": {"labels": "x"}}).encode(),
])
def test_malformed_payload_is_400(redis_server, body) -> None:  # type: ignore[no-untyped-def]
    status, _ = _call(_app(redis_server), body)
    assert status.startswith("400")
    assert _requests(redis_server) == []


def test_oversized_body_is_413(redis_server) -> None:  # type: ignore[no-untyped-def]
    body = b" " * (64 * 1024 + 1)
    status, _ = _call(_app(redis_server), body)
    assert status.startswith("413") and _requests(redis_server) == []


def test_healthz_and_unknown_routes(redis_server) -> None:  # type: ignore[no-untyped-def]
    app = _app(redis_server)
    assert _call(app, b"", method="GET", path="/healthz")[0].startswith("200")
    assert _call(app, b"", method="GET", path="/nope")[0].startswith("404")
    assert _call(app, b"", method="GET", path="/webhook")[0].startswith("405")
    redis_server.stop()
    assert _call(app, b"", method="GET", path="/healthz")[0].startswith("503")


@pytest.fixture
def served(redis_server) -> Iterator[str]:  # type: ignore[no-untyped-def]
    """The app behind a real waitress server on a free port."""
    port = free_port()
    server = waitress.create_server(_app(redis_server), host="127.0.0.1", port=port,
                                    max_request_body_size=64 * 1024 + 1)
    thread = threading.Thread(target=server.run, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{port}"
    server.close()
    thread.join(timeout=5)


def _post(url: str, body: bytes, headers: dict[str, str]) -> tuple[int, bytes]:
    req = urllib.request.Request(url, data=body, headers=headers, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return resp.status, resp.read()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read()


def test_real_waitress_server(served: str, redis_server) -> None:  # type: ignore[no-untyped-def]
    headers = {"X-GitHub-Event": "pull_request", "X-GitHub-Delivery": "w-1",
               "Content-Type": "application/json"}
    code, _ = _post(served + "/webhook", PR_BODY, headers)
    assert code == 401 and _requests(redis_server) == []
    code, answer = _post(served + "/webhook", PR_BODY,
                         {**headers, "X-Hub-Signature-256": signature_for(SECRET, PR_BODY)})
    assert code == 201, answer
    assert [r.sha for r in _requests(redis_server)] == [PR_SHA]
    code, _ = _post(served + "/webhook", b"x" * (70 * 1024), headers)
    assert code == 413
    with urllib.request.urlopen(served + "/healthz", timeout=5) as resp:
        assert resp.status == 200
