"""Which suites an agent chose for a pull-request event, and why: stored by the agent under
``<prefix>:pr-selection:<event id>:<platform>`` (this module owns the key), read by the
comment's readers and the lab replay as untrusted input."""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.events.names import StreamNames

TTL_S = 30 * 24 * 3600
MAX_BYTES = 256 * 1024


@dataclass
class SelectionRecord:
    """The suites chosen (in run order), how (``analysis.suite_selection``), and why."""

    suites: list[str]
    method: str
    reason: str
    scores: dict[str, float] = field(default_factory=dict)
    candidates: int = 0


def key(names: StreamNames, event_id: str, platform: str) -> str:
    return f"{names.prefix}:pr-selection:{event_id}:{platform}"


def save(client: redis.Redis, names: StreamNames, event_id: str, platform: str,
         record: SelectionRecord) -> None:
    client.set(key(names, event_id, platform), json.dumps(asdict(record)), ex=TTL_S)


def load(client: redis.Redis, names: StreamNames, event_id: str,
         platform: str) -> SelectionRecord | None:
    """The stored record; None when none is stored or it does not read back."""
    raw: Any = client.get(key(names, event_id, platform))
    if raw is None or len(raw) > MAX_BYTES:
        return None
    try:
        data = bounded_loads(raw, 4)
        return SelectionRecord([str(s)[:200] for s in data["suites"]], str(data["method"]),
                               str(data["reason"])[:1000],
                               {str(k): float(v) for k, v in data.get("scores", {}).items()},
                               int(data.get("candidates", 0)))
    except (ValueError, TypeError, KeyError, AttributeError):
        return None
