"""A host change does not blind a platform (agent/watch.py, notify/watch_remeasure.py,
analysis/arrival.py): the last commit the old host measured is measured again on the new
host through the confirmer's re-run path, the new host's first points are judged against
that re-measure, and one host change is one note per platform. On a real redis-stack
datasink, the lab's GitHub stand-in and a local webhook receiver; builder and agents are
stood in for by a re-run that pushes through the new host's watch."""

from __future__ import annotations

import dataclasses
import itertools
import random
from typing import Any

import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig, WatchingPusher
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.notify.watch_confirm import ConfirmContext, first_round, step
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.telemetry.fingerprint import FIELDS
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.test_watch_agent import COUNT, WHERE, sha
from tests.test_watch_alert import targets_fixture  # noqa: F401  (fixture by import)

OLD_HOST = {**dict.fromkeys(FIELDS, "x"), "cpu_model": "Xeon 8360Y", "governor": "performance"}
NEW_HOST = {**OLD_HOST, "governor": "powersave"}
HOST_LEVEL = 1.10  # the new host counts 10 % more for every commit (no change of the code)
_later = itertools.count(500)  # re-runs start after every point of the history


#: t-set is built by another compiler: its points' fingerprints differ from t-get's on
#: either host, and the one host change is still one note
VARIANTS = {"t-set": "clang:16.0.6-amd64-debian-bookworm-default"}


def point(n: int, value: float, test: str, commit: str | None = None) -> RunResult:
    r = make_result(n, test_name=test, platform="lab-a", hash=commit or sha(n + 1),
                    build_variant=VARIANTS.get(test, BUILD_VARIANT))
    return dataclasses.replace(r, run_id=f"{r.run_id}:lab-a",
                               metrics={COUNT: value, "ALL_STATS.Totals.Ops/sec": 1e5})


class NewHost:
    """The platform's agent on its new host: its watch, and the re-runs the confirmer asks
    (each pushed through that watch, as the agent pushes them), at ``level(commit)``."""

    def __init__(self, client: redis.Redis, level: Any) -> None:
        self.client, self.level, self.asked = client, level, []
        self.watch = BranchWatch(client, WatchConfig(host_facts=NEW_HOST, change_at=""))
        self.rng = random.Random(3)

    def push(self, result: RunResult) -> None:
        WatchingPusher(lambda rs: push_results(self.client, rs), self.watch)([result])

    def request(self, commit: str, tests: list[str], platforms: list[str]) -> str:
        self.asked.append((commit, tests, platforms))
        for test in tests:
            value = self.level(commit, test) * (1 + self.rng.gauss(0, 0.0005))
            self.push(point(next(_later), value, test, commit))
        return f"{commit}@0-1"

    def ended(self, refs: list[str]) -> bool:
        return True


def old_host(client: redis.Redis, tests: dict[str, float], last: int) -> None:
    """Commits 1..``last`` of each test on the old host, flat counts."""
    watch = BranchWatch(client, WatchConfig(host_facts=OLD_HOST, change_at=""))
    rng = random.Random(5)
    for n in range(last):
        for test, base in tests.items():
            result = point(n, base * (1 + rng.gauss(0, 0.0005)), test)
            WatchingPusher(lambda rs: push_results(client, rs), watch)([result])


def context(client: redis.Redis, host: NewHost, targets: Any) -> ConfirmContext:
    return ConfirmContext(client, WHERE, targets, host,
                          lambda s: "Cheaper lookups (#13001)" if s == sha(11) else "",
                          lambda s: f"{int(s, 16) - 1:040x}")


def test_a_host_change_without_a_code_change_is_one_note_and_no_alert(
        client: redis.Redis, targets: Any) -> None:
    where_to, receiver, issues = targets
    bases = {"t-get": 1e6, "t-set": 2e6}
    old_host(client, bases, 10)  # commits 1..10
    host = NewHost(client, lambda commit, test: bases[test] * HOST_LEVEL)
    # t-get runs first on the new host at commit 11; t-set's suite group only at commit 12
    host.push(point(10, bases["t-get"] * HOST_LEVEL, "t-get"))
    step(context(client, host, where_to))
    for n in (11, 12, 13, 14):
        for test in ("t-get", "t-set"):
            host.push(point(n, bases[test] * HOST_LEVEL, test))
        step(context(client, host, where_to))
    # the last old-host commit measured again on the new host, for each test, once
    assert host.asked == [(sha(10), ["t-get"], ["lab-a"]), (sha(10), ["t-set"], ["lab-a"])]
    assert watch_store.candidates(client, WHERE) == []
    (note,) = watch_store.log_lines(client, WHERE)
    assert (note["kind"], note["sha"]) == ("host-changed", sha(11))
    assert note["text"].startswith("host changed on lab-a from " + sha(11)[:10])
    assert note["text"].endswith("what changed: governor: performance -> powersave")
    assert "cpu_model" not in note["text"]  # only what changed
    assert f"{sha(10)[:10]}, the last commit before it, is measured again" in note["text"]
    assert receiver.posts == [] and not issues.exists()


def test_a_change_landing_with_the_host_change_is_a_candidate_confirmed_and_told(
        client: redis.Redis, targets: Any) -> None:
    where_to, receiver, _issues = targets
    old_host(client, {"t-get": 1e6}, 10)
    # commit 11 does 4 % more work per op, on the new host that counts 10 % more anyway

    def level(commit: str, test: str) -> float:
        return 1e6 * HOST_LEVEL * (1.04 if int(commit, 16) >= 11 else 1.0)

    host = NewHost(client, level)
    host.push(point(10, level(sha(11), "t-get"), "t-get"))
    assert watch_store.candidates(client, WHERE) == []  # blind until the re-measure
    # one step of the confirmer: it asks the re-measure, whose point raises the step, then
    # confirms that candidate the usual way (fresh interleaved re-runs of both commits)
    decided = step(context(client, host, where_to))
    (c,) = watch_store.candidates(client, WHERE)
    assert (c.before, c.after, c.state, c.placed_on) == (sha(10), sha(11), "confirmed", sha(11))
    (seen,) = watch_store.series_steps(client, WHERE, c.id)
    assert 3.5 < seen.change_pct < 4.5  # against the re-measure, not the old host (+14 %)
    rounds = first_round([COUNT])
    assert host.asked == [(sha(10), ["t-get"], ["lab-a"]),
                          *[(s, ["t-get"], ["lab-a"]) for s in (sha(10), sha(11))] * rounds]
    (alert,) = [d.alert for d in decided if d.alert]
    assert alert.sha == sha(11) and alert.pr == 13001 and 3.5 < alert.change_pct < 4.5
    assert [p["rbs"]["sha"] for p in receiver.posts] == [sha(11)]
    assert sorted(x["kind"] for x in watch_store.log_lines(client, WHERE)) == [
        "alert", "host-changed"]
