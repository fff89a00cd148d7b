"""``rbs api`` (waitress) attacked: 200 idle and half-open connections held open while a
valid delivery arrives, a signed body replayed under a fresh delivery id, deeply nested
JSON, a label in another case. A real ``rbs api`` process and a real redis-server broker."""

from __future__ import annotations

import http.client
import json
import socket
import time
import urllib.parse
import uuid
from pathlib import Path

import pytest

from redis_benchmarks_spec.api.webhook import signature_for
from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.events.names import StreamNames
from tests.hostile_fixtures import Daemon, daemon_env, wait_until

SECRET = "hostile-webhook-secret"
SAMPLE = Path(__file__).parent / "fixtures" / "github" / "event_webhook_labelled_pr.json"


class Api:
    def __init__(self, redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
        self.names = StreamNames.with_prefix(f"hw{uuid.uuid4().hex[:8]}")
        self.port = free_port()
        self.daemon = Daemon(["api", "--broker", redis_server.url, "--stream-prefix",
                              self.names.prefix, "--host", "127.0.0.1", "--port", str(self.port),
                              "--threads", "4"], tmp_path / "api.log",
                             daemon_env(RBS_WEBHOOK_SECRET=SECRET), warm=True)
        wait_until(self._healthy, 30, "rbs api answers /healthz")

    def _healthy(self) -> bool:
        try:
            return self.post_raw("GET", "/healthz", b"", {})[0] == 200
        except OSError:
            return False

    def post_raw(self, method: str, path: str, body: bytes,
                 headers: dict[str, str]) -> tuple[int, dict]:  # type: ignore[type-arg]
        conn = http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)
        try:
            conn.request(method, path, body=body, headers=headers)
            resp = conn.getresponse()
            return resp.status, json.loads(resp.read() or b"{}")
        finally:
            conn.close()

    def deliver(self, body: bytes, delivery: str | None = None) -> tuple[int, dict]:  # type: ignore[type-arg]
        return self.post_raw("POST", "/webhook", body, {
            "X-GitHub-Event": "pull_request", "Content-Type": "application/json",
            "X-GitHub-Delivery": delivery or str(uuid.uuid4()),
            "X-Hub-Signature-256": signature_for(SECRET.encode(), body)})


@pytest.fixture
def api(redis_server, tmp_path: Path):  # type: ignore[no-untyped-def]
    server = Api(redis_server, tmp_path)
    yield server
    server.daemon.stop()


def payload(sha: str = "a3448f39efb8900f6f66778783461cf49de94b4f",
            label: str = "action:run-benchmark") -> bytes:
    data = json.loads(SAMPLE.read_bytes())
    data["pull_request"]["head"]["sha"] = sha
    data["pull_request"]["labels"] = [{"name": label}]
    return json.dumps(data).encode()


def test_idle_connections_do_not_starve_a_delivery(api: Api) -> None:
    idle = []
    try:
        for i in range(200):
            s = socket.create_connection(("127.0.0.1", api.port), timeout=5)
            if i % 2:  # half of them half-open: headers started, never finished
                s.sendall(b"POST /webhook HTTP/1.1\r\nHost: x\r\nContent-Length: 100\r\n")
            idle.append(s)
        started = time.monotonic()
        status, body = api.deliver(payload())
        elapsed = time.monotonic() - started
    finally:
        for s in idle:
            s.close()
    assert status == 201, body
    print(f"valid delivery answered in {elapsed:.3f}s with 200 idle connections open")


def test_replay_deep_json_and_label_case(api: Api, redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    body = payload()
    assert api.deliver(body)[0] == 201
    status, answer = api.deliver(body)  # the same signed body, a fresh delivery id
    assert status == 202 and answer["status"] == "duplicate delivery"
    assert client.xlen(api.names.build_requests) == 1
    deep = b'{"action": "labeled", "x": ' + b"[" * 100_000 + b"]" * 100_000 + b"}"
    status, answer = api.deliver(deep)
    assert status == 400 and "deep" in answer["error"]
    status, answer = api.deliver(payload(sha="b" * 40, label="Action:Run-Benchmark"))
    assert status == 201, answer
    assert client.xlen(api.names.build_requests) == 2
    bad_sha = payload(sha="--upload-pack=touch /tmp/x" + "0" * 14)
    assert api.deliver(bad_sha)[0] == 400
    assert api.daemon.alive() and "Traceback" not in api.daemon.log()


@pytest.mark.parametrize(("side", "ref"), [("base", "has space"), ("head", "has space"),
                                           ("base", "feat..x"), ("head", "-x"),
                                           ("base", "a@{b"), ("base", 7),
                                           # shown as another name (Trojan Source)
                                           ("head", "fix-\u202etxt.exe"),
                                           ("base", "unstable\u200b"),
                                           ("head", "a\u2066b\u2069")])
def test_both_refs_are_checked(api: Api, redis_server, side: str, ref: object) -> None:  # type: ignore[no-untyped-def]
    data = json.loads(payload())
    data["pull_request"][side]["ref"] = ref
    status, answer = api.deliver(json.dumps(data).encode())
    assert status == 400 and "ref" in answer["error"], (status, answer)
    assert redis_server.client().xlen(api.names.build_requests) == 0
    assert api.daemon.alive() and "Traceback" not in api.daemon.log()


def test_a_stored_pr_info_with_a_bad_ref_is_refused_where_read(redis_server) -> None:  # type: ignore[no-untyped-def]
    """The agent and the notifier read the pull request's refs back from the broker,
    which others can write: both refs are checked there too."""
    from redis_benchmarks_spec.pullrequest import state as pr_state
    names = StreamNames.with_prefix(f"hw{uuid.uuid4().hex[:8]}")
    client = redis_server.client()
    good = {"org": "redis", "repo": "redis", "number": 1, "head_sha": "a" * 40,
            "head_ref": "feature", "base_ref": "unstable", "base_sha": "b" * 40}
    client.set(pr_state.info_key(names, "r1"), json.dumps(good))
    assert pr_state.load_info(client, names, "r1") is not None
    for key, bad in (("base_ref", "has space"), ("head_ref", "--upload-pack=x"),
                     ("head_ref", "fix\u202etxt.exe"),
                     ("base_ref", "a..b"), ("base_sha", "--x")):
        client.set(pr_state.info_key(names, "r1"), json.dumps({**good, key: bad}))
        with pytest.raises(pr_state.PrInfoError, match=key):
            pr_state.load_info(client, names, "r1")


def _form_deliver(api: Api, body: bytes, signed: bytes, event: str = "pull_request"
                  ) -> tuple[int, dict]:  # type: ignore[type-arg]
    return api.post_raw("POST", "/webhook", body, {
        "X-GitHub-Event": event, "Content-Type": "application/x-www-form-urlencoded",
        "X-GitHub-Delivery": str(uuid.uuid4()),
        "X-Hub-Signature-256": signature_for(SECRET.encode(), signed)})


def test_form_encoded_deliveries_under_the_same_signature(api: Api, redis_server) -> None:  # type: ignore[no-untyped-def]
    """GitHub's other content type: ``payload=<urlencoded JSON>``, signed over the body as
    sent. Accepted like JSON; a signature over anything else, or a form holding more than
    the payload, is refused and nothing is enqueued."""
    client = redis_server.client()
    text = payload(sha="d" * 40)
    form = b"payload=" + urllib.parse.quote_plus(text.decode()).encode()
    status, answer = _form_deliver(api, form, signed=text)  # signed over the JSON: wrong
    assert status == 401, answer
    status, answer = _form_deliver(api, form + b"&x=1", signed=form + b"&x=1")
    assert status == 400 and "payload" in answer["error"], answer
    assert client.xlen(api.names.build_requests) == 0
    status, answer = _form_deliver(api, form, signed=form)
    assert status == 201 and answer["sha"] == "d" * 40, answer
    status, answer = _form_deliver(api, form, signed=form)  # the same body again
    assert status == 202 and answer["status"] == "duplicate delivery", answer
    push = json.loads((SAMPLE.parent / "event_webhook_pushed_repo.json").read_bytes())
    push["ref"] = "refs/heads/unstable\u202e"
    form = b"payload=" + urllib.parse.quote_plus(json.dumps(push)).encode()
    status, answer = _form_deliver(api, form, signed=form, event="push")
    assert status == 400 and "U+202E" in answer["error"], answer
    assert client.xlen(api.names.build_requests) == 1
    assert api.daemon.alive() and "Traceback" not in api.daemon.log()
