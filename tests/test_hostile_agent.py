"""``rbs agent`` attacked through the broker: every poison entry is dead-lettered with its
reason, the daemon never exits, never loops, and never writes or deletes outside its folders.
A real agent process, a real redis-server broker."""

from __future__ import annotations

import json
import os
import uuid
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.agent.ledger import Ledger
from redis_benchmarks_spec.events.messages import RunStatus, SuiteFilters, encode_value
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import EVENT_DONE, read_statuses, record_statuses
from tests.cli import rbs, write_suite
from tests.datasink_fixtures import (
    datasink_fixture,  # noqa: F401  (registers the fixture)
    make_result,
)
from tests.hostile_fixtures import (
    Daemon,
    daemon_env,
    dead_letters,
    event,
    gzip_bomb,
    signed_ref,
    tar_gz,
    wait_until,
)
from tests.pipeline_fixtures import SUITE

SHA = "d" * 40
NOTHING = SuiteFilters(tests_regexp="no-such-test-selects-nothing")


@pytest.fixture
def names() -> StreamNames:
    return StreamNames.with_prefix(f"h{uuid.uuid4().hex[:8]}")


def start_agent(redis_server, names: StreamNames, tmp_path: Path, consumer: str = "agent-1",  # type: ignore[no-untyped-def]
                datasink_url: str | None = None) -> Daemon:
    suites = tmp_path / "suites"
    suites.mkdir(exist_ok=True)
    write_suite(suites, "s", SUITE.format(name="hostile-set", n=1000))
    argv = ["agent", "--broker", redis_server.url, "--stream-prefix", names.prefix,
            "--platform", "p1", "--consumer", consumer, "--block-ms", "200",
            "--suites-dir", str(suites), "--work-dir", str(tmp_path / "area" / "work"),
            "--results-dir", str(tmp_path / "area" / "results"),
            "--datasink", datasink_url or redis_server.url]
    return Daemon(argv, tmp_path / f"{consumer}.log", daemon_env(), warm=True)


def liveness_probe(client: redis.Redis, names: StreamNames) -> str:
    """A valid event selecting no suite: the agent completes it at once if it is alive."""
    ev = event(signed_ref(client, names, SHA, tar_gz({"redis-server": b"x"})), SHA,
               filters=NOTHING)
    client.xadd(names.builds, ev.encode())  # type: ignore[arg-type]
    return ev.id


def completed(client: redis.Redis, names: StreamNames, event_id: str) -> bool:
    return any(s.test_name == EVENT_DONE and s.state == "completed"
               for s in read_statuses(client, names, event_id))


def poison_entries(client: redis.Redis, names: StreamNames) -> dict[str, str]:
    """Entry id -> what the reason must mention, for each kind of malformed entry."""
    good = event(signed_ref(client, names, SHA, b"x"), SHA).encode()
    cases: dict[str, tuple[dict, str]] = {  # type: ignore[type-arg]
        "non-utf8-name": ({**good, b"\xff\xfe": b"s:x"}, "not UTF-8"),
        "non-utf8-value": ({**good, "org": b"s:\xff\xfe"}, "org"),
        "non-utf8-kind": ({**good, "kind": b"\xff"}, "kind"),
        "deep-json": ({**good, "env": b"j:" + b"[" * 100_000 + b"]" * 100_000}, "deep"),
        "bad-regexp": ({**good, "filters": encode_value(
            {"tests_regexp": "set(", "groups_regexp": ".*", "commands_regexp": ".*"})},
            "regular expression"),
        "id-escape": ({**good, "id": b"s:../victim"}, "'id'"),
        "sha-escape": ({**good, "sha": b"s:../../x"}, "'sha'"),
        "million-chunks": ({**good, "artifact": encode_value(
            {**json.loads(good["artifact"][2:]), "chunks": 1_000_000})}, "chunks"),
        "option-branch": ({**good, "branch": b"s:--upload-pack=touch /tmp/x"}, "branch"),
    }
    out = {}
    for label, (fields, mention) in cases.items():
        entry_id = client.xadd(names.builds, fields).decode()  # type: ignore[arg-type,union-attr]
        out[entry_id] = f"{label}|{mention}"
    return out


def test_poison_entries_are_dead_lettered_and_the_agent_lives(redis_server, names,  # type: ignore[no-untyped-def]
                                                              tmp_path) -> None:
    client = redis_server.client()
    victim = tmp_path / "area" / "victim"
    victim.mkdir(parents=True)
    (victim / "keep").write_text("precious")
    expected = poison_entries(client, names)
    probe = liveness_probe(client, names)
    # the status hash is broker state too: garbage in it must not stop anyone reading it
    client.hset(names.status_key(probe), mapping={b"\xff\xfe": b"garbage", "p1|x": b"{}"})
    agent = start_agent(redis_server, names, tmp_path)
    try:
        wait_until(lambda: completed(client, names, probe), 60, "liveness probe completed")
        assert agent.alive(), agent.log()[-3000:]
    finally:
        agent.stop()
    letters = dead_letters(client, names)
    for entry_id, label in expected.items():
        name, mention = label.split("|")
        assert entry_id in letters, f"{name} was not dead-lettered"
        assert mention in letters[entry_id][0], (name, letters[entry_id][0])
    assert (victim / "keep").read_text() == "precious"
    assert client.xpending(names.builds, "platform:p1")["pending"] == 0
    assert "Traceback" not in agent.log()
    # the operator's reader shows what the attacker wrote, byte names included
    shown = rbs("admin", "dead-letter", "--broker", redis_server.url,
                "--stream-prefix", names.prefix, "--limit", "50", timeout=60)
    assert shown.returncode == 0 and "Traceback" not in shown.stdout + shown.stderr, shown
    assert "not UTF-8" in shown.stdout


@pytest.mark.parametrize("make,mention", [
    (lambda: b"\x00garbage, not a tarball" * 10, "not a valid tar.gz"),
    (lambda: tar_gz({"redis-server": os.urandom(100_000)})[:5000], "tar.gz"),  # truncated
    (lambda: tar_gz({"../escaped": b"x"}), "not a plain file name"),
    (lambda: tar_gz({"/etc/cron.d/x": b"x"}), "not a plain file name"),
    (lambda: gzip_bomb(100 * 1024 * 1024), "would exceed"),
], ids=["garbage", "truncated", "dotdot", "absolute", "gzip-bomb"])
def test_bad_artifacts_fail_the_event_and_are_dead_lettered(redis_server, names, tmp_path,  # type: ignore[no-untyped-def]
                                                            make, mention) -> None:
    client = redis_server.client()
    ev = event(signed_ref(client, names, SHA, make()), SHA)
    entry_id = client.xadd(names.builds, ev.encode()).decode()  # type: ignore[arg-type]
    probe = liveness_probe(client, names)
    agent = start_agent(redis_server, names, tmp_path)
    try:
        wait_until(lambda: completed(client, names, probe), 60, "liveness probe completed")
        assert agent.alive()
    finally:
        agent.stop()
    reason, _ = dead_letters(client, names)[entry_id]
    assert mention in reason, reason
    done = [s for s in read_statuses(client, names, ev.id) if s.test_name == EVENT_DONE]
    assert [s.state for s in done] == ["dead-lettered"] and mention in done[0].reason
    assert not (tmp_path / "escaped").exists() and not (tmp_path / "area" / "escaped").exists()
    work = tmp_path / "area" / "work"
    assert not work.exists() or not any(work.iterdir())  # nothing left unpacked


def test_forged_artifacts_are_refused_before_fetching(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    real = signed_ref(client, names, SHA, tar_gz({"redis-server": b"#!/bin/sh\n"}))
    unsigned = event(real.__class__(real.kind, real.location, real.sha256, real.size_bytes,
                                    1, ""), SHA)
    other_sha = event(real, "e" * 40)  # a genuine MAC, replayed for another commit
    ids = {client.xadd(names.builds, e.encode()).decode(): e  # type: ignore[arg-type]
           for e in (unsigned, other_sha)}
    probe = liveness_probe(client, names)
    agent = start_agent(redis_server, names, tmp_path)
    try:
        wait_until(lambda: completed(client, names, probe), 60, "liveness probe completed")
    finally:
        agent.stop()
    letters = dead_letters(client, names)
    for entry_id in ids:
        assert "MAC" in letters[entry_id][0], letters[entry_id][0]


def test_restart_with_poison_pending_under_a_stable_name(redis_server, names, tmp_path) -> None:  # type: ignore[no-untyped-def]
    """The backlog a restarted agent re-reads meets the delivery limit too."""
    client = redis_server.client()
    group = names.platform_group("p1")
    client.xgroup_create(names.builds, group, id="0", mkstream=True)
    crasher = client.xadd(names.builds, {"kind": "build-event", "v": "2", "x": "y"}).decode()
    malformed = client.xadd(names.builds, {"kind": b"\xff"}).decode()
    # the entries were delivered to agent-1 before: 7 crashed attempts for the first
    client.xreadgroup(group, "agent-1", {names.builds: ">"}, count=2)
    for _ in range(6):
        client.xreadgroup(group, "agent-1", {names.builds: "0"}, count=1)
    probe = liveness_probe(client, names)
    agent = start_agent(redis_server, names, tmp_path, consumer="agent-1")
    try:
        wait_until(lambda: completed(client, names, probe), 60, "liveness probe completed")
        assert agent.alive()
    finally:
        agent.stop()
    letters = dead_letters(client, names)
    assert "delivered" in letters[crasher][0] and "max 5" in letters[crasher][0]
    assert "kind" in letters[malformed][0]
    assert client.xpending(names.builds, group)["pending"] == 0


def test_restart_finishes_statuses_a_killed_agent_left_running(redis_server, names, tmp_path,  # type: ignore[no-untyped-def]
                                                               datasink) -> None:
    """Killed between recording a result and confirming its push: the restarted agent
    pushes it and sets the final status, so nothing stays "running"."""
    client = redis_server.client()
    ev = event(signed_ref(client, names, SHA, tar_gz({"redis-server": b"x"})), SHA)
    client.xadd(names.builds, ev.encode())  # type: ignore[arg-type]
    client.xgroup_create(names.builds, names.platform_group("p1"), id="0")
    client.xreadgroup(names.platform_group("p1"), "agent-1", {names.builds: ">"}, count=1)
    record_statuses(client, names, [RunStatus(event_id=ev.id, platform="p1", agent="agent-1",
                                              test_name="hostile-set", state="running")])
    Ledger(client, names.prefix, ev.id, "p1").record(
        "hostile-set", [replace(make_result(0, test_name="hostile-set"), run_id="killed-1")])
    agent = start_agent(redis_server, names, tmp_path, datasink_url=datasink.url)
    try:
        wait_until(lambda: completed(client, names, ev.id), 60, "the event completed")
    finally:
        agent.stop()
    states = {s.test_name: s.state for s in read_statuses(client, names, ev.id)}
    assert states == {"hostile-set": "completed", EVENT_DONE: "completed"}
    assert datasink.client().exists("ci.benchmarks.redis/runs/killed-1")
