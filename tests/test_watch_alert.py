"""Confirmation and alerts (notify/watch_confirm.py, notify/watch_alert.py) on a real
redis-stack datasink, the lab's GitHub stand-in and a local webhook receiver."""

from __future__ import annotations

import dataclasses
import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig
from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.lab.github_local import CommentStore, handler_for
from redis_benchmarks_spec.notify.github_comments import GitHubConfig
from redis_benchmarks_spec.notify.watch_alert import AlertTargets, pr_of
from redis_benchmarks_spec.notify.watch_confirm import ConfirmContext, first_round, step
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.test_watch_agent import COUNT, WHERE, sha

TOKEN = "t0ken-for-the-stand-in"


class Receiver:
    """A local HTTP receiver of webhook posts on a free port; keeps each JSON body."""

    def __init__(self) -> None:
        self.posts: list[dict[str, Any]] = []
        posts = self.posts

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                posts.append(json.loads(self.rfile.read(length)))
                self.send_response(200)
                self.end_headers()

            def log_message(self, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", free_port()), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_port}/hook"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(name="targets")
def targets_fixture(tmp_path: Path) -> Iterator[tuple[AlertTargets, Receiver, Path]]:
    receiver = Receiver()
    port = free_port()
    store = CommentStore(tmp_path / "github", f"http://127.0.0.1:{port}")
    github = ThreadingHTTPServer(("127.0.0.1", port), handler_for(store, TOKEN))
    threading.Thread(target=github.serve_forever, daemon=True).start()
    yield (AlertTargets(GitHubConfig(f"http://127.0.0.1:{port}", TOKEN), receiver.url),
           receiver, tmp_path / "github" / "redis" / "redis" / "issues")
    github.shutdown()
    receiver.server.shutdown()


class LabReruns:
    """Stands in for builder and agents: a re-run pushes a point of the commit at the level
    ``levels`` says (the datasink is real; only the build and the run are skipped)."""

    def __init__(self, client: redis.Redis, levels: dict[str, float], profiles: Path) -> None:
        self.client, self.levels, self.profiles, self.asked = client, levels, profiles, []

    def request(self, commit: str, tests: list[str], platforms: list[str]) -> str:
        # each re-run is a run of its own (its number, so its time, after every other)
        again = sum(1 for c, _t, _p in self.asked if c == commit)
        self.asked.append((commit, tests, platforms))
        n = int(commit, 16) - 1
        for k, platform in enumerate(platforms):
            for test in tests:
                push_results(self.client, [result(100 + 1000 * again + 10 * n + k,
                                                  self.levels[commit], platform, test,
                                                  self.profiles, commit)])
        return f"{commit}@0-1"

    def ended(self, refs: list[str]) -> bool:
        return True


def profile(folder: Path, name: str, hot: float) -> str:
    path = folder / f"{name}.json"
    path.write_text(json.dumps([{"function": "lookupKey", "file": "db.c", "self_per_op": hot},
                                {"function": "call", "file": "server.c", "self_per_op": 900}]))
    return str(path)


def result(n: int, value: float, platform: str, test: str, folder: Path,
           commit: str | None = None) -> RunResult:
    r = make_result(n, test_name=test, platform=platform, hash=commit or sha(n + 1))
    folder.mkdir(parents=True, exist_ok=True)
    path = profile(folder, f"{test}-{platform}-{n}", value - 10_000)
    return dataclasses.replace(r, run_id=f"{r.run_id}:{platform}", metrics={COUNT: value},
                               paths={"instructions_functions": path})


def history(client: redis.Redis, folder: Path, step_at: int, platforms: list[str]) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n in range(step_at + 2):
        level = 10_400.0 if n >= step_at else 10_000.0
        for platform in platforms:
            r = result(n, level, platform, "t-get", folder)
            push_results(client, [r])
            watch.arrived([r])


def context(client: redis.Redis, reruns: LabReruns, targets: AlertTargets) -> ConfirmContext:
    subjects = {sha(11): "Speed up lookupKey (#12345)"}
    return ConfirmContext(client, WHERE, targets, reruns, lambda s: subjects.get(s, ""),
                          lambda s: f"{int(s, 16) - 1:040x}")


def test_a_confirmed_change_is_told_once_three_ways(client: redis.Redis, tmp_path: Path,
                                                    targets: Any) -> None:
    where_to, receiver, issues = targets
    history(client, tmp_path / "p", 10, ["lab-a", "lab-b"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    decided = step(context(client, reruns, where_to))
    # the engine decides a count from its catalogue's min_pairs re-runs a side
    assert [c for c, _t, _p in reruns.asked] == [sha(10), sha(11)] * first_round([COUNT])
    alerts = [d.alert for d in decided if d.alert]
    assert len(alerts) == 1 and decided[-1].problems == ()
    alert = alerts[0]
    assert (alert.sha, alert.pr, alert.platforms, alert.tests) == (
        sha(11), 12345, ["lab-a", "lab-b"], ["t-get"])
    assert 3.5 < alert.change_pct < 4.5
    assert alert.movers[0]["function"] == "lookupKey" and alert.movers[0]["change_pct"] > 3
    body = (issues / "1.md").read_text()
    assert sha(11) in body and "#12345" in body and "lookupKey" in body and "+4.00%" in body
    assert len(receiver.posts) == 1 and receiver.posts[0]["rbs"]["sha"] == sha(11)
    assert "Regression" in receiver.posts[0]["text"]
    assert [x["kind"] for x in watch_store.log_lines(client, WHERE)] == ["alert"]
    assert step(context(client, reruns, where_to)) == []  # nothing left to do, nothing resent
    assert len(receiver.posts) == 1 and not (issues / "2.md").exists()


def test_a_step_the_reruns_do_not_show_is_never_told(client: redis.Redis, tmp_path: Path,
                                                     targets: Any) -> None:
    where_to, receiver, issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    # the first run of the new commit was the odd one: its re-runs sit at the old level
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_000.0}, tmp_path / "p")
    decided = step(context(client, reruns, where_to))
    assert [d.candidate.state for d in decided] == ["confirming", "rejected"]
    assert receiver.posts == [] and not issues.exists()
    assert watch_store.log_lines(client, WHERE) == []


def test_the_pull_request_comes_from_the_subject() -> None:
    assert pr_of("Optimize ZRANGE (#11552)") == 11552
    assert pr_of("Merge branch 'x' into unstable") is None
    assert pr_of("Fix (#12) in the middle of text") is None


def test_rbs_history_shows_the_alert_and_the_host_boundary(
        client: redis.Redis, datasink: Any, tmp_path: Path, targets: Any,
        capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    where_to, _receiver, _issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    step(context(client, reruns, where_to))
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=sha(13)))
    for n in (12, 13):
        r = result(n, 10_400.0, "lab-a", "t-get", tmp_path / "p")
        push_results(client, [r])
        watch.arrived([r])
    monkeypatch.setenv("COLUMNS", "250")
    assert rbs_in_process(["history", "--test", "t-get", "--metric", COUNT, "--platform", "lab-a",
                           "--datasink", datasink.url, "--last", "30"]) == 0
    out = capsys.readouterr().out
    # rows in time order: commits 1..14 (points 0..13), then the re-runs of both commits
    rows = [line for line in out.splitlines() if line.count("│") > 5]
    assert len(rows) == 14 + 2 * first_round([COUNT])
    marked = {i: row for i, row in enumerate(rows) if "ALERT" in row or "HOST" in row}
    assert sorted(marked) == [10, 12]  # commits 11 (the step) and 13 (the new host)
    assert "ALERT Regression +4.00% instructions per operation" in marked[10]
    assert "HOST CHANGED" in marked[12]
