"""What makes the site's pages of every platform fast (issue 43, docs/site.md "Speed") keeps
them what they were, on a real datasink filled by the project's writer
(tests/site_fixtures.py): ``rbs site`` with page workers (web/page_workers.py) answers every
page of every platform with the same HTML as without them, the workers did the work, and
they are gone once the site stops, stopped or killed. How fast is the benchmark's to say
(benchmarks/site_pages.py), not a test's.
"""

from __future__ import annotations

import os
import signal
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.common.process import wait_for
from redis_benchmarks_spec.datasink import wire
from tests.datasink_fixtures import TEST_NAME, start_datasink
from tests.site_fixtures import (
    OTHER_TEST,
    PLATFORMS,
    SHAS,
    SLOW_FROM,
    Site,
    fill,
    get,
    start_site,
    stop,
)

BASE = "/ci/redis/redis"
PAGES = [
    f"{BASE}/test/{TEST_NAME}",
    f"{BASE}/test/{OTHER_TEST}",
    f"/compare?a={SHAS[SLOW_FROM - 1]}&b={SHAS[SLOW_FROM]}",
    f"/compare?a={SHAS[0]}&b={SHAS[-1]}&group=string",
    f"/compare?a={SHAS[SLOW_FROM - 1]}&b={SHAS[SLOW_FROM]}&platform={PLATFORMS[0]}",
    f"{BASE}/test/{TEST_NAME}?platform={PLATFORMS[1]}",
    f"/compare?a={'9' * 40}&b={SHAS[0]}",  # a commit no platform ran
]


@pytest.fixture(scope="module", name="sink_url")
def sink_url_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    sink = start_datasink(tmp_path_factory.mktemp("datasink"))
    try:
        with sink.client() as client:
            fill(client)
        yield sink.url
    finally:
        sink.down()


def _children(pid: int) -> set[int]:
    """The live child processes of ``pid`` (every thread's)."""
    out: set[int] = set()
    for task in Path(f"/proc/{pid}/task").glob("*"):
        try:
            out.update(int(c) for c in (task / "children").read_text().split())
        except OSError:  # the thread ended meanwhile
            continue
    return {c for c in out if _alive(c)}


def _alive(pid: int) -> bool:
    """Whether ``pid`` runs (a zombie left to a parent that does not reap is gone too)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def _cpu_ticks(pid: int) -> int:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return int(fields[11]) + int(fields[12])  # utime + stime


def _site(url: str, tmp_path: Path, workers: int) -> tuple[Site, str]:
    return start_site(url, tmp_path / f"site-{workers}.log", "--workers", str(workers))


def test_pages_of_every_platform_are_the_same_with_and_without_page_workers(
        sink_url: str, tmp_path: Path) -> None:
    alone, alone_base = _site(sink_url, tmp_path, 0)
    forked, forked_base = _site(sink_url, tmp_path, 2)
    try:
        assert _children(alone.pid) == set()
        workers = _children(forked.pid)
        assert len(workers) == 2, workers
        before = {w: _cpu_ticks(w) for w in workers}
        for path in PAGES:
            status, body = get(alone_base, path)
            assert status == 200, (path, body[-500:])
            assert get(forked_base, path) == (status, body), path
        # both platforms shown where both ran, so the workers' parts were put together
        _, history = get(forked_base, PAGES[0])
        assert all(f"/{p}/" in history for p in PLATFORMS)
        _, compared = get(forked_base, PAGES[2])
        assert [p for p in PLATFORMS if f"<h2>{p}</h2>" in compared] == list(PLATFORMS)
        assert "REGRESSION" in compared
        # the pages of every platform were drawn in the workers, still the same two
        assert _children(forked.pid) == workers
        assert sum(_cpu_ticks(w) - before[w] for w in workers) > 0
    finally:
        stop(alone)
        stop(forked)
    assert wait_for(lambda: not any(_alive(w) for w in workers), timeout=20, interval=0.1), \
        [w for w in workers if _alive(w)]
    assert "page workers" in (tmp_path / "site-2.log").read_text()


def test_page_workers_end_when_the_site_is_killed(sink_url: str, tmp_path: Path) -> None:
    site, base = _site(sink_url, tmp_path, 2)
    try:
        workers = _children(site.pid)
        assert len(workers) == 2
        assert get(base, PAGES[0])[0] == 200
    finally:
        os.kill(site.pid, signal.SIGKILL)
        site.wait(timeout=10)
    # nothing stopped them: the task pipe they read closed with the site
    assert wait_for(lambda: not any(_alive(w) for w in workers), timeout=20, interval=0.1), \
        [w for w in workers if _alive(w)]


def test_replies_of_commands_sent_together_come_back_in_order_and_a_refusal_raises(
        sink_url: str) -> None:
    client = redis.Redis.from_url(sink_url)
    try:
        seen: list[int] = []

        def each(i: int, reply: bytes) -> bytes:
            seen.append(i)
            return reply

        got = wire.replies_of(client, [("ECHO", "a"), ("ECHO", 2), ("ECHO", "c")], each)
        assert got == [b"a", b"2", b"c"] and seen == [0, 1, 2]
        with pytest.raises(redis.ResponseError):
            wire.replies_of(client, [("ECHO", "a"), ("NO-SUCH-COMMAND",), ("ECHO", "z")],
                            lambda i, reply: reply)
        # the connection left with a reply unread was dropped, not handed to the next read
        assert wire.replies_of(client, [("ECHO", "b")], lambda i, reply: reply) == [b"b"]
        assert client.echo("d") == b"d"
    finally:
        client.close()
