"""``rbs lab replay --range A..B``: a tracked branch's commits pushed one by one through the
running lab, each followed to its end and then to the end of its confirmations.

Per ``push`` delivery (``deliveries.range_deliveries``): post it signed, follow its build
request until every platform's event ended (``replay.follow``), then call ``settle``, which
advances the confirmer (re-runs of a candidate's two commits, then its decision and alert)
until nothing is left to confirm. ``settle`` is given by the caller (the command composes the
confirmer of ``notify``, a package on this floor). Afterwards :func:`write_outputs` copies
the issue bodies the GitHub stand-in recorded to ``alerts/<n>.md`` and writes
``summary.json``; the webhook receiver writes ``webhook.jsonl`` itself
(:class:`WebhookLog`).
"""

from __future__ import annotations

import json
import shutil
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.events.follow import RequestProgress
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake import gitsource
from redis_benchmarks_spec.lab import deliveries, replay
from redis_benchmarks_spec.lab.deliveries import Delivery
from redis_benchmarks_spec.lab.stage_cost import StageCost, stage_cost
from redis_benchmarks_spec.lab.state import LabState
from redis_benchmarks_spec.pullrequest import selection_record

MAX_WEBHOOK_BODY = 1024 * 1024
SETTLE_INTERVAL_S = 2.0


@dataclass
class CommitRun:
    """One pushed commit: how many suites ran and how long its events took."""

    sha: str
    suites_run: int = 0
    minutes: float | None = None
    progress: list[RequestProgress] = field(default_factory=list)
    cost: StageCost = field(default_factory=StageCost)  # per stage (lab/stage_cost.py)
    # per platform: the suites its agent chose for this push and why (platforms that
    # name sentinels; none: every suite ran)
    selection: dict[str, dict[str, Any]] = field(default_factory=dict)


class WebhookLog:
    """A local receiver of the alerts' webhook posts on a free port: each JSON body is
    appended as one line of ``path`` (what a Slack-compatible receiver got)."""

    def __init__(self, path: Path) -> None:
        lock = threading.Lock()
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text("")

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = min(int(self.headers.get("Content-Length") or 0), MAX_WEBHOOK_BODY)
                try:
                    body = json.loads(self.rfile.read(length))
                except ValueError:
                    self.send_response(400)
                    self.end_headers()
                    return
                with lock, path.open("a") as out:
                    out.write(json.dumps(body) + "\n")
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/webhook"
        self._thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self._thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


def _suites_run(progress: list[RequestProgress]) -> int:
    return max((pp.total for prog in progress for pp in prog.platforms.values()), default=0)


def _selections(client: redis.Redis, names: StreamNames,
                progress: list[RequestProgress]) -> dict[str, dict[str, Any]]:
    out: dict[str, dict[str, Any]] = {}
    for prog in progress:
        for event_id, platform in sorted(prog.platforms):
            found = selection_record.load(client, names, event_id, platform)
            if found is not None:
                out[platform] = {"suites": found.suites, "reason": found.reason}
    return out


def send_range(state: LabState, client: redis.Redis, items: list[Delivery],
               settle: Callable[[], bool], say: Callable[[str], None],
               timeout_s: float) -> list[CommitRun]:
    """Push each commit, follow it, then ``settle()`` until it says nothing is pending."""
    names = StreamNames(state.prefix)
    secret = (state.folder / "secrets" / "webhook-secret").read_bytes().strip()
    runs: list[CommitRun] = []
    deadline = time.monotonic() + timeout_s
    for item in items:
        sha = str(item.payload["after"])
        run = CommitRun(sha)
        runs.append(run)
        started = time.monotonic()  # a duration: never the wall clock, which may step back
        answer = deliveries.post(f"{state.api_url}/webhook", secret, item)
        status = answer.get("http_status")
        say(f"{item.name}: push -> {status} {answer.get('status', '')}")
        if status == 202:
            continue  # pushed before: its build and runs are stored already
        if status != 201:
            raise replay.ReplayError(f"{item.name}: the webhook answered {status}: {answer}")
        request = replay._request_of(client, names, str(answer["entry_id"]))
        run.progress = replay.follow(state, client, [(request, str(answer["entry_id"]))],
                                     max(1.0, deadline - time.monotonic()), say)
        run.suites_run = _suites_run(run.progress)
        run.selection = _selections(client, names, run.progress)
        for platform, chosen in sorted(run.selection.items()):
            say(f"{sha[:10]} on {platform}: suites: {chosen['reason']}")
        run.minutes = round((time.monotonic() - started) / 60, 2)
        confirming = time.monotonic()
        while settle() and time.monotonic() < deadline:
            time.sleep(SETTLE_INTERVAL_S)
        run.cost = stage_cost(client, names, run.progress)
        run.cost.confirm_s = round(time.monotonic() - confirming, 1)
        say(f"{sha[:10]}: {run.cost.line()}")
    return runs


def subject_of(git_dir: Path) -> Callable[[str], str]:
    """A commit's subject line from the source repository ("" when it cannot be read)."""
    def subject(sha: str) -> str:
        try:
            return gitsource.git(git_dir, "log", "-1", "--format=%s", "--end-of-options",
                                 sha).decode(errors="replace").strip()[:300]
        except gitsource.GitError:
            return ""
    return subject


def parent_of(git_dir: Path) -> Callable[[str], str | None]:
    """A commit's first parent in the source repository (None when unknown)."""
    def parent(sha: str) -> str | None:
        try:
            return gitsource.git(git_dir, "rev-parse", "--verify", "--end-of-options",
                                 f"{sha}^").decode().strip() or None
        except gitsource.GitError:
            return None
    return parent


def issue_bodies(state: LabState) -> list[Path]:
    """The issues the GitHub stand-in recorded for the lab's repository, in order."""
    folder = state.folder / "github" / deliveries.ORG / deliveries.REPO / "issues"
    return sorted(folder.glob("*.md"), key=lambda p: int(p.stem)) if folder.is_dir() else []


def write_outputs(state: LabState, runs: list[CommitRun], alerts: list[dict[str, Any]],
                  notes: list[dict[str, Any]], out: Path) -> dict[str, Any]:
    """``alerts/<n>.md`` (the issue bodies) and ``summary.json``; the summary."""
    folder = out / "alerts"
    folder.mkdir(parents=True, exist_ok=True)
    for n, body in enumerate(issue_bodies(state), 1):
        shutil.copyfile(body, folder / f"{n}.md")
    summary = {"commits": [{"sha": r.sha, "suites_run": r.suites_run, "minutes": r.minutes,
                            "stages": r.cost.to_dict(), "selection": r.selection}
                           for r in runs],
               "alerts": alerts, "notes": notes}
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
