"""The suites a pull-request event runs on this agent: those that execute the code the pull
request changes (``analysis.suite_selection``), from what the builder stored of base..head
(``builder.change``) and the base commit's profile map in the datasink
(``datasink.profile_map``). Events of a branch run every suite: they refresh the map."""

from __future__ import annotations

import logging
import statistics

import redis

from redis_benchmarks_spec.analysis.suite_selection import Candidate, Change, Selection, select
from redis_benchmarks_spec.builder import change as change_mod
from redis_benchmarks_spec.datasink import profile_map
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.pullrequest import selection_record
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.suites.suite import Suite

log = logging.getLogger(__name__)


def _change(broker: redis.Redis, names: StreamNames, base: str, head: str) -> Change | None:
    try:
        found = change_mod.load(broker, names.prefix, base, head)
    except ValueError as exc:
        log.warning("change record of %s..%s unreadable: %s", base[:12], head[:12], exc)
        return None
    if found is None:
        return None
    return Change(tuple(found.files), tuple(found.functions), tuple(found.everything),
                  tuple(found.added))


def _profiles(datasink: redis.Redis | None, event: BuildEvent,
              base: str) -> dict[str, list[tuple[str, str, float]]]:
    if datasink is None:
        return {}
    try:
        found = profile_map.load(datasink, event.org, event.repo, base)
    except (redis.RedisError, ValueError) as exc:
        log.warning("profile map of %s unreadable: %s", base[:12], exc)
        return {}
    return {t: [(f.function, f.file, f.inclusive_per_op) for f in fs] for t, fs in found.items()}


def choose(broker: redis.Redis, datasink: redis.Redis | None, names: StreamNames,
           event: BuildEvent, suites: list[Suite],
           budget: int | None) -> tuple[list[Suite], Selection | None]:
    """The suites to run, in order, and the selection (None: not a pull request)."""
    if event.pr is None:
        return suites, None
    try:
        info = pr_state.load_info(broker, names, event.request_id)
    except pr_state.PrInfoError:
        info = None
    base = info.base_sha if info is not None and info.head_sha == event.sha else ""
    change = _change(broker, names, base, event.sha) if base else None
    candidates = [Candidate(s.name, tuple(s.tested_commands), s.priority) for s in suites]
    selection = select(change, _profiles(datasink, event, base) if base else {}, candidates,
                       budget)
    by_name = {s.name: s for s in suites}
    return [by_name[n] for n in selection.suites], selection


def record(broker: redis.Redis, names: StreamNames, event: BuildEvent, platform: str,
           selection: Selection, candidates: int) -> None:
    """Stored for the comment and the replay (``pullrequest.selection_record``)."""
    selection_record.save(broker, names, event.id, platform, selection_record.SelectionRecord(
        selection.suites, selection.method, selection.reason,
        {k: round(v, 1) for k, v in selection.scores.items()}, candidates))


def queued_line(selection: Selection, pairs: int, run_seconds: list[float]) -> str:
    """The comment's line when the suites are chosen: how many, why, and when the platform
    should be done: suites x pairs x 2 runs x this agent's median seconds per run so far
    (the budget's most pairs: an upper bound; no estimate before the agent's first run)."""
    n = len(selection.suites)
    line = f"Queued: {n} suite{'s' if n != 1 else ''} ({selection.reason})"
    if not run_seconds:
        return line + "."
    per_run = statistics.median(run_seconds)
    minutes = n * pairs * 2 * per_run / 60
    return (f"{line}; ETA at most {minutes:.0f} min ({n} x {pairs} pairs x 2 runs x "
            f"{per_run:.0f} s per run measured on this platform).")
