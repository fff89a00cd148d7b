"""An event the agent gives up on ends ``dead-lettered`` on its platform: for itself and for
every test not yet final, in the dead letter's own transaction (``agent.Agent`` hands this
to its consumer as the dead-letter hook)."""

from __future__ import annotations

import logging
from collections.abc import Mapping
from typing import Any

import redis
from redis.client import Pipeline

from redis_benchmarks_spec.agent.config import AgentConfig
from redis_benchmarks_spec.agent.selection import for_platform
from redis_benchmarks_spec.events.errors import MessageError
from redis_benchmarks_spec.events.messages import (
    DEAD_LETTERED,
    BuildEvent,
    MalformedMessage,
    RunStatus,
)
from redis_benchmarks_spec.events.status import EVENT_DONE, stage_event_end
from redis_benchmarks_spec.events.validation import MAX_TEXT

log = logging.getLogger(__name__)


def stage_dead_lettered(client: redis.Redis, pipe: Pipeline, config: AgentConfig,
                        fields: Mapping[Any, Any], reason: str) -> BuildEvent | None:
    """Stage the event's end in ``pipe``; the event (None: not one of this platform, or no
    event id to record a state under: the dead letter is then the record)."""
    try:
        event = BuildEvent.decode(fields)
    except MalformedMessage:
        return None
    if not for_platform(event, config.platform):
        return None
    why = reason.replace("\x00", "\\0")[:MAX_TEXT]
    try:
        end = RunStatus(event_id=event.id, platform=config.platform, agent=config.consumer,
                        test_name=EVENT_DONE, state=DEAD_LETTERED, reason=why)
    except MessageError as exc:
        log.error("event %s: no dead-lettered status recorded: %s", event.id, exc)
        return None
    ended = stage_event_end(client, pipe, config.names, end)
    log.error("event %s on %s: dead-lettered with %d open test(s): %s", event.id,
              config.platform, len(ended) - 1, why)
    return event
