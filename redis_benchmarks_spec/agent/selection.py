"""Which suites a build event runs on this agent: the event's filters, the agent's own
filters, and each suite's ``build-variants`` list (a suite that names variants only runs on
those; one that names none runs on all)."""

from __future__ import annotations

import logging
from pathlib import Path

from redis_benchmarks_spec.events import validation
from redis_benchmarks_spec.events.messages import BuildEvent
from redis_benchmarks_spec.suites.catalog import SuiteFilter
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.validate import Rejected, validate_catalog

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


def select_valid(event: BuildEvent, agent_filter: SuiteFilter,
                 suites_dir: Path) -> tuple[list[Suite], list[Rejected]]:
    """The valid suites of ``suites_dir`` the event runs here (:func:`select_suites`), and
    the files it would have picked that the validator rejects: each is logged with its
    file and reason, and never runs (the same validator as ``rbs suites lint``)."""
    catalog = validate_catalog(suites_dir)
    by_event = event_filter(event)
    rejected = [r for r in catalog.rejected if r.matches(by_event) and r.matches(agent_filter)]
    for r in rejected:
        log.warning("event %s: %s", event.id, r.line())
    return select_suites(event, agent_filter, catalog.suites), rejected


def for_platform(event: BuildEvent, platform: str) -> bool:
    """An event with a platform list is only for those platforms."""
    return not event.platforms or platform in event.platforms


def rejected_tests(rejected: list[Rejected]) -> list[tuple[str, str]]:
    """(test name, reason) of each rejected suite file whose name is a test name (the
    others are logged only: there is no test to record a state under)."""
    out = []
    for r in rejected:
        try:
            validation.name("test_name", r.name)
        except validation.ValidationError:
            continue
        out.append((r.name, r.line()[:validation.MAX_TEXT]))
    return out
