"""A confirmed change across skipped commits is bisected and the alert names the commit
(notify/watch_confirm.py, bisection/watch_range.py) on a real redis-stack datasink, the
lab's GitHub stand-in and a local webhook receiver; the range comes from the real Redis
history of ../shared/vendor. Builds and runs of the probes are stood in for (the prober):
tests/test_bisect_remote.py runs the same prober through a real builder and agent."""

from __future__ import annotations

import re
import subprocess
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
import redis

from benchmarks import redis_history as history_bundle
from redis_benchmarks_spec.analysis.verdict import IMPROVEMENT, NO_CHANGE
from redis_benchmarks_spec.bisection.gitrange import first_parent_range
from redis_benchmarks_spec.bisection.search import BisectError, BisectOutcome, Budget, Measurement
from redis_benchmarks_spec.bisection.watch_range import RangeBisector, RangeSetup
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import SeriesStep
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.trigger import (
    RedisSourceStore,
    RequestOptions,
    Selection,
    trigger,
)
from redis_benchmarks_spec.lab.watch_replay import subject_of
from redis_benchmarks_spec.notify.watch_confirm import ConfirmContext, first_round, step
from redis_benchmarks_spec.notify.watch_service import Confirmer, ServiceConfig
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    client_fixture,
    datasink_fixture,
)
from tests.test_watch_agent import COUNT, WHERE, sha
from tests.test_watch_alert import (  # noqa: F401  (the fixture registers by import)
    LabReruns,
    history,
    result,
    targets_fixture,
)

FOUND = "c" * 40


@dataclass
class StandInBisector:
    """Records what it was asked to place; answers ``first_bad``."""

    first_bad: str | None
    reason: str = "found"
    asked: list[tuple[str, str, SeriesStep]] = field(default_factory=list)

    def place(self, before: str, after: str, series: SeriesStep) -> BisectOutcome:
        self.asked.append((before, after, series))
        return BisectOutcome(["b" * 40, FOUND, after], first_bad=self.first_bad,
                             reason=self.reason)


def skipped_context(client: redis.Redis, reruns: LabReruns, targets: Any,
                    bisector: Any) -> ConfirmContext:
    """sha(10) and sha(11) are benchmarked points, but two commits lie between them."""
    subjects = {FOUND: "Cache the key's hash in lookupKey (#12999)",
                sha(11): "Merge three pushes (#11111)"}
    return ConfirmContext(client, WHERE, targets, reruns, lambda s: subjects.get(s, ""),
                          lambda s: FOUND if s == sha(11) else None, bisector)


def test_a_change_across_skipped_commits_is_bisected_and_named(
        client: redis.Redis, tmp_path: Path, targets: Any) -> None:
    where_to, receiver, issues = targets
    history(client, tmp_path / "p", 10, ["lab-a", "lab-b"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    bisector = StandInBisector(FOUND)
    decided = step(skipped_context(client, reruns, where_to, bisector))
    # re-runs asked, confirmed, then (not told yet) bisected, then told once
    assert [d.candidate.state for d in decided] == ["confirming", "bisecting", "confirmed"]
    assert [c for c, _t, _p in reruns.asked] == [sha(10), sha(11)] * first_round([COUNT])
    assert len(bisector.asked) == 1
    before, after, series = bisector.asked[0]
    assert (before, after, series.test, series.metric) == (sha(10), sha(11), "t-get", COUNT)
    alert = decided[-1].alert
    assert alert is not None and decided[-1].problems == ()
    assert (alert.sha, alert.pr, alert.before) == (FOUND, 12999, sha(10))
    assert 3.5 < alert.change_pct < 4.5 and alert.movers[0]["function"] == "lookupKey"
    body = (issues / "1.md").read_text()
    assert FOUND in body and "#12999" in body and "bisected" in body and "#11111" not in body
    assert [p["rbs"]["sha"] for p in receiver.posts] == [FOUND]
    log = watch_store.log_lines(client, WHERE)
    assert [(x["kind"], x["sha"]) for x in log] == [("alert", FOUND)]
    saved = watch_store.get_candidate(client, WHERE, sha(11))
    assert (saved.state, saved.placed_on) == ("confirmed", FOUND)
    assert step(skipped_context(client, reruns, where_to, bisector)) == []
    assert len(bisector.asked) == 1 and len(receiver.posts) == 1


def test_a_bisection_that_places_nothing_alerts_the_range_with_its_reason(
        client: redis.Redis, tmp_path: Path, targets: Any) -> None:
    where_to, receiver, issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    bisector = StandInBisector(None, reason="budget spent")
    decided = step(skipped_context(client, reruns, where_to, bisector))
    alert = decided[-1].alert
    assert alert is not None and (alert.sha, alert.pr) == (sha(11), 11111)
    body = (issues / "1.md").read_text()
    assert "did not place it: budget spent" in body and "3 commits" in body
    assert watch_store.get_candidate(client, WHERE, sha(11)).placed_on == ""
    assert len(receiver.posts) == 1


def test_a_range_left_bisecting_without_a_bisector_is_told_as_the_range(
        client: redis.Redis, tmp_path: Path, targets: Any) -> None:
    """A confirmer restarted without --source finds a candidate left bisecting: the
    change is told (as the range), never dropped."""
    where_to, receiver, _issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    ctx = skipped_context(client, reruns, where_to, StandInBisector(FOUND))
    ctx.bisector = None
    step(ctx)  # re-runs asked and decided: told as the range at once (no bisector)
    assert [p["rbs"]["sha"] for p in receiver.posts] == [sha(11)]
    c = watch_store.get_candidate(client, WHERE, sha(11))
    c.state = "bisecting"  # as a confirmer with a bisector left it
    watch_store.save_candidate(client, WHERE, c)
    client.delete(WHERE.key("alerted"))
    (told,) = step(ctx)
    assert told.alert is not None and "cannot bisect" in told.alert.placed
    assert len(receiver.posts) == 2


@dataclass
class HeldBisector(StandInBisector):
    """A bisection that lasts until ``release`` is set (builds and runs take hours)."""

    release: threading.Event = field(default_factory=threading.Event)

    def place(self, before: str, after: str, series: SeriesStep) -> BisectOutcome:
        self.asked.append((before, after, series))
        assert self.release.wait(60), "the test never let the bisection end"
        return BisectOutcome(["b" * 40, FOUND, after], first_bad=self.first_bad)


def _until(check: Any) -> bool:
    deadline = time.monotonic() + 30
    while not check() and time.monotonic() < deadline:
        time.sleep(0.01)
    return bool(check())


def test_the_service_bisects_apart_and_decides_other_candidates_meanwhile(
        client: redis.Redis, tmp_path: Path, targets: Any) -> None:
    where_to, receiver, issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0,
                                sha(30): 10_000.0, sha(31): 10_000.0}, tmp_path / "p")
    bisector = HeldBisector(FOUND)
    ctx = skipped_context(client, reruns, where_to, bisector)
    ctx.owner = "c1"
    service = Confirmer([ctx], ServiceConfig("c1", interval_s=0.01))
    assert [d.candidate.state for d in service.once()] == ["confirming", "bisecting"]
    assert _until(lambda: bisector.asked) and service.bisecting()
    # while it runs, a new candidate is asked for and decided, and nothing is bisected twice
    watch_store.add_candidate(client, WHERE, sha(30), sha(31),
                              SeriesStep("t-get", "lab-a", BUILD_VARIANT, COUNT, 4.0))
    decided = service.once()
    assert [(d.candidate.after, d.candidate.state) for d in decided] == [
        (sha(31), "confirming"), (sha(31), "rejected")]
    assert service.once() == [] and len(bisector.asked) == 1 and receiver.posts == []
    assert watch_store.get_candidate(client, WHERE, sha(11)).state == "bisecting"
    # the bisection ends: its alert is told at the next step, once, and the lease is free
    bisector.release.set()
    assert _until(lambda: not service.bisecting())
    (told,) = service.once()
    assert told.alert is not None and (told.alert.sha, told.alert.pr) == (FOUND, 12999)
    assert [p["rbs"]["sha"] for p in receiver.posts] == [FOUND]
    assert "bisected" in (issues / "1.md").read_text()
    assert watch_store.take_lease(client, WHERE, sha(11), "c2", 60)
    assert service.once() == [] and len(bisector.asked) == 1


def test_parent_and_child_are_never_bisected(client: redis.Redis, tmp_path: Path,
                                             targets: Any) -> None:
    where_to, _receiver, _issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    bisector = StandInBisector(FOUND)
    ctx = skipped_context(client, reruns, where_to, bisector)
    ctx.parent_of = lambda s: f"{int(s, 16) - 1:040x}"
    decided = step(ctx)
    assert bisector.asked == [] and decided[-1].alert is not None
    assert decided[-1].alert.sha == sha(11)


class CarriedFrom:
    """Stands in for builds and runs: a commit at or after ``first`` carries a change of
    ``change`` % against good, the others none (the order is the range's)."""

    metric = COUNT

    def __init__(self, commits: list[str], first: str, change: float) -> None:
        self.commits, self.first, self.change = commits, first, change
        self.measured: list[str] = []

    def built(self) -> int:
        return len(set(self.measured))

    def measure(self, sha: str, pairs: int, deadline: float | None) -> Measurement:
        self.measured.append(sha)
        if self.commits.index(sha) >= self.commits.index(self.first):
            return Measurement(self.change, IMPROVEMENT, pairs)
        return Measurement(0.05, NO_CHANGE, pairs)


class Stored:
    """Re-runs whose points are stored already (the test pushed them)."""

    def request(self, commit: str, tests: list[str], platforms: list[str]) -> str:
        return f"{commit}@0-1"

    def ended(self, refs: list[str]) -> bool:
        return True


@pytest.fixture(name="redis_repo")
def redis_repo_fixture() -> Path:
    return history_bundle.bare_repo()


def full(repo: Path, short: str) -> str:
    return history_bundle.full_sha(repo, short)


def test_the_range_is_the_first_parent_line_of_real_history(redis_repo: Path) -> None:
    good, commits = first_parent_range(redis_repo, "c8181314", "61c85a2b")
    assert good == full(redis_repo, "c8181314")
    assert [c[:8] for c in commits] == ["72e90695", "b0250b45", "68e87eb0", "79fe450e",
                                        "155acef5", "61c85a2b"]
    with pytest.raises(BisectError, match="first-parent line"):
        first_parent_range(redis_repo, "61c85a2b", "c8181314")


def test_a_real_range_is_bisected_to_its_pull_request(
        client: redis.Redis, redis_repo: Path, tmp_path: Path, targets: Any) -> None:
    """c8181314..61c85a2b pushed at once: GEODIST's #11552 is found among the six commits
    and named in the alert with its real subject."""
    where_to, receiver, issues = targets
    before, after = full(redis_repo, "c8181314"), full(redis_repo, "61c85a2b")
    folder = tmp_path / "p"
    # the raising run of each commit, then its re-runs (the engine's min_pairs a side)
    runs = 1 + first_round([COUNT])
    for n, (commit, value) in enumerate([(before, 10_000.0)] * runs +
                                        [(after, 7_770.0)] * runs):
        push_results(client, [result(n, value, "lab-b", "geodist", folder, commit)])
    watch_store.add_candidate(client, WHERE, before, after,
                              SeriesStep("geodist", "lab-b", BUILD_VARIANT, COUNT, -22.3))
    _, commits = first_parent_range(redis_repo, before, after)
    prober = CarriedFrom(commits, after, -22.3)
    bisector = RangeBisector(RangeSetup(client, StreamNames.with_prefix("w"), redis_repo,
                                        budget=Budget(max_builds=12, pairs=2)),
                             probers=lambda series, good: [prober])
    ctx = ConfirmContext(client, WHERE, where_to, Stored(), subject_of(redis_repo),
                         lambda s: None, bisector)
    decided = step(ctx)
    alert = decided[-1].alert
    assert alert is not None and alert.sha == after and alert.pr == 11552
    assert alert.subject.startswith("Speedup GEODIST")
    assert -23 < alert.change_pct < -21
    assert prober.measured[0] == after and len(prober.measured) == 4  # bad end + 3 midpoints
    assert "bisected: the first of the 6 commits" in (issues / "1.md").read_text()
    assert receiver.posts[0]["rbs"]["pr"] == 11552


def test_bisect_probes_name_no_branch(redis_server: Any, redis_repo: Path) -> None:
    """A probe is not a point of the branch it places a change of: its request is
    detached (a plain trigger of the same commit names the checked-out branch)."""
    broker = redis_server.client()
    names = StreamNames.with_prefix("wb")
    head = subprocess.run(["git", "-C", str(redis_repo), "symbolic-ref", "--short", "HEAD"],
                          capture_output=True, text=True, timeout=30, check=True).stdout.strip()
    options = RequestOptions(org="redis", repo_name="redis")
    plain = trigger(broker, names, str(redis_repo), Selection(commit="61c85a2b"), options,
                    RedisSourceStore(60))
    probe = trigger(broker, names, str(redis_repo), Selection(commit="61c85a2b", detached=True),
                    options, RedisSourceStore(60))
    assert re.fullmatch(r"[A-Za-z0-9._-]+", head)
    assert plain[0].request.branch == head and probe[0].request.branch is None

