"""Placing a confirmed change of a tracked branch on one commit when the branch was pushed
several commits at once (docs/watch.md).

The watch judges one point per pushed commit; when a push brought several commits, the
change is confirmed between two benchmarked commits with unbenchmarked ones between them.
:class:`RangeBisector` hands that range to ``rbs bisect``'s machinery unchanged: the
first-parent commits after the earlier one up to the later one
(:func:`gitrange.first_parent_range`), searched by :func:`search.search` with a
:class:`remote.RemoteProber` (build requests through the builder and the agents of the
platform that saw the change, the test alone, the series' metric). The probes name no
branch, so they never become points of the branch they are placing a change of.

It returns the search's :class:`search.BisectOutcome` (``first_bad`` is the commit, or None
with ``reason`` and ``range_left``); an error of git, a build or the broker is an outcome
with no ``first_bad`` and the reason, never an exception: the confirmer alerts the range
instead.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.bisection.gitrange import first_parent_range
from redis_benchmarks_spec.bisection.remote import RemotePlan, RemoteProber
from redis_benchmarks_spec.bisection.search import (
    BisectError,
    BisectOutcome,
    Budget,
    BudgetSpent,
    HostBusy,
    Prober,
    search,
)
from redis_benchmarks_spec.datasink.watch_store import SeriesStep
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.trigger import RequestOptions


@dataclass
class RangeSetup:
    """What every range bisection of one lab shares."""

    client: redis.Redis  # the broker
    names: StreamNames
    repo: Path  # a clone of the tracked repository (the commits are archived from it)
    request: RequestOptions = field(
        default_factory=lambda: RequestOptions(triggering_env="bisect"))
    budget: Budget = field(default_factory=Budget)
    probe_timeout_s: float = 6 * 3600


def probers_for(setup: RangeSetup, series: SeriesStep, good: str) -> list[Prober]:
    """The prober of the series that saw the change: its test, platform, variant, metric."""
    plan = RemotePlan(setup.client, setup.names, setup.repo, series.test, series.platform,
                      series.build_variant, CompareOptions.for_metric(series.metric),
                      metric=series.metric, request=setup.request,
                      probe_timeout_s=setup.probe_timeout_s)
    return [RemoteProber(plan, good)]


class RangeBisector:
    """Places a change between ``before`` and ``after`` on one commit (see the module)."""

    def __init__(self, setup: RangeSetup, say: Callable[[str], None] = lambda _: None,
                 probers: Callable[[SeriesStep, str], list[Prober]] | None = None) -> None:
        self.setup = setup
        self.say = say
        self.probers = probers or (lambda s, good: probers_for(setup, s, good))

    def place(self, before: str, after: str, series: SeriesStep) -> BisectOutcome:
        """The bisection of ``before..after`` on ``series`` (never raises for git, a
        build or the broker: the outcome says why it found no commit)."""
        try:
            good, commits = first_parent_range(self.setup.repo, before, after)
        except BisectError as exc:
            return BisectOutcome([], reason=f"cannot list the range: {exc}")
        self.say(f"bisecting {len(commits)} commits after {before[:10]} up to {after[:10]} "
                 f"on {series.test} ({series.platform}, {series.metric})")
        try:
            return search(self.probers(series, good), good, commits, self.setup.budget,
                          self.say)
        except (BisectError, BudgetSpent, HostBusy, redis.RedisError) as exc:
            return BisectOutcome(commits, reason=f"bisection failed: {exc}",
                                 range_left=(good, commits[-1]))
