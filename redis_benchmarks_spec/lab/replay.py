"""``rbs lab replay``: real pull requests through the running lab, as GitHub would send them.

Each delivery of a source (:mod:`.deliveries`) is posted to the lab's webhook in order; the
build requests the receiver enqueued are followed (``events.follow``) until every build and
every platform's event has ended, named. Then, per pull request, the bodies the GitHub
stand-in recorded are copied out (``comments/<name>.md`` the final body, ``<name>.N.md`` every
body in the order sent), and ``summary.json`` gathers what each platform decided
(:mod:`.outcome`). Nothing here starts or stops a service.
"""

from __future__ import annotations

import json
import shutil
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.events.follow import Follower, RequestProgress, wait
from redis_benchmarks_spec.events.messages import BuildRequest
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.lab import deliveries, outcome
from redis_benchmarks_spec.lab.deliveries import Delivery
from redis_benchmarks_spec.lab.state import LabState

FINAL_WAIT_S = 120.0  # the comment's last edit follows the last event's end


class ReplayError(RuntimeError):
    """The replay could not go on (a delivery refused, the broker gone); says which."""


@dataclass
class Tracked:
    """One pull request of the replay: its deliveries' requests and times."""

    pr: deliveries.PullRequest
    requests: list[tuple[BuildRequest, str]] = field(default_factory=list)
    labelled_at: float = 0.0
    head_request: BuildRequest | None = None


def _request_of(client: redis.Redis, names: StreamNames, entry_id: str) -> BuildRequest:
    rows: Any = client.xrange(names.build_requests, min=entry_id, max=entry_id)
    if not rows:
        raise ReplayError(f"entry {entry_id} is not in {names.build_requests}")
    return BuildRequest.decode(rows[0][1], entry_id)


def _enqueued_before(client: redis.Redis, names: StreamNames, digest: str) -> str | None:
    """The entry id of the request the webhook enqueued for the payload ``digest``."""
    request_id = client.get(names.webhook_payload_key(digest))
    if request_id is None:
        return None
    rows: Any = client.xrange(names.build_requests)
    for entry_id, fields in rows:
        if BuildRequest.decode(fields, entry_id.decode()).id == request_id.decode():
            return str(entry_id.decode())
    return None


def send(state: LabState, client: redis.Redis, items: list[Delivery],
         say: Callable[[str], None], timeout_s: float) -> dict[str, Tracked]:
    """Post every delivery in order; what each pull request's deliveries enqueued. A push
    (the base landing on the branch) is followed to its end before the next delivery: the
    lab benchmarks and profiles a base when it lands, not while its PR waits."""
    names = StreamNames(state.prefix)
    secret = (state.folder / "secrets" / "webhook-secret").read_bytes().strip()
    tracked: dict[str, Tracked] = {}
    for item in items:
        assert item.pr is not None
        entry = tracked.setdefault(item.name, Tracked(item.pr))
        if item.event == "pull_request":
            item.payload["pull_request"]["updated_at"] = time.strftime(
                "%Y-%m-%dT%H:%M:%SZ", time.gmtime())  # a new label is a new delivery
            entry.labelled_at = time.time()
        answer = deliveries.post(f"{state.api_url}/webhook", secret, item)
        status = answer.get("http_status")
        if status == 202 and item.event == "pull_request" and \
                answer.get("status") == "duplicate delivery":
            # a label is a new payload: only our redelivery repeats it, after a receiver
            # that enqueued it died before answering
            entry_id = _enqueued_before(client, names, str(answer.get("payload_sha256")))
            if entry_id is not None:
                answer, status = {**answer, "entry_id": entry_id}, 201
        say(f"{item.name}: {item.event} -> {status} {answer.get('status', answer)}")
        if status == 202 and item.event == "push":
            continue  # this base was pushed before: its build is stored already
        if status != 201:
            raise ReplayError(f"{item.name}: the webhook answered {status} to the "
                              f"{item.event} delivery: {answer}")
        request = (_request_of(client, names, str(answer["entry_id"])), str(answer["entry_id"]))
        entry.requests.append(request)
        if item.event == "pull_request":
            entry.head_request = request[0]
        else:
            follow(state, client, [request], timeout_s, say)
    return tracked


def follow(state: LabState, client: redis.Redis, requests: list[tuple[BuildRequest, str]],
           timeout_s: float, say: Callable[[str], None]) -> list[RequestProgress]:
    """Wait until every request's builds and events ended (or ``timeout_s``)."""
    follower = Follower(client, StreamNames(state.prefix), requests)
    seen: dict[str, str] = {}

    def progress(items: list[RequestProgress]) -> None:
        for prog in items:
            for (event_id, platform), pp in prog.platforms.items():
                line = f"{pp.finished}/{pp.total} {pp.state or 'running'}"
                if seen.get(f"{event_id}@{platform}") != line:
                    seen[f"{event_id}@{platform}"] = line
                    say(f"{prog.request.sha[:10]} on {platform}: {line}")
    wait(follower, timeout_s, interval_s=2.0, on_update=progress)
    return list(follower.progress.values())


def ended_done(progress: list[RequestProgress], platforms: list[str]) -> list[str]:
    """Why the replay did not end well: one line per build or platform that did not end
    ``completed`` (empty: every event ended done)."""
    bad = []
    for prog in progress:
        sha = prog.request.sha[:10]
        if prog.dead_letter is not None:
            bad.append(f"{sha}: dead-lettered by the builder: {prog.dead_letter}")
        bad += [f"{sha} {f.build_variant}: build failed: {f.reason}" for f in prog.failures]
        if not prog.events and not prog.failures and prog.dead_letter is None:
            bad.append(f"{sha}: no build event (still building?)")
        for event_id in prog.events:
            for platform in platforms:
                pp = prog.platforms.get((event_id, platform))
                if pp is None or not pp.done:
                    bad.append(f"{sha} on {platform}: not finished")
                elif pp.state != "completed" or pp.counts["failed"]:
                    bad.append(f"{sha} on {platform}: {pp.state} {pp.reason}".strip())
    return bad


def _written_at(body: Path) -> float:
    """When the stand-in wrote a body (its ``.json`` beside), 0 when it does not say."""
    try:
        return float(json.loads(body.with_suffix(".json").read_text())["at"])
    except (OSError, ValueError, KeyError, TypeError):
        return 0.0


def _bodies(state: LabState, number: int, since: float) -> list[Path]:
    """The PR's bodies written since ``since`` (the label of this replay): a lab that
    replayed the same PR before holds older bodies, whose times would make a negative
    "label to final comment"."""
    folder = state.folder / "github" / deliveries.ORG / deliveries.REPO / str(number)
    if not folder.is_dir():
        return []
    found = sorted(folder.glob("*.md"), key=lambda p: int(p.stem))
    return [p for p in found if _written_at(p) >= since]


# what a body says while some platform has not finished (notify/pr_body.py)
NOT_FINAL = (":hourglass: Build started", ":hourglass: Still running", ":hourglass: Running.")


def _final(path: Path) -> bool:
    text = path.read_text()
    return not any(mark in text for mark in NOT_FINAL)


def copy_comments(state: LabState, t: Tracked, out: Path) -> tuple[str, float | None]:
    """The PR's bodies into ``out/comments``; (final body, seconds label -> final body)."""
    wait_until = time.monotonic() + FINAL_WAIT_S
    while time.monotonic() < wait_until:
        found = _bodies(state, t.pr.number, t.labelled_at)
        if found and _final(found[-1]):
            break
        time.sleep(1.0)
    found = _bodies(state, t.pr.number, t.labelled_at)
    folder = out / "comments"
    folder.mkdir(parents=True, exist_ok=True)
    for i, path in enumerate(found, 1):
        shutil.copyfile(path, folder / f"{t.pr.name}.{i}.md")
    if not found:
        return "", None
    shutil.copyfile(found[-1], folder / f"{t.pr.name}.md")
    seconds = _written_at(found[-1]) - t.labelled_at if _final(found[-1]) else None
    return found[-1].read_text(), seconds


def summarize(state: LabState, client: redis.Redis, tracked: dict[str, Tracked],
              progress: list[RequestProgress], out: Path) -> dict[str, Any]:
    """``summary.json``'s content (see the issue's interface), written to ``out``."""
    events = {p.request.id: list(p.events) for p in progress}
    prs = []
    for t in tracked.values():
        body, seconds = copy_comments(state, t, out)
        head_events = events.get(t.head_request.id, []) if t.head_request else []
        entry = outcome.pr_outcome(client, StreamNames(state.prefix), head_events,
                                   list(state.platforms))
        prs.append({"name": t.pr.name, "base": t.pr.base, "head": t.pr.head,
                    "pr": t.pr.number, **entry,
                    "minutes": None if seconds is None else round(seconds / 60, 2),
                    "comment_final": bool(body) and not any(m in body for m in NOT_FINAL)})
    summary = {"prs": prs}
    out.mkdir(parents=True, exist_ok=True)
    (out / "summary.json").write_text(json.dumps(summary, indent=2))
    return summary
