"""``rbs admin`` views, cancel/replay, and the --wait follower, against a real redis-server.

A builder and agents are played by publishing their messages with the shared helpers."""

from __future__ import annotations

import pytest

from redis_benchmarks_spec.events import admin
from redis_benchmarks_spec.events.consumer import GroupConsumer, publish
from redis_benchmarks_spec.events.follow import Follower, wait
from redis_benchmarks_spec.events.messages import (
    ArtifactRef,
    BuildEvent,
    BuildFailure,
    BuildRequest,
    RunStatus,
    SourceLocation,
    event_id_for,
)
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.events.status import (
    EVENT_DONE,
    beat,
    heartbeats,
    is_cancelled,
    read_statuses,
    record_statuses,
)
from tests.cli import rbs_in_process

NAMES = StreamNames.with_prefix("adm")


def _request(variants: list[str]) -> BuildRequest:
    return BuildRequest(org="redis", repo="redis", branch="unstable", sha="a" * 40,
                        commit_time_ms=1, source=SourceLocation("git", "/srv/redis.git"),
                        build_variants=variants)


def _event(req: BuildRequest, variant: str) -> BuildEvent:
    return BuildEvent(id=event_id_for(req.id, variant), request_id=req.id, org=req.org,
                      repo=req.repo, branch=req.branch, sha=req.sha, commit_time_ms=1,
                      build_variant=variant, redis_version="7.0.15",
                      artifact=ArtifactRef("redis", f"art:{variant}", "0" * 64, 10))


def _status(event: BuildEvent, platform: str, test: str, state: str) -> RunStatus:
    return RunStatus(event_id=event.id, platform=platform, agent=f"{platform}-1",
                         test_name=test, state=state, reason="boom" if state == "failed" else "")


def test_follower_finishes_when_every_platform_is_done(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    for platform in ("icelake", "cascadelake"):
        GroupConsumer(client, NAMES.builds, NAMES.platform_group(platform), "x")
    req = _request(["gcc", "clang"])
    follower = Follower(client, NAMES, [(req, publish(client, NAMES.build_requests, req))])
    assert follower.expected_platforms == ["cascadelake", "icelake"]
    ev = _event(req, "gcc")
    publish(client, NAMES.builds, ev)
    publish(client, NAMES.build_failures, BuildFailure(request_id=req.id, sha=req.sha,
                                                       build_variant="clang", reason="cc1"))
    record_statuses(client, NAMES, [_status(ev, "icelake", "t1", "completed"),
                                    _status(ev, "icelake", EVENT_DONE, "completed"),
                                    _status(ev, "cascadelake", "t1", "running")])
    [prog] = follower.poll()
    assert list(prog.events) == [ev.id] and len(prog.failures) == 1
    assert prog.platforms[(ev.id, "cascadelake")].counts["running"] == 1
    assert not follower.finished()
    assert wait(follower, timeout_s=0.2, interval_s=0.05) is False
    record_statuses(client, NAMES, [_status(ev, "cascadelake", "t1", "failed"),
                                    _status(ev, "cascadelake", EVENT_DONE, "completed")])
    assert wait(follower, timeout_s=5, interval_s=0.05) is True
    assert client.xlen(NAMES.test_status) == 5


def test_follower_sees_an_event_with_the_same_id_as_its_request(redis_server) -> None:  # type: ignore[no-untyped-def]
    """Each stream numbers its own entries: a build event added in the request's millisecond
    can carry the request's very id, and must still be seen."""
    client = redis_server.client()
    names = StreamNames.with_prefix("same-ms")
    req = _request(["gcc"])
    ev = _event(req, "gcc")
    entry_id = "1700000000000-0"
    client.xadd(names.build_requests, req.encode(), id=entry_id)  # type: ignore[arg-type]
    client.xadd(names.builds, ev.encode(), id=entry_id)  # type: ignore[arg-type]
    [prog] = Follower(client, names, [(req, entry_id)]).poll()
    assert list(prog.events) == [ev.id]


def test_streams_view_shows_lag_pending_and_idle(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    req = _request([])
    for _ in range(3):
        publish(client, NAMES.build_requests, req)
    consumer = GroupConsumer(client, NAMES.build_requests, NAMES.builders_group, "b1")
    consumer.read()
    [info] = [s for s in admin.streams(client, NAMES) if s.name == NAMES.build_requests]
    assert info.length == 3
    [group] = info.groups
    assert (group.name, group.pending, group.lag) == ("builders", 1, 2)
    assert [(c.name, c.pending) for c in group.consumers] == [("b1", 1)]
    assert rbs_in_process(["admin", "streams", "--broker", redis_server.url,
                           "--stream-prefix", "adm"]) == 0


def test_inflight_failed_and_heartbeats(redis_server, capsys, monkeypatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.setenv("COLUMNS", "250")
    client = redis_server.client()
    req = _request(["gcc"])
    done_ev, busy_ev = _event(req, "gcc"), _event(req, "clang")
    record_statuses(client, NAMES, [_status(done_ev, "p", "t", "failed"),
                                    _status(done_ev, "p", EVENT_DONE, "completed"),
                                    _status(busy_ev, "p", "t", "running")])
    assert [e.event_id for e in admin.inflight(client, NAMES)] == [busy_ev.id]
    assert [(s.event_id, s.test_name) for s in admin.failed_tests(client, NAMES)] == [
        (done_ev.id, "t")]
    beat(client, NAMES, "icelake", "host:1", ttl_s=30, info="running t")
    [hb] = heartbeats(client, NAMES)
    assert (hb.platform, hb.agent, hb.alive, hb.info) == ("icelake", "host:1", True, "running t")
    for cmd in ("inflight", "failed", "heartbeats"):
        assert rbs_in_process(["admin", cmd, "--broker", redis_server.url,
                               "--stream-prefix", "adm"]) == 0
    assert busy_ev.id in capsys.readouterr().out


def test_cancel_and_replay_an_event(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    req = _request(["gcc"])
    ev = _event(req, "gcc")
    old = publish(client, NAMES.builds, ev)
    record_statuses(client, NAMES, [_status(ev, "p", "t", "failed")])
    assert admin.cancel_event(client, NAMES, ev.id) is True
    assert admin.cancel_event(client, NAMES, ev.id) is False
    assert is_cancelled(client, NAMES, "other", ev.id)
    with pytest.raises(admin.AdminError):
        admin.cancel_event(client, NAMES, "no-such-event")
    done = admin.replay(client, NAMES, ev.id)
    assert done.old_entry_id == old and done.new_entry_id != old and done.message == ev
    rows = client.xrange(NAMES.builds)
    assert len(rows) == 2 and BuildEvent.decode(rows[1][1]) == ev
    assert not is_cancelled(client, NAMES, ev.id)
    assert read_statuses(client, NAMES, ev.id) == []
    assert rbs_in_process(["admin", "replay", "missing", "--broker", redis_server.url,
                           "--stream-prefix", "adm"]) == 2  # an unknown id is an input error


def test_replay_a_request(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    req = _request([])
    publish(client, NAMES.build_requests, req)
    assert rbs_in_process(["admin", "replay", req.id, "--broker", redis_server.url,
                           "--stream-prefix", "adm"]) == 0
    assert [BuildRequest.decode(f) for _, f in client.xrange(NAMES.build_requests)] == [req, req]
