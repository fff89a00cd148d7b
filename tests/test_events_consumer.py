"""Consumer groups against a real redis-server: nothing lost, dead consumers recovered."""

from __future__ import annotations

import time

import redis

from redis_benchmarks_spec.events.consumer import (
    CLAIMED,
    NEW,
    PENDING,
    Backoff,
    GroupConsumer,
    original_fields,
    publish,
)
from redis_benchmarks_spec.events.messages import BuildFailure

STREAM, GROUP, DLQ = "t:builds", "platform:x", "t:dead"


def _consumer(client: redis.Redis, name: str, **kw: object) -> GroupConsumer:
    opts: dict = {"block_ms": 100, "idle_claim_ms": 300, "dead_letter_stream": DLQ}
    opts.update(kw)
    return GroupConsumer(client, STREAM, GROUP, name, **opts)


def _msg(i: int) -> BuildFailure:
    return BuildFailure(request_id=f"r{i}", sha="s", build_variant="v", reason="x", failed_at_ms=i)


def _pending(client: redis.Redis) -> dict[str, int]:
    info = client.xpending(STREAM, GROUP)
    return {c["name"].decode(): int(c["pending"]) for c in info["consumers"]}


def test_entries_queued_before_group_exists_are_delivered(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    publish(client, STREAM, _msg(1))
    c = _consumer(client, "a")
    [entry] = c.read()
    assert entry.delivery == NEW
    assert c.decode(entry, BuildFailure) == _msg(1)


def test_dead_consumer_entry_is_claimed_after_idle_timeout(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    eid = publish(client, STREAM, _msg(1))
    dying = _consumer(client, "agent-1")
    [entry] = dying.read()
    assert entry.id == eid  # read, never acked: "agent-1" dies here
    survivor = _consumer(client, "agent-2")
    assert survivor.read() == []  # not idle long enough yet: no double work
    time.sleep(0.4)
    [claimed] = survivor.read()
    assert (claimed.id, claimed.delivery, claimed.deliveries) == (eid, CLAIMED, 2)
    assert _pending(client) == {"agent-2": 1}
    assert dying.touch(eid) is False  # the dead one cannot take it back
    assert survivor.owns(eid) and not dying.owns(eid)
    survivor.ack(eid)
    assert client.xpending(STREAM, GROUP)["pending"] == 0


def test_restart_rereads_own_pending_entries_first(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    ids = [publish(client, STREAM, _msg(i)) for i in range(3)]
    first = _consumer(client, "agent-1", count=2)
    assert [e.id for e in first.read()] == ids[:2]  # got two, crashed before acking
    publish(client, STREAM, _msg(9))
    restarted = _consumer(client, "agent-1", count=2, idle_claim_ms=60_000)
    got = restarted.read()
    assert [(e.id, e.delivery) for e in got] == [(ids[0], PENDING), (ids[1], PENDING)]
    for e in got:
        restarted.ack(e.id)
    # own backlog drained: then new entries, in order
    nxt = restarted.read()
    assert [e.delivery for e in nxt] == [NEW, NEW] and nxt[0].id == ids[2]
    assert restarted.decode(nxt[1], BuildFailure) == _msg(9)


def test_a_backlog_batch_all_dead_lettered_does_not_let_new_entries_overtake(redis_server) -> None:  # type: ignore[no-untyped-def]
    """A restart's backlog read one entry at a time: the first met the delivery limit and is
    dead-lettered, which empties that batch; the second pending entry still comes before a
    new one (CI once saw the new one first: the backlog was left for after it)."""
    client = redis_server.client()
    crasher, older = (publish(client, STREAM, _msg(i)) for i in range(2))
    first = _consumer(client, "agent-1", count=2)
    assert [e.id for e in first.read()] == [crasher, older]
    for _ in range(6):  # the crasher was re-read after 6 more crashes
        client.xreadgroup(GROUP, "agent-1", {STREAM: "0"}, count=1)
    new = publish(client, STREAM, _msg(9))
    restarted = _consumer(client, "agent-1", count=1, idle_claim_ms=60_000)
    [entry] = restarted.read()
    assert (entry.id, entry.delivery) == (older, PENDING)
    assert [f[b"entry_id"].decode() for _, f in client.xrange(DLQ)] == [crasher]
    restarted.ack(entry.id)
    [nxt] = restarted.read()
    assert (nxt.id, nxt.delivery) == (new, NEW)


def test_garbage_entry_goes_to_dead_letter_and_is_acked(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    bad = client.xadd(STREAM, {"kind": "build-failure", "v": "1", "sha": "j:{"}).decode()
    good = publish(client, STREAM, _msg(2))
    c = _consumer(client, "agent-1")
    [entry] = c.read()
    assert c.decode(entry, BuildFailure) is None
    [(_dl_id, dl)] = client.xrange(DLQ)
    assert dl[b"entry_id"].decode() == bad and b"malformed" in dl[b"reason"]
    assert dl[b"stream"] == STREAM.encode()
    assert original_fields(dl) == {"kind": b"build-failure", "v": b"1", "sha": b"j:{"}
    assert client.xpending(STREAM, GROUP)["pending"] == 0  # acked with the dead letter
    [entry2] = c.read()  # and the consumer keeps working
    assert entry2.id == good and c.decode(entry2, BuildFailure) == _msg(2)


def test_poison_entry_redelivered_too_often_is_dead_lettered(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    eid = publish(client, STREAM, _msg(1))
    for i in range(3):  # three consumers each take it and die
        c = _consumer(client, f"a{i}", idle_claim_ms=50, max_deliveries=2)
        time.sleep(0.1)
        c.read()
    assert client.xlen(DLQ) == 1
    assert client.xrange(DLQ)[0][1][b"entry_id"].decode() == eid
    assert client.xpending(STREAM, GROUP)["pending"] == 0


def test_keepalive_prevents_claim_of_a_long_job(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    eid = publish(client, STREAM, _msg(1))
    worker = _consumer(client, "busy")
    [entry] = worker.read()
    other = _consumer(client, "idle")
    with worker.keepalive(entry.id, interval_s=0.05) as lost:
        time.sleep(0.8)  # far longer than idle_claim_ms
        assert other.read() == []
        assert not lost.is_set()
    assert worker.owns(eid)


def test_connection_loss_is_retried_with_backoff(redis_server) -> None:  # type: ignore[no-untyped-def]
    client = redis_server.client()
    c = _consumer(client, "a", backoff=Backoff(initial_s=0.01, cap_s=0.05))
    calls = {"n": 0}

    def flaky() -> str:
        calls["n"] += 1
        if calls["n"] < 4:
            raise redis.ConnectionError("connection refused")
        return "ok"

    assert c.call(flaky) == "ok" and calls["n"] == 4
    b = Backoff(initial_s=1, cap_s=4)
    assert [b.next_delay() for _ in range(5)] == [1, 2, 4, 4, 4]


def test_blocking_read_returns_within_block_ms(redis_server) -> None:  # type: ignore[no-untyped-def]
    c = _consumer(redis_server.client(), "a", block_ms=200)
    t0 = time.monotonic()
    assert c.read() == []
    assert 0.15 < time.monotonic() - t0 < 2


def test_socket_timeout_shorter_than_block_is_refused(redis_server) -> None:  # type: ignore[no-untyped-def]
    import pytest
    client = redis.Redis(port=redis_server.port, socket_timeout=1)
    with pytest.raises(ValueError, match="socket_timeout"):
        GroupConsumer(client, STREAM, GROUP, "a", block_ms=5000)
