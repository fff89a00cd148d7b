"""``/rbs`` commands on a pull request (issue 43): ``issue_comment`` deliveries (built on the
recorded pull request, tests/pr_comment_deliveries.py) through the webhook receiver on a real
redis-server: who may command, every parameter bounded, what is queued, once."""

from __future__ import annotations

import io
import json
import os
import re
import subprocess
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.agent.command_ask import applied
from redis_benchmarks_spec.agent.platform_config import UntilDecidedBudget
from redis_benchmarks_spec.api.commands import Ask, Reply, load_ask
from redis_benchmarks_spec.api.github import TriggerPolicy
from redis_benchmarks_spec.api.pr_command import PROFILERS, items_regexp
from redis_benchmarks_spec.api.webhook import WebhookApp, WebhookConfig, signature_for
from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.config import SessionConfig
from redis_benchmarks_spec.telemetry.profilers.registry import NAMES as PROFILER_NAMES
from tests.cli import RBS
from tests.github_standin import GitHubStandIn
from tests.pr_comment_deliveries import HEAD_SHA, PR_NUMBER, SAMPLES, comment

SECRET = b"s3cr3t-webhook"
NAMES = StreamNames.with_prefix("cmd")
COMMAND = "/rbs benchmark suites=zset platforms=icelake-2s pairs=10 profilers=instructions"


class Lab:
    """The receiver and what it answered."""

    def __init__(self, redis_server: Any) -> None:
        self.client = redis_server.client()
        policy = TriggerPolicy(platforms=("icelake-2s", "lab-b"))
        self.replies: list[Reply] = []
        self.app = WebhookApp(WebhookConfig(secret=SECRET, policy=policy, names=NAMES),
                              self.client, on_reply=self.replies.append)

    def post(self, body: bytes, event: str = "issue_comment",
             delivery: str = "d-1") -> tuple[str, dict[str, Any]]:
        environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/webhook",
                   "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
                   "HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": delivery,
                   "HTTP_X_HUB_SIGNATURE_256": signature_for(SECRET, body)}
        status: list[str] = []
        chunks = self.app(environ, lambda s, _h: status.append(s))
        return status[0], json.loads(b"".join(chunks))

    def queued(self) -> list[BuildRequest]:
        return [BuildRequest.decode(fields, entry_id) for entry_id, fields in
                self.client.xrange(NAMES.build_requests)]


@pytest.fixture(name="lab")
def lab_fixture(redis_server: Any) -> Lab:
    lab = Lab(redis_server)
    labelled = (SAMPLES / "event_webhook_labelled_pr.json").read_bytes()
    status, _ = lab.post(labelled, "pull_request", "pr-1")  # the head the lab learns
    assert status.startswith("201")
    return lab


def test_a_members_command_queues_the_head_once_and_says_what_runs(lab: Lab) -> None:
    status, answer = lab.post(comment(COMMAND), delivery="c-1")
    assert status.startswith("201"), answer
    request = lab.queued()[-1]
    assert (request.sha, request.pr, request.platforms) == (HEAD_SHA, PR_NUMBER, ["icelake-2s"])
    assert request.filters.tests_regexp == "(?:zset)"
    ask = load_ask(lab.client, NAMES, request.id)
    assert ask is not None and (ask.pairs, ask.profilers) == (10, ("instructions",))
    [reply] = lab.replies
    assert reply.pr.number == PR_NUMBER and "accepted" in reply.text
    assert "suites matching zset on icelake-2s" in reply.text
    assert "up to 10 interleaved pairs" in reply.text and "instructions" in reply.text
    # a redelivery: nothing queued, nothing answered
    assert lab.post(comment(COMMAND), delivery="c-1")[1]["status"] == "duplicate delivery"
    # the same command again (another comment, same head): answered, not queued
    again = lab.post(comment(COMMAND.replace("pairs=10 ", "") + " pairs=10"), delivery="c-2")
    assert again[1]["status"] == "repeated command" and len(lab.queued()) == 2
    assert "already queued" in lab.replies[-1].text and len(lab.replies) == 2


def test_a_stranger_is_refused_and_nothing_is_queued(lab: Lab) -> None:
    for association in ("NONE", "CONTRIBUTOR", "FIRST_TIME_CONTRIBUTOR"):
        status, answer = lab.post(comment(COMMAND, association, "stranger"),
                                  delivery=f"s-{association}")
        assert status.startswith("202") and answer["status"] == "refused"
        assert "only members, owners and collaborators" in lab.replies[-1].text
    assert len(lab.queued()) == 1  # the label's request only


@pytest.mark.parametrize("words, why", [
    ("suites=(a+)+$", "is not a name"),
    ("suites=" + ",".join(f"s{i}" for i in range(11)), "1 to 10"),
    ("suites=a*b*c", "is not a name"),
    ("suites=" + "a" * 65, "is not a name"),
    ("pairs=100000", "from 2 to 40"),
    ("pairs=1", "from 2 to 40"),
    ("pairs=-3", "from 2 to 40"),
    ("platforms=../../etc", "is not a name"),
    ("platforms=icelake*", "unknown platform"),
    ("platforms=cascadelake", "unknown platform"),
    ("profilers=strace", "unknown profiler"),
    ("profilers=instructions pairs=4 profilers=perf-stat", "given twice"),
    ("--exec=rm", "unknown word"),
    ("rm -rf /", "unknown word"),
    ("x" * 500, "longer than"),
])
def test_hostile_parameters_are_refused_with_why(lab: Lab, words: str, why: str) -> None:
    status, answer = lab.post(comment(f"please\n/rbs benchmark {words}\nthanks"))
    assert status.startswith("202") and answer["status"] == "refused", answer
    assert why in lab.replies[-1].text and "refused" in lab.replies[-1].text
    assert len(lab.queued()) == 1


def test_cancel_stops_every_request_of_the_pull_request(lab: Lab) -> None:
    assert lab.post(comment(COMMAND), delivery="c-1")[0].startswith("201")
    ids = {r.id for r in lab.queued()}
    status, answer = lab.post(comment("/rbs cancel"), delivery="x-1")
    assert status.startswith("202") and set(answer["requests"]) == ids
    assert {m.decode() for m in lab.client.smembers(NAMES.cancelled)} == ids
    assert "cancelled 2 queued request(s)" in lab.replies[-1].text
    assert lab.post(comment("/rbs cancel"), delivery="x-1")[1]["status"] == \
        "duplicate delivery"
    lab.post(comment("/rbs cancel"), delivery="x-2")
    assert "nothing queued" in lab.replies[-1].text
    refused = lab.post(comment("/rbs cancel now"), delivery="x-3")[1]
    assert refused["status"] == "refused" and "takes no parameters" in refused["reply"]


def test_what_is_not_a_command_is_left_alone(lab: Lab) -> None:
    before = len(lab.replies)
    for body, kw in (("LGTM, nice /rbs work", {}), (COMMAND, {"on_pr": False}),
                     (COMMAND, {"action": "edited"})):
        assert lab.post(comment(body, **kw))[1]["status"] == "ignored"
    assert len(lab.replies) == before and len(lab.queued()) == 1
    assert lab.post(comment("/rbs frobnicate"))[1]["status"] == "refused"


def test_patterns_are_escaped_text_with_one_wildcard_each() -> None:
    pattern = items_regexp(("zset", "hash*get", "a.b"))
    assert pattern == r"(?:zset|hash.*get|a\.b)"
    assert re.search(pattern, "memtier_benchmark-1key-zset-zadd")
    assert not re.search(pattern, "memtier_benchmark-axb")
    assert set(PROFILERS) <= set(PROFILER_NAMES)  # every profiler a command may ask exists


def _deliver(port: int, body: bytes, event: str, delivery: str) -> int:
    req = urllib.request.Request(
        f"http://127.0.0.1:{port}/webhook", data=body, method="POST",
        headers={"X-GitHub-Event": event, "X-GitHub-Delivery": delivery,
                 "X-Hub-Signature-256": signature_for(SECRET, body),
                 "Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(req, timeout=10) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


def _answers(gh: GitHubStandIn) -> list[str]:
    return [c["body"] for c in gh.comments.values() if "rbs-command-reply" in c["body"]]


def test_through_rbs_api_the_answer_is_a_comment_on_the_pull_request(
        redis_server: Any, tmp_path: Path) -> None:
    port = free_port()
    with GitHubStandIn("t0ken") as gh:
        env = {**os.environ, "RBS_GITHUB_TOKEN": "t0ken", "RBS_GITHUB_API_URL": gh.url,
               "RBS_WEBHOOK_SECRET": SECRET.decode()}
        log = tmp_path / "api.log"
        proc = subprocess.Popen([RBS, "api", "--broker", redis_server.url, "--stream-prefix",
                                 "e2e", "--port", str(port), "--platforms", "icelake-2s"],
                                env=env, stdout=log.open("wb"), stderr=subprocess.STDOUT)
        try:
            assert wait_for(lambda: _up(port), timeout=60), log.read_text()[-2000:]
            labelled = (SAMPLES / "event_webhook_labelled_pr.json").read_bytes()
            assert _deliver(port, labelled, "pull_request", "p-1") == 201
            assert _deliver(port, comment(COMMAND), "issue_comment", "c-1") == 201
            assert wait_for(lambda: any("accepted" in b for b in _answers(gh)), timeout=30)
            assert _deliver(port, comment(COMMAND, "NONE", "stranger"), "issue_comment",
                            "c-2") == 202
            assert wait_for(lambda: any("stranger" in b for b in _answers(gh)), timeout=30)
        finally:
            proc.terminate()
            proc.wait(timeout=20)
    [answer] = _answers(gh)  # one answer comment, edited in place
    assert "@stranger: refused: only members" in answer
    assert [r.path for r in gh.calls("PATCH")]  # the accepted answer was edited
    assert f"/issues/{PR_NUMBER}/comments" in " ".join(r.path for r in gh.calls("POST"))


def _up(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/healthz", timeout=2) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def test_the_agent_runs_what_the_command_asked() -> None:
    session = SessionConfig(tools=ToolPaths(), results_dir=Path("/tmp/r"))
    budget = UntilDecidedBudget(max_repetitions=40, first_round=6, round_repetitions=4)
    same = applied(session, budget, None)
    assert same == (session, budget)
    ran, capped = applied(session, budget, Ask(pairs=3, profilers=("instructions",)))
    assert ran.window.profilers.names == ("instructions",)
    assert capped is not None and (capped.max_repetitions, capped.first_round,
                                   capped.round_repetitions) == (3, 3, 3)
    # a platform without an A/B budget gets none from a command
    assert applied(session, None, Ask(pairs=10))[1] is None


def test_a_tampered_head_record_is_refused_not_a_crash(lab: Lab) -> None:
    key = NAMES.pr_head_key(f"filipecosta90/redis#{PR_NUMBER}")
    lab.client.set(key, json.dumps({"sha": HEAD_SHA, "ref": "x", "base_sha": None,
                                    "clone_url": "--upload-pack=evil"}))
    status, answer = lab.post(comment(COMMAND), delivery="t-1")
    assert status.startswith("202") and answer["status"] == "refused"
    assert "does not read" in answer["reply"] and len(lab.queued()) == 1
