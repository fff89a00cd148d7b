"""The wire of a datasink push: commands packed by hiredis, sent in batches on one held
connection, replies read back in order (:mod:`.writer` decides what the commands are). And
of a read of several large replies (:func:`replies_of`): sent together, each reply made
Python while the server answers the next.

redis-py's pipeline checks and copies every argument before packing it and reads replies
through its response callbacks: a third of a push's client time, for replies the writer only
checks for refusals. Holding the connection lets the writer send batch k+1 before reading
batch k's replies, so the server works while the client packs.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator, Sequence
from typing import Any, TypeVar

import hiredis
import redis

from redis_benchmarks_spec.results.document import RunResult

T = TypeVar("T")


class Batch:
    """Commands of one round trip, each with the runs it writes for (to name a refusal)."""

    def __init__(self) -> None:
        self.commands: list[tuple[Any, ...]] = []
        self.owners: list[list[RunResult]] = []
        self.resp: list[bytes | None] = []  # a command queued in RESP already, else None

    def queue(self, owners: list[RunResult], *args: Any) -> int:
        """Queue one command; returns its index among the replies."""
        self.commands.append(args)
        self.owners.append(owners)
        self.resp.append(None)
        return len(self.commands) - 1

    def queue_resp(self, owners: list[RunResult], resp: bytes, *args: Any) -> int:
        """Queue one command already in RESP (:func:`command_resp`); ``args`` (its name and
        key) name it should it be refused."""
        index = self.queue(owners, *args)
        self.resp[index] = resp
        return index

    def packed(self) -> bytes:
        """Every command in RESP, packed by hiredis (redis-py's own packing checks and
        copies every argument first: a third of a push's client time)."""
        return b"".join([resp if resp is not None else hiredis.pack_command(args)
                         for resp, args in zip(self.resp, self.commands)])


def bulk_strings(args: tuple[Any, ...]) -> bytes:
    """``args`` in RESP as a command's arguments, without the command's ``*N`` header: the
    parts of a command that many commands share are packed once (:func:`command_resp`)."""
    packed = hiredis.pack_command(args)
    return packed[packed.index(b"\r\n") + 2:]


def command_resp(head: tuple[Any, ...], tail: tuple[int, bytes]) -> bytes:
    """One command in RESP: ``head``'s arguments, then a tail of ``tail[0]`` arguments
    packed already by :func:`bulk_strings` (``tail[1]``)."""
    return b"*%d\r\n%b%b" % (len(head) + tail[0], bulk_strings(head), tail[1])


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


def replies_of(client: redis.Redis, commands: Sequence[tuple[Any, ...]],
               each: Callable[[int, Any], T],
               refused: Callable[[int, redis.ResponseError], T] | None = None) -> list[T]:
    """Every command of ``commands`` sent at once on one connection of ``client``, then each
    reply (as ``execute_command`` returns it, without response callbacks) handed to
    ``each`` with its index as soon as it is read, before the next is read: the server
    answers the later commands while the client makes the earlier replies Python (two
    ``TS.MRANGE`` of a comparison of every platform: ~30 ms of server time each). A refused
    command raises its ``ResponseError`` (the connection, replies unread, is then dropped),
    or, given ``refused``, is handed to it with its index and the rest read on.
    A connection found closed before any reply was read is replaced once."""
    if not commands:
        return []
    # one buffer: redis-py sends each item of a list with its own sendall (4,408 system
    # calls for a comparison's series read by key)
    packed = [b"".join([hiredis.pack_command(command) for command in commands])]
    for attempt in (1, 2):
        with wire(client) as held:
            try:
                held.conn.send_packed_command(packed, check_health=False)
                out = [_reply(held.conn, 0, each, refused)]
            except redis.ConnectionError:
                if attempt == 2:
                    raise
                held.conn.disconnect()  # the next attempt connects afresh
                continue
            out += [_reply(held.conn, i, each, refused) for i in range(1, len(commands))]
            return out
    raise AssertionError("unreachable")  # pragma: no cover


def _reply(conn: Any, index: int, each: Callable[[int, Any], T],
           refused: Callable[[int, redis.ResponseError], T] | None) -> T:
    """The next reply on ``conn`` handed to ``each``, or its refusal to ``refused``."""
    try:
        reply = conn.read_response()
    except redis.ResponseError as exc:  # read whole: the connection is still in step
        if refused is None:
            raise
        return refused(index, exc)
    return each(index, reply)
