"""The suites an event runs on this agent: those that execute the code it changes
(``analysis.suite_selection``), from what the builder stored of base..head
(``builder.change``) and the base commit's profile map in the datasink
(``datasink.profile_map``).

A pull request's base is its base commit. A tracked branch's push runs every suite (and so
refreshes the map), unless the platform names ``sentinels`` (:class:`SelectionPolicy`):
then it runs those, the suites that execute what the push changes against the commit pushed
before it, and the suites that map has no profile of yet; a push whose change reaches
everything, or whose base has no map, runs every suite. The map of the base is carried
forward to the pushed commit (the suites it did not run execute no changed code), so the
next push finds a whole map, and so is its lab-wide instruction profile
(``datasink.lab_profile``), so the commit's lab table holds every suite."""

from __future__ import annotations

import logging
from dataclasses import dataclass

import redis

from redis_benchmarks_spec.agent.suite_cost import EtaPlan, eta_text
from redis_benchmarks_spec.analysis.suite_selection import (
    FULL,
    Candidate,
    Change,
    Selection,
    select,
)
from redis_benchmarks_spec.builder import change as change_mod
from redis_benchmarks_spec.datasink import lab_profile, profile_map
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


@dataclass(frozen=True)
class SelectionPolicy:
    """The platform's ``selection`` section (``agent.platform_config``)."""

    max_suites: int | None = None  # most suites a pull request runs; None: no cap
    sentinels: tuple[str, ...] | None = None  # every push runs these; None: every suite


def choose(broker: redis.Redis, datasink: redis.Redis | None, names: StreamNames,
           event: BuildEvent, suites: list[Suite],
           policy: SelectionPolicy) -> tuple[list[Suite], Selection | None]:
    """The suites to run, in order, and the selection (None: every suite, not selected)."""
    if event.pr is None:
        if policy.sentinels is None or event.branch is None:
            return suites, None
        return _choose_push(broker, datasink, names, event, suites, policy.sentinels)
    try:
        info = pr_state.load_info(broker, names, event.request_id)
    except pr_state.PrInfoError:
        info = None
    base = info.base_sha if info is not None and info.head_sha == event.sha else ""
    change = _change(broker, names, base, event.sha) if base else None
    selection = select(change, _profiles(datasink, event, base) if base else {},
                       _candidates(suites), policy.max_suites)
    by_name = {s.name: s for s in suites}
    return [by_name[n] for n in selection.suites], selection


def _candidates(suites: list[Suite]) -> list[Candidate]:
    return [Candidate(s.name, tuple(s.tested_commands), s.priority) for s in suites]


def _choose_push(broker: redis.Redis, datasink: redis.Redis | None, names: StreamNames,
                 event: BuildEvent, suites: list[Suite],
                 sentinels: tuple[str, ...]) -> tuple[list[Suite], Selection]:
    """A tracked branch's push: see the module docstring."""
    base = change_mod.base_of(broker, names.prefix, event.request_id) or ""
    change = _change(broker, names, base, event.sha) if base else None
    profiles = _profiles(datasink, event, base) if change is not None else {}
    everyone = [s.name for s in suites]
    why = ("no record of what this push changes" if change is None
           else change.everything[0] if change.everything
           else f"no profile map of {base[:10]}, the commit pushed before" if not profiles
           else "")
    if why:
        return suites, Selection(everyone, FULL, f"all {len(suites)} suites run: {why}")
    picked = select(change, profiles, _candidates(suites), None, "this push")
    unmapped = [n for n in everyone if not profiles.get(n) and n not in picked.suites]
    extra = [n for n in everyone if n in sentinels and n not in picked.suites + unmapped]
    chosen = picked.suites + unmapped + extra
    reason = picked.reason + "".join(
        f"; plus {len(group)} {what}" for group, what in (
            (unmapped, "suite(s) the map has no profile of"), (extra, "sentinel suite(s)"))
        if group)
    _carry_forward(datasink, event, base)
    by_name = {s.name: s for s in suites}
    return [by_name[n] for n in chosen], Selection(chosen, picked.method, reason,
                                                   picked.scores)


def _carry_forward(datasink: redis.Redis | None, event: BuildEvent, base: str) -> None:
    if datasink is None:
        return
    try:
        carried = profile_map.carry_forward(datasink, event.org, event.repo, base, event.sha)
        # the lab-wide instruction table of the pushed commit holds every suite too
        lab_profile.carry_forward(datasink, event.org, event.repo, base, event.sha)
    except (redis.RedisError, ValueError) as exc:
        log.warning("profiles of %s not carried to %s: %s", base[:12], event.sha[:12], exc)
        return
    log.info("profile map: %d suite(s) carried from %s to %s", carried, base[:12],
             event.sha[:12])


def record(broker: redis.Redis, names: StreamNames, event: BuildEvent, platform: str,
           selection: Selection, candidates: int) -> None:
    """Stored for the comment and the replay (``pullrequest.selection_record``)."""
    selection_record.save(broker, names, event.id, platform, selection_record.SelectionRecord(
        selection.suites, selection.method, selection.reason,
        {k: round(v, 1) for k, v in selection.scores.items()}, candidates))


def queued_line(selection: Selection, runs: list[str], costs: dict[str, float],
                plan: EtaPlan) -> str:
    """The comment's line when the suites are chosen: how many, why, and when the platform
    should be done: the plan's pairs of each test (``runs``: a suite's name once per
    topology it runs in) at this platform's measured cost of that suite
    (``agent.suite_cost``); no estimate before any of them ran here."""
    n = len(selection.suites)
    line = f"Queued: {n} suite{'s' if n != 1 else ''} ({selection.reason})"
    eta = eta_text(runs, costs, plan)
    return f"{line}; {eta}." if eta else line + "."
