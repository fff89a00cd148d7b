"""The last commit before a host boundary, measured again on the new host.

When the agent's watch sees a platform's host change (``agent.watch``: a point's fingerprint
differs from its history's), it stores a re-measure entry: the last commit the old host
measured, the boundary's first commit, the tests that saw it (``watch_store.add_remeasure``).
The confirmer asks that commit's re-run here, through the very path that asks a candidate's
re-runs (:class:`watch_confirm.Reruns`: a copy of the request that brought the commit,
narrowed to the tests and to the platform), once per test. Its run on the new host is the
first point of that host's series, against which the new host's first points are judged
(``analysis.arrival.judge_boundary``): a change that lands with the host change is a
candidate, confirmed like any other, and no point of the old host is compared with the new.

One run a test: the re-measure is one point of the history, as every commit's first run is;
a candidate it raises is confirmed on fresh, interleaved re-runs of both commits.
"""

from __future__ import annotations

import logging
from typing import Protocol

import redis

from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.datasink.watch_store import Branch, Remeasure

log = logging.getLogger(__name__)


class Requests(Protocol):
    """How a re-run is asked for (``watch_confirm.Reruns``, the broker in production)."""

    def request(self, sha: str, tests: list[str], platforms: list[str]) -> str: ...


def ask(datasink: redis.Redis, where: Branch, reruns: Requests) -> list[Remeasure]:
    """Ask the re-run of every stored re-measure for the tests not asked yet; the entries
    asked now. A commit whose request cannot be found (``LookupError``) is logged and marked
    asked: its new host is judged on its own history, as without a re-measure."""
    out = []
    for entry in watch_store.remeasures(datasink, where):
        tests = [t for t in entry.tests if t not in entry.asked]
        if not tests:
            continue
        try:
            reruns.request(entry.sha, tests, [entry.platform])
            log.info("watch: %s measured again on the new host of %s (%s)", entry.sha[:10],
                     entry.platform, ", ".join(tests))
        except LookupError as exc:
            log.warning("watch: %s cannot be measured again on %s: %s", entry.sha[:10],
                        entry.platform, exc)
        entry.asked = sorted({*entry.asked, *tests})
        watch_store.save_remeasure(datasink, where, entry)
        out.append(entry)
    return out
