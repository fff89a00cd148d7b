"""Alerts a maintainer triages (issue 43): a label on the alert's GitHub issue, a ``/rbs
triage`` comment, or the site with its token; the word kept with the alert in a real
datasink, shown by ``rbs history`` and the site, and counted in the alert precision."""

from __future__ import annotations

import io
import json
import urllib.error
import urllib.parse
import urllib.request
from collections.abc import Iterator
from typing import Any

import pytest

from redis_benchmarks_spec.api.github import TriggerPolicy
from redis_benchmarks_spec.api.webhook import WebhookApp, WebhookConfig, signature_for
from redis_benchmarks_spec.datasink import alert_triage
from redis_benchmarks_spec.datasink.watch_store import Branch
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.notify.triage import record
from tests.cli import rbs
from tests.datasink_fixtures import TEST_NAME, start_datasink
from tests.site_fixtures import ALERT_ISSUE, SHAS, SLOW_FROM, fill, get, start_site, stop

SECRET = b"s3cr3t-webhook"
WHERE = Branch("redis", "redis", "unstable")
TOKEN = "a-token-of-the-lab-maintainers"
ALERTED = SHAS[SLOW_FROM]


def _issue_payload(action: str, login: str, **more: Any) -> bytes:
    repo = {"name": "redis", "full_name": "redis/redis", "owner": {"login": "redis"}}
    issue = {"number": ALERT_ISSUE, "title": f"Regression -20.00% at {ALERTED[:10]}",
             "body": f"Commit `{ALERTED}` (subject), no pull request.", "labels": []}
    return json.dumps({"action": action, "issue": issue, "repository": repo,
                       "sender": {"login": login}, **more}).encode()


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    folder = tmp_path_factory.mktemp("triage")
    sink = start_datasink(folder / "datasink")
    token = folder / "token"
    token.write_text(TOKEN + "\n")
    try:
        client = sink.client()
        fill(client)
        replies: list[Any] = []
        app = WebhookApp(WebhookConfig(secret=SECRET, names=StreamNames.with_prefix("tri"),
                                       policy=TriggerPolicy()), client,
                         on_reply=replies.append,
                         on_triage=lambda ask: record(client, ("unstable",), ask))
        proc, base = start_site(sink.url, folder / "site.log", "--triage-token-file",
                                str(token))
        try:
            yield {"app": app, "client": client, "replies": replies, "base": base,
                   "url": sink.url}
        finally:
            stop(proc)
    finally:
        sink.down()


def _post(app: WebhookApp, body: bytes, event: str, delivery: str) -> dict[str, Any]:
    environ = {"REQUEST_METHOD": "POST", "PATH_INFO": "/webhook",
               "CONTENT_LENGTH": str(len(body)), "wsgi.input": io.BytesIO(body),
               "HTTP_X_GITHUB_EVENT": event, "HTTP_X_GITHUB_DELIVERY": delivery,
               "HTTP_X_HUB_SIGNATURE_256": signature_for(SECRET, body)}
    return json.loads(b"".join(app(environ, lambda s, h: None)))


def _history(url: str) -> str:
    shown = rbs("history", "--test", TEST_NAME, "--platform", "icelake-2s", "--last", "40",
                "--datasink", url, timeout=120)
    assert shown.returncode == 0, shown.stderr
    return shown.stdout


def _site_post(base: str, fields: dict[str, str]) -> int:
    data = urllib.parse.urlencode(fields).encode()
    req = urllib.request.Request(f"{base}/ci/redis/redis/branch/unstable/triage", data=data,
                                 method="POST")
    opener = urllib.request.build_opener(_NoRedirect())
    try:
        with opener.open(req, timeout=30) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return exc.code


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args: Any) -> None:  # the 303 is the answer checked
        return None


def test_a_label_on_the_alert_issue_reaches_the_site_and_rbs_history(lab: dict) -> None:
    label = {"name": "rbs:false-alarm"}
    answer = _post(lab["app"], _issue_payload("labeled", "alice", label=label), "issues",
                   "l-1")
    assert "recorded for the alert at" in answer["reply"]
    said = alert_triage.triages(lab["client"], WHERE)[ALERTED]
    assert (said.state, said.by, said.source) == ("false-alarm", "alice", "label")
    assert lab["replies"][-1].pr.number == ALERT_ISSUE  # answered on the issue
    assert "triaged: false alarm (by alice, GitHub label)" in _history(lab["url"])
    page = get(lab["base"], "/ci/redis/redis/branch/unstable?platform=icelake-2s")[1]
    row = page.split(f'<tr id="alert-{ALERTED}">', 1)[1].split("</tr>", 1)[0]
    assert "false alarm (by alice, GitHub label)" in row
    precision = page.split('<table class="precision">', 1)[1].split("</table>", 1)[0]
    assert "<td>icelake-2s</td><td>2023-Q4</td><td>1</td><td>0</td><td>1</td><td>0</td>" \
        "\n<td>0 %</td>" in precision
    chart = get(lab["base"], f"/ci/redis/redis/test/{TEST_NAME}?platform=icelake-2s")[1]
    assert f"ALERT {ALERTED[:8]} (false-alarm)" in chart
    # the same delivery again: nothing recorded twice, nothing answered
    again = _post(lab["app"], _issue_payload("labeled", "alice", label=label), "issues", "l-1")
    assert again["status"] == "duplicate delivery"


def test_a_members_command_on_the_issue_and_a_strangers(lab: dict) -> None:
    fixer = SHAS[-1]
    member = {"body": f"/rbs triage fixed fixed-by={fixer}", "author_association": "OWNER",
              "user": {"login": "bob"}}
    answer = _post(lab["app"], _issue_payload("created", "bob", comment=member),
                   "issue_comment", "c-1")
    assert "fixed by" in answer["reply"]
    said = alert_triage.triages(lab["client"], WHERE)[ALERTED]
    assert (said.state, said.fixed_by, said.source) == ("fixed", fixer, "command")
    stranger = {**member, "author_association": "NONE", "user": {"login": "eve"}}
    refused = _post(lab["app"], _issue_payload("created", "eve", comment=stranger),
                    "issue_comment", "c-2")
    assert refused["status"] == "refused" and "only members" in refused["reply"]
    assert alert_triage.triages(lab["client"], WHERE)[ALERTED].by == "bob"
    unknown = _post(lab["app"], _issue_payload("created", "bob", comment={
        **member, "body": "/rbs triage wontfix"}), "issue_comment", "c-3")
    assert unknown["status"] == "refused" and "say one of" in unknown["reply"]


def test_the_site_triages_only_with_its_token(lab: dict) -> None:
    fields = {"sha": ALERTED, "state": "acknowledged", "by": "carol"}
    assert _site_post(lab["base"], {**fields, "token": "wrong"}) == 403
    assert _site_post(lab["base"], fields) == 403
    assert _site_post(lab["base"], {**fields, "token": TOKEN, "sha": SHAS[0]}) == 400
    assert _site_post(lab["base"], {**fields, "token": TOKEN, "state": "meh"}) == 400
    assert _site_post(lab["base"], {**fields, "token": TOKEN}) == 303
    said = alert_triage.triages(lab["client"], WHERE)[ALERTED]
    assert (said.state, said.by, said.source) == ("acknowledged", "carol", "site")
    page = get(lab["base"], "/ci/redis/redis/branch/unstable")[1]
    assert "<td>100 %</td>" in page.split('<table class="precision">', 1)[1]
