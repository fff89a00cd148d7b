"""The agent's datasink push: idempotent writes, retried while the datasink is unreachable
(the results are also on disk and in the broker's ledger, so nothing is lost meanwhile)."""

from __future__ import annotations

import logging
import threading

import redis

from redis_benchmarks_spec.datasink import profile_map
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.consumer import Backoff
from redis_benchmarks_spec.results.document import RunResult

log = logging.getLogger(__name__)


class DatasinkPusher:
    """The agent's ``push`` callable: one test's results into RedisTimeSeries."""

    def __init__(self, client: redis.Redis, stop: threading.Event | None = None) -> None:
        self.client = client
        self.stop = stop or threading.Event()
        self.backoff = Backoff(initial_s=1.0, cap_s=60.0)
        # series this process created: their points go in one TS.MADD on later pushes
        self.known_series: set[str] = set()

    def __call__(self, results: list[RunResult]) -> None:
        """Push ``results``; waits out an unreachable datasink until :attr:`stop` is set."""
        while True:
            try:
                report = push_results(self.client, results, known_series=self.known_series)
            except (redis.ConnectionError, redis.TimeoutError) as exc:
                delay = self.backoff.next_delay()
                log.warning("datasink unreachable (%s); retrying in %.0fs", exc, delay)
                if self.stop.wait(delay):
                    raise
                continue
            self.backoff.reset()
            for run_id, why in report.failed.items():
                log.error("datasink refused %s: %s (result kept on disk)", run_id, why)
            self._record_profiles(results)
            return

    def _record_profiles(self, results: list[RunResult]) -> None:
        """The functions each test executed, for the suite selection of later PRs."""
        try:
            profile_map.record_results(self.client, results)
        except (redis.RedisError, ValueError) as exc:
            log.warning("profile map not stored: %s", exc)
