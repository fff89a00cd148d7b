"""Which suites a build event runs on this agent: the event's filters, the agent's own
filters, and each suite's ``build-variants`` list (a suite that names variants only runs on
those; one that names none runs on all)."""

from __future__ import annotations

import logging

from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.suites.catalog import SuiteFilter
from redis_benchmarks_spec.suites.suite import Suite

log = logging.getLogger(__name__)


def event_filter(event: BuildEvent) -> SuiteFilter:
    f = event.filters
    return SuiteFilter(tests_regexp=f.tests_regexp, groups_regexp=f.groups_regexp,
                       commands_regexp=f.commands_regexp, priority_min=f.priority_min,
                       priority_max=f.priority_max, build_variant=event.build_variant)


def select_suites(event: BuildEvent, agent_filter: SuiteFilter, suites: list[Suite]) -> list[Suite]:
    """Suites matching both filters, in catalogue order.

    The event can narrow the selection but never grant a capability: those come only from
    the agent's own filter (its operator's ``--capability``).
    """
    by_event = event_filter(event)
    chosen = [s for s in suites if by_event.matches(s) and agent_filter.matches(s)]
    offered = agent_filter.capabilities
    if offered is not None:
        for suite in suites:
            lacking = suite.missing_capabilities(set(offered))
            if lacking and by_event.matches(suite):
                log.info("not running %s here: this agent lacks capabilities %s "
                         "(--capability)", suite.name, ", ".join(lacking))
    return chosen


def for_platform(event: BuildEvent, platform: str) -> bool:
    """An event with a platform list is only for those platforms."""
    return not event.platforms or platform in event.platforms
