"""The wire of a datasink push: commands packed by hiredis, sent in batches on one held
connection, replies read back in order (:mod:`.writer` decides what the commands are).

redis-py's pipeline checks and copies every argument before packing it and reads replies
through its response callbacks: a third of a push's client time, for replies the writer only
checks for refusals. Holding the connection lets the writer send batch k+1 before reading
batch k's replies, so the server works while the client packs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

import hiredis
import redis

from redis_benchmarks_spec.results.document import RunResult


class Batch:
    """Commands of one round trip, each with the runs it writes for (to name a refusal)."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []
        self.owners: list[list[RunResult]] = []

    def queue(self, owners: list[RunResult], *args: Any) -> int:
        """Queue one command; returns its index among the replies."""
        self.commands.append(args)
        self.owners.append(owners)
        return len(self.commands) - 1

    def packed(self) -> bytes:
        """Every command in RESP, packed by hiredis (redis-py's own packing checks and
        copies every argument first: a third of a push's client time)."""
        return b"".join(map(hiredis.pack_command, self.commands))


class Wire:
    """One connection of a client's pool, held for a push (:func:`wire`): batches are sent,
    then their replies read in order."""

    def __init__(self, conn: Any) -> None:
        self.conn = conn

    def send(self, batch: Batch) -> None:
        self.conn.send_packed_command([batch.packed()], check_health=False)

    def replies(self, batch: Batch) -> list[Any]:
        """One reply per command of ``batch``; a refusal is its exception, not raised."""
        out: list[Any] = []
        for _ in batch.commands:
            try:
                out.append(self.conn.read_response())
            except redis.ResponseError as exc:
                out.append(exc)
        return out


@contextlib.contextmanager
def wire(client: redis.Redis) -> Iterator[Wire]:
    """A :class:`Wire` on one of ``client``'s connections. A connection that failed
    mid-push is dropped, never reused with replies still unread on it."""
    pool = client.connection_pool
    conn = pool.get_connection()
    try:
        yield Wire(conn)
    except BaseException:
        conn.disconnect()
        raise
    finally:
        pool.release(conn)
