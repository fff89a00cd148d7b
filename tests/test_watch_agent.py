"""The agent's watch (agent/watch.py) and its store (datasink/watch_store.py) on a real
redis-stack datasink: synthetic tracked-branch points pushed as an agent pushes them."""

from __future__ import annotations

import dataclasses
import random

import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig, WatchingPusher
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import RunResult
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    make_result,
)

COUNT = "instructions_per_op"
WHERE = Branch("redis", "redis", "unstable")


def sha(n: int) -> str:
    return f"{n:040x}"


def point(n: int, value: float, platform: str = "lab-a", test: str = "t-get",
          ops: float = 100_000.0) -> RunResult:
    r = make_result(n, test_name=test, platform=platform, hash=sha(n + 1))
    return dataclasses.replace(r, run_id=f"{r.run_id}:{platform}",
                               metrics={COUNT: value, "ALL_STATS.Totals.Ops/sec": ops})


def feed(client: redis.Redis, watch: BranchWatch, results: list[RunResult]) -> None:
    WatchingPusher(lambda rs: push_results(client, rs), watch)(results)


def test_a_step_becomes_one_candidate_across_tests_and_platforms(client: redis.Redis) -> None:
    rng = random.Random(4)
    watch = BranchWatch(client, WatchConfig(host_id="host1", change_at=""))
    for n in range(15):
        level = 1e6 if n < 12 else 1.04e6
        for platform in ("lab-a", "lab-b"):
            for test in ("t-get", "t-set"):
                feed(client, watch, [point(n, level * (1 + rng.gauss(0, 0.001)), platform,
                                           test, ops=1e5 * (1 + rng.gauss(0, 0.1)))])
    found = watch_store.candidates(client, WHERE)
    assert [(c.before, c.after) for c in found] == [(sha(12), sha(13))]
    steps = watch_store.series_steps(client, WHERE, found[0].id)
    assert {(s.test, s.platform) for s in steps} == {(t, p) for t in ("t-get", "t-set")
                                                     for p in ("lab-a", "lab-b")}
    assert all(s.metric == COUNT and 3 < s.change_pct < 5 for s in steps)
    assert watch_store.log_lines(client, WHERE) == []  # nothing told before confirmation


def test_a_flat_history_and_a_pull_request_point_raise_nothing(client: redis.Redis) -> None:
    rng = random.Random(8)
    watch = BranchWatch(client, WatchConfig(host_id="host1", change_at=""))
    for n in range(20):
        feed(client, watch, [point(n, 1e6 * (1 + rng.gauss(0, 0.0015)))])
    pr = make_result(30, test_name="t-get", platform="lab-a", hash=sha(99))
    pr = dataclasses.replace(pr, metrics={COUNT: 2e6}, context=dataclasses.replace(
        pr.context, git=dataclasses.replace(pr.context.git, pr=12345)))
    assert watch.arrived([pr]) == []
    assert watch_store.candidates(client, WHERE) == []


def test_a_fingerprint_change_is_a_note_and_never_a_candidate(client: redis.Redis) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="host1", change_at=sha(11)))
    for n in range(15):
        feed(client, watch, [point(n, 1e6 if n < 10 else 1.2e6)])  # level moves with the host
    assert watch_store.candidates(client, WHERE) == []
    lines = watch_store.log_lines(client, WHERE)
    assert [(x["kind"], x["sha"]) for x in lines] == [("host-changed", sha(11))]


def test_a_rerun_of_an_older_commit_is_not_a_new_point(client: redis.Redis) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="host1", change_at=""))
    for n in range(12):
        feed(client, watch, [point(n, 1e6)])
    rerun = dataclasses.replace(point(40, 1.1e6), context=point(3, 1e6).context)
    seen = watch.arrived([rerun])  # commit 4 again, much later: no judgement
    push_results(client, [rerun])
    assert all(s.judgement.outcome == "none" for s in watch.arrived([rerun]))
    assert seen and watch_store.candidates(client, WHERE) == []


def test_the_store_reads_back_untrusted_entries_carefully(client: redis.Redis) -> None:
    client.hset(WATCH_KEY := WHERE.key("candidates"), "x", '{"id": "x", "before": "zz", '
                '"after": "1", "state": "candidate"}')
    try:
        watch_store.candidates(client, WHERE)
        raise AssertionError("a malformed candidate was read")
    except ValueError as exc:
        assert "malformed" in str(exc)
    client.delete(WATCH_KEY)
    assert watch_store.claim_alert(client, WHERE, "c1") is True
    assert watch_store.claim_alert(client, WHERE, "c1") is False
