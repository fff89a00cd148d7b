"""A confirmed change on a tracked branch, told once: an issue, a webhook post, a history line.

One :class:`Alert` per confirmed change, whatever the number of tests and platforms that saw
it (``datasink.watch_store.claim_alert`` lets exactly one sender through). It is sent three
ways:

- a GitHub issue (``notify.github_comments.create_issue``: the client that writes the pull
  request comments, PyGithub at a configurable API URL; the lab's stand-in writes each body
  to disk, as it does for comments);
- a POST of Slack-compatible JSON (``{"text": ..., "blocks": [...]}``, what Slack's incoming
  webhooks and Mattermost accept) to a configurable URL;
- a line in the branch's watch log, which ``rbs history`` prints beside the series.

Nothing here decides whether a change is real: ``notify.watch_confirm`` does.
"""

from __future__ import annotations

import json
import re
import time
import urllib.error
import urllib.request
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.common.metrics import words as metric_words
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch
from redis_benchmarks_spec.notify.github_comments import GitHubConfig, GithubException, create_issue
from redis_benchmarks_spec.results.binary import change_notes

_PR = re.compile(r"\(#(\d{1,7})\)\s*$")
WEBHOOK_TIMEOUT_S = 10


def pr_of(subject: str) -> int | None:
    """The pull request a squash-merged commit names at the end of its subject: ``(#12345)``."""
    m = _PR.search(subject.strip())
    return int(m[1]) if m else None


@dataclass(frozen=True)
class TestChange:
    """One test's own confirmed change on one platform: what an alert states, never a pool
    of several tests."""

    test: str
    platform: str
    metric: str
    change_pct: float
    low_pct: float | None = None
    high_pct: float | None = None

    def text(self) -> str:
        """``zrange-100 -16.50% [-17.1, -15.9] operations per second on icelake``."""
        ci = "" if self.low_pct is None or self.high_pct is None else \
            f" [{self.low_pct:+.2f}, {self.high_pct:+.2f}]"
        return (f"`{self.test}` {self.change_pct:+.2f}%{ci} {metric_words(self.metric)} "
                f"on {self.platform}")


@dataclass
class Alert:
    """One confirmed change (the fields of ``summary.json``'s ``alerts``). ``change_pct`` and
    its interval are those of the test that moved most; ``changes`` holds every test's own."""

    sha: str
    pr: int | None
    subject: str
    tests: list[str]
    platforms: list[str]
    metric: str
    change_pct: float
    low_pct: float | None
    high_pct: float | None
    movers: list[dict[str, Any]] = field(default_factory=list)  # function, file, change_pct
    before: str = ""
    placed: str = ""  # how the change was placed on the commit
    changes: list[TestChange] = field(default_factory=list)  # each test's own, largest first
    # "jemalloc 5.2.1 → 5.3.0": each dependency the two commits' binaries were built with at
    # different versions (inputs/side_binaries.py)
    dependency_changes: list[str] = field(default_factory=list)

    def summary(self) -> dict[str, Any]:
        keep = ("sha", "pr", "tests", "platforms", "metric", "change_pct", "low_pct",
                "high_pct", "movers", "changes", "dependency_changes")
        return {k: v for k, v in asdict(self).items() if k in keep}

    @property
    def direction(self) -> str:
        worse = self.change_pct * catalogued(self.metric).direction < 0
        return "regression" if worse else "improvement"

    def own_changes(self) -> list[TestChange]:
        """Every test's own change (one, the alert's, when the sender gave none)."""
        return self.changes or [TestChange(t, ", ".join(self.platforms), self.metric,
                                           self.change_pct, self.low_pct, self.high_pct)
                                for t in self.tests[:1]]


def _interval(alert: Alert) -> str:
    if alert.low_pct is None or alert.high_pct is None:
        return "interval not bounded"
    return f"95% interval [{alert.low_pct:+.2f}%, {alert.high_pct:+.2f}%]"


def title(alert: Alert) -> str:
    """The largest test's own change, named, and how many other tests moved."""
    pr = f" (#{alert.pr})" if alert.pr else ""
    first, *others = alert.own_changes()
    more = f" and {len(others)} more test(s)" if others else ""
    return (f"{alert.direction.capitalize()} {first.change_pct:+.2f}% "
            f"{metric_words(first.metric)} in {first.test}{more} at {alert.sha[:10]}{pr}")


def issue_body(alert: Alert, repo: str = "redis/redis") -> str:
    """The GitHub issue's Markdown."""
    pr = f"[#{alert.pr}](https://github.com/{repo}/pull/{alert.pr})" if alert.pr else \
        "no pull request named in the commit subject"
    lines = [f"**{title(alert)}**", "",
             f"Commit `{alert.sha}` ({alert.subject or 'subject unknown'}), {pr}.",
             f"Previous benchmarked commit `{alert.before[:10]}`; {alert.placed}.", "",
             f"- Size, each test's own (`{alert.metric}`, 95% interval):",
             *(f"  - {c.text()}" for c in alert.own_changes()),
             f"- Tests ({len(alert.tests)}): {', '.join(f'`{t}`' for t in alert.tests)}",
             f"- Platforms: {', '.join(alert.platforms)}",
             *(f"- {note}" for note in change_notes(alert.dependency_changes)), ""]
    if alert.movers:
        lines += ["Functions whose self instructions per operation moved most:", "",
                  "| function | file | change (share of the whole count) |",
                  "|---|---|---|"]
        lines += [f"| `{m['function']}` | {m.get('file') or '?'} | {m['change_pct']:+.3f}% |"
                  for m in alert.movers]
    else:
        lines.append("No function profile of both commits was found for the movers.")
    lines += ["", ("Found on arrival by the lab's change-point watch and confirmed by "
                   "re-runs of both commits (docs/watch.md).")]
    return "\n".join(lines) + "\n"


def slack_payload(alert: Alert) -> dict[str, Any]:
    """Slack-compatible JSON: ``text`` for any receiver, one section block for Slack."""
    changes = alert.own_changes()
    text = (f"{title(alert)}: {'; '.join(c.text().replace('`', '') for c in changes[:5])}"
            f"{' and more' if len(changes) > 5 else ''}"
            + "".join(f"; {note}" for note in change_notes(alert.dependency_changes)))
    movers = ", ".join(f"{m['function']} {m['change_pct']:+.2f}%" for m in alert.movers[:3])
    return {"text": text, "blocks": [{"type": "section", "text": {
        "type": "mrkdwn", "text": text + (f"\nMovers: {movers}" if movers else "")}}],
        "rbs": alert.summary()}


def post_webhook(url: str, alert: Alert) -> int:
    """POST the alert's JSON to ``url``; the HTTP status (raises ``OSError`` when the
    receiver cannot be reached)."""
    body = json.dumps(slack_payload(alert)).encode()
    request = urllib.request.Request(url, data=body, method="POST",
                                     headers={"Content-Type": "application/json"})
    try:
        with urllib.request.urlopen(request, timeout=WEBHOOK_TIMEOUT_S) as resp:
            return int(resp.status)
    except urllib.error.HTTPError as exc:
        return int(exc.code)


@dataclass(frozen=True)
class AlertTargets:
    """Where alerts go: a GitHub repository's issues, a webhook URL (either may be off)."""

    github: GitHubConfig | None = None
    webhook_url: str | None = None


def send(client: redis.Redis, where: Branch, alert: Alert, targets: AlertTargets) -> list[str]:
    """Tell ``alert`` once (the first caller for its commit); what failed, one line each."""
    if not watch_store.claim_alert(client, where, alert.sha):
        return []
    problems = []
    # when it was told (the precision's quarter) and, below, the issue that tells it (a
    # label or a /rbs command on that issue triages the alert: datasink/alert_triage.py)
    summary = {**alert.summary(), "at_ms": int(time.time() * 1000)}
    watch_store.record_alert(client, where, alert.sha, summary)
    watch_store.add_log(client, where, "alert", alert.sha,
                        f"{title(alert)}: {len(alert.tests)} test(s) on "
                        f"{', '.join(alert.platforms)}, {_interval(alert)}"
                        + "".join(f"; {n}" for n in change_notes(alert.dependency_changes)))
    if targets.github is not None:
        try:
            issue = create_issue(targets.github, (where.org, where.repo), title(alert),
                                 issue_body(alert, f"{where.org}/{where.repo}"))
            watch_store.record_alert(client, where, alert.sha,
                                     {**summary, "issue": issue.number})
        except (GithubException, OSError) as exc:  # API refusal, or unreachable
            problems.append(f"issue not created: {type(exc).__name__}: {str(exc)[:200]}")
    if targets.webhook_url:
        try:
            status = post_webhook(targets.webhook_url, alert)
            if status >= 300:
                problems.append(f"webhook {targets.webhook_url} answered {status}")
        except OSError as exc:
            problems.append(f"webhook {targets.webhook_url} unreachable: {exc}")
    return problems
