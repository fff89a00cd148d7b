"""The pages of every platform drawn platform by platform in worker processes.

A test's history on every platform draws a chart per platform and a comparison of every
platform judges each platform's 551 tests: work of one platform does not need another's
(each platform's verdicts are its own, as its charts are), and in one process it is done one
platform after another under the GIL (docs/site.md "Speed"). So the site forks its workers
when it starts (:class:`PageWorkers`, after ``web.app`` paid matplotlib's first figure and
scipy's import: they inherit them, and the frozen heap) and a page of every platform hands
each platform's read, judging and drawing to them: the page module's own function, narrowed
to the platform, returns the same views it returns in the site's process, and the views are
put back in the order the page shows them. A page of one platform stays in the site's process.

The workers end with the site: :meth:`PageWorkers.close` (``rbs site`` calls it however
serving ends), multiprocessing's exit hook for daemonic children, and, should the site be
killed, the end of the task pipe, which each worker reads and which only the site holds open.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import redis

from redis_benchmarks_spec.analysis.history import HistoryQuery
from redis_benchmarks_spec.datasink import keys, reader
from redis_benchmarks_spec.web import compare_page, history_page

#: a page's platforms answer within this, or the page fails (a worker stuck on a read)
PAGE_TIMEOUT_S = 120.0
MAX_WORKERS = 16

_client: redis.Redis | None = None  # a worker's own datasink client
_factory: Callable[[], redis.Redis] | None = None  # set in the site before it forks


def default_workers() -> int:
    """One worker per CPU, at most :data:`MAX_WORKERS`; none on a single CPU (no page has
    anything to gain there)."""
    cpus = len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else \
        (os.cpu_count() or 1)
    return 0 if cpus < 2 else min(cpus, MAX_WORKERS)


def _start() -> None:
    """A worker's start: Ctrl-C is the site's to handle (it closes the pool); a client of
    its own (a connection is never shared across a fork)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    global _client
    assert _factory is not None
    _client = _factory()


def _worker_client() -> redis.Redis:
    assert _client is not None, "not in a page worker"
    return _client


def _history_of(scope: keys.Scope, query: HistoryQuery) -> list[history_page.SeriesView]:
    return history_page.history_views(_worker_client(), scope, query)


def _compare_of(req: compare_page.CompareRequest) -> list[compare_page.PlatformCompare]:
    """The platform's part of the page; its report's rows stay here: the page shows them as
    the table's rows already written (``PlatformCompare.rows``), and 551 rows unpickled in
    the site cost it ~4 ms a platform (tests/test_site_speed.py holds the pages equal)."""
    return [replace(found, report=replace(found.report, rows=()))
            for found in compare_page.compare_where_both_ran(_worker_client(), req)]


def _pid() -> int:
    return os.getpid()


class PageWorkers:
    """``processes`` forked workers, each with its own datasink client made by ``datasink``
    (the site's :attr:`~web.app.SiteConfig.datasink`)."""

    def __init__(self, datasink: Callable[[], redis.Redis], processes: int) -> None:
        if processes < 1:
            raise ValueError(f"page workers: {processes} processes, want at least 1")
        global _factory
        _factory = datasink  # inherited by the fork, never pickled
        # fork: the workers inherit the site's warmed figure and imports (a spawned worker
        # would pay them again); forked here, before waitress starts its threads
        self._pool = multiprocessing.get_context("fork").Pool(processes, initializer=_start)
        self.processes = processes

    def pids(self) -> list[int]:
        """The workers' process ids."""
        return sorted(p.pid for p in self._pool._pool if p.pid is not None)  # type: ignore[attr-defined]

    def _map(self, fn: Callable[..., Any], args: list[tuple[Any, ...]]) -> list[Any]:
        return self._pool.starmap_async(fn, args, chunksize=1).get(PAGE_TIMEOUT_S)

    def history_views(self, client: redis.Redis, scope: keys.Scope,
                      query: HistoryQuery) -> list[history_page.SeriesView]:
        """:func:`web.history_page.history_views` of every platform of ``scope``, each
        platform's in a worker; the views in the order one read gives them (by key)."""
        platforms = reader.list_platforms(client, scope)
        found = self._map(_history_of, [(scope, replace(query, platform=p))
                                        for p in platforms])
        return sorted((v for views in found for v in views), key=lambda v: v.key)

    def compare(self, client: redis.Redis,
                req: compare_page.CompareRequest) -> list[compare_page.PlatformCompare]:
        """:func:`web.compare_page.compare` of every platform, each platform's in a worker
        (the platforms both commits ran on; when none, as the page does in one process: a
        side whose by.hash series gc deleted is read on its branch). A worker's reports come
        without their rows, which the page shows as the table it wrote (:func:`_compare_of`)."""
        platforms = sorted({p for scope in reader.scopes(client)
                            for p in reader.list_platforms(client, scope)})
        found = self._map(_compare_of, [(replace(req, platform=p),) for p in platforms])
        pages = sorted((c for each in found for c in each), key=lambda c: c.platform)
        if not pages and req.keep() is None:
            return compare_page.compare(client, req)
        return pages

    def close(self) -> None:
        """Stop the workers and wait for them."""
        self._pool.terminate()
        self._pool.join()
