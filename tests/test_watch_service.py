"""The standing confirmer (notify/watch_service.py, ``rbs confirmer``) on a real broker
(redis-server) and a real redis-stack datasink: bad stored candidates are dead-lettered
with their reason and the service goes on; a leased candidate is left to its holder; the
command runs as a daemon until SIGTERM."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import SeriesStep
from redis_benchmarks_spec.events.dead_letters import read_dead_letters
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.notify import watch_confirm
from redis_benchmarks_spec.notify.watch_service import Confirmer, DeadLetters, ServiceConfig
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    BUILD_VARIANT,
    client_fixture,
    datasink_fixture,
)
from tests.test_watch_agent import COUNT, WHERE, sha
from tests.test_watch_alert import (  # noqa: F401  (the fixture registers by import)
    LabReruns,
    context,
    history,
    targets_fixture,
)

RBS = str(Path(__file__).resolve().parents[1] / ".venv" / "bin" / "rbs")


def plant_bad_entries(client: redis.Redis) -> None:
    """Four candidates no confirmer can handle: not JSON, not commits, a time that is not
    a number, a broken series."""
    client.hset(WHERE.key("candidates"), "not-json", "{")
    client.hset(WHERE.key("candidates"), "not-commits",
                json.dumps({"id": "not-commits", "before": "zz", "after": "yy"}))
    client.hset(WHERE.key("candidates"), sha(51), json.dumps(
        {"id": sha(51), "before": sha(50), "after": sha(51), "created_ms": "soon"}))
    broken, _ = watch_store.add_candidate(client, WHERE, sha(30), sha(31),
                                          SeriesStep("t-get", "lab-a", BUILD_VARIANT, COUNT, 4.0))
    client.hset(WHERE.key("candidate-series", broken.id), "x", "[1, 2]")


def test_bad_entries_are_dead_lettered_and_the_good_one_is_told(
        client: redis.Redis, redis_server: Any, tmp_path: Path, targets: Any) -> None:
    where_to, receiver, _issues = targets
    broker = redis_server.client()
    names = StreamNames.with_prefix("cf")
    history(client, tmp_path / "p", 10, ["lab-a"])
    plant_bad_entries(client)
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    ctx = context(client, reruns, where_to)
    ctx.dead_letter = DeadLetters(broker, names, "c1", client, WHERE)
    ctx.owner = "c1"
    # another confirmer holds the good candidate: it is left alone
    assert watch_store.take_lease(client, WHERE, sha(11), "c2", 60)
    service = Confirmer([ctx], ServiceConfig("c1", interval_s=0.01))
    assert service.run(max_steps=2) == 2
    assert reruns.asked == [] and receiver.posts == []
    dead = read_dead_letters(broker, names)
    assert sorted(d.entry_id for d in dead) == sorted(["not-json", "not-commits", sha(51),
                                                       sha(31)])
    reasons = {d.entry_id: d.reason for d in dead}
    assert "candidate: TypeError" in reasons[sha(31)]
    assert "malformed" in reasons["not-commits"] and "wrong type" in reasons[sha(51)]
    assert {(d.stream, d.group, d.consumer) for d in dead} == {
        (WHERE.key("candidates"), "confirmer", "c1")}
    assert [c.id for c in watch_store.candidates(client, WHERE)] == [sha(11)]
    # its holder let go: the next step confirms and tells it, once
    watch_store.drop_lease(client, WHERE, sha(11), "c2")
    decided = service.once()
    assert [d.candidate.state for d in decided] == ["confirming", "confirmed"]
    assert [p["rbs"]["sha"] for p in receiver.posts] == [sha(11)]
    assert watch_store.alert_summaries(client, WHERE)[sha(11)]["sha"] == sha(11)
    assert service.once() == [] and len(read_dead_letters(broker, names)) == 4


def _wait(check: Any, timeout: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if check():
            return True
        time.sleep(0.2)
    return False


def test_rbs_confirmer_runs_until_sigterm_through_bad_entries(
        client: redis.Redis, datasink: Any, redis_server: Any, tmp_path: Path) -> None:
    broker = redis_server.client()
    names = StreamNames.with_prefix("cd")
    client.hset(WHERE.key("candidates"), "not-json", "{")
    log = (tmp_path / "confirmer.log").open("wb")
    proc = subprocess.Popen([RBS, "confirmer", "--broker", redis_server.url, "--stream-prefix",
                             "cd", "--datasink", datasink.url, "--interval", "0.2",
                             "--consumer", "c-test"], stdout=log, stderr=subprocess.STDOUT)
    try:
        assert _wait(lambda: len(read_dead_letters(broker, names)) == 1), \
            (tmp_path / "confirmer.log").read_text()[-2000:]
        # still running: a later bad entry is dead-lettered too, and a good candidate whose
        # commit no build request brought is rejected (it cannot be re-run)
        client.hset(WHERE.key("candidates"), "later", "[]")
        watch_store.add_candidate(client, WHERE, sha(40), sha(41),
                                  SeriesStep("t-get", "lab-a", BUILD_VARIANT, COUNT, 4.0))
        assert _wait(lambda: len(read_dead_letters(broker, names)) == 2)
        assert _wait(lambda: watch_store.get_candidate(client, WHERE, sha(41)).state
                     == "rejected")
        assert "cannot re-run" in watch_store.get_candidate(client, WHERE, sha(41)).reason
        # the candidates key itself damaged: logged each step, the service keeps running
        client.delete(WHERE.key("candidates"))
        client.set(WHERE.key("candidates"), "not a hash")
        time.sleep(1.0)
        assert proc.poll() is None
    finally:
        proc.send_signal(signal.SIGTERM)
        code = proc.wait(timeout=60)
    text = (tmp_path / "confirmer.log").read_text()
    assert code == 0, text[-2000:]
    assert "watch keys are damaged" in text and "Traceback" not in text, text[-2000:]


def test_rbs_confirmer_refuses_bad_flags_in_one_line(redis_server: Any) -> None:
    for flags, expected in ((["--repo", "redis"], "--repo redis: expected ORG/NAME"),
                            (["--branch", "a b"], "--branch"),
                            (["--webhook-url", "ftp://x"], "--webhook-url ftp://x"),
                            (["--interval", "0"], "must be positive")):
        proc = subprocess.run([RBS, "confirmer", "--broker", redis_server.url, "--datasink",
                               redis_server.url, *flags], capture_output=True, text=True,
                              timeout=60, check=False)
        assert proc.returncode == 2 and expected in proc.stderr, proc.stderr
        assert len(proc.stderr.strip().splitlines()) == 1, proc.stderr


def test_a_listed_candidate_another_confirmer_moved_on_is_left_alone(
        client: redis.Redis, redis_server: Any, tmp_path: Path, targets: Any) -> None:
    where_to, receiver, _issues = targets
    history(client, tmp_path / "p", 10, ["lab-a"])
    reruns = LabReruns(client, {sha(10): 10_000.0, sha(11): 10_400.0}, tmp_path / "p")
    ctx = context(client, reruns, where_to)
    ctx.owner = "c1"
    (listed,) = watch_store.candidates(client, WHERE, "candidate")
    moved = watch_store.get_candidate(client, WHERE, listed.id)
    moved.state = "confirming"
    watch_store.save_candidate(client, WHERE, moved)
    assert watch_confirm._guarded(ctx, listed, watch_confirm._ask) is None
    watch_store.remove_candidate(client, WHERE, listed.id)
    assert watch_confirm._guarded(ctx, listed, watch_confirm._ask) is None
    assert reruns.asked == [] and receiver.posts == []
    assert not client.exists(WHERE.key("lease", listed.id))  # let go either way
