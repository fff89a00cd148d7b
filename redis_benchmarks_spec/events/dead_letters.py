"""Reading the dead-letter stream: what no consumer could handle, and why.

:meth:`events.consumer.GroupConsumer.dead_letter` writes the record (its owner); this is the
reader behind ``rbs admin dead-letter``. Records are read newest first, bounded by a count,
and their text is decoded leniently: a dead letter is untrusted input by definition.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.events.consumer import original_fields
from redis_benchmarks_spec.events.names import StreamNames

MAX_SHOWN_VALUE = 80  # characters of an original field shown per value


@dataclass(frozen=True)
class DeadLetter:
    """One dead-lettered entry: where it came from, who gave up on it, and why."""

    dead_letter_id: str
    at_ms: int
    stream: str
    group: str
    consumer: str
    entry_id: str
    reason: str
    original: dict[str, str] = field(default_factory=dict)  # shortened, for display


def _text(value: Any) -> str:
    return value.decode(errors="backslashreplace") if isinstance(value, bytes) else str(value)


def _decode(entry_id: Any, fields: dict[Any, Any]) -> DeadLetter:
    plain = {_text(k): _text(v) for k, v in fields.items()
             if not _text(k).startswith("f:")}
    original = {name: _shorten(_text(value)) for name, value in original_fields(fields).items()}
    at = plain.get("at_ms", "0")
    return DeadLetter(
        dead_letter_id=_text(entry_id), at_ms=int(at) if at.isdigit() else 0,
        stream=plain.get("stream", "?"), group=plain.get("group", "?"),
        consumer=plain.get("consumer", "?"), entry_id=plain.get("entry_id", "?"),
        reason=plain.get("reason", ""), original=original)


def _shorten(text: str) -> str:
    return text if len(text) <= MAX_SHOWN_VALUE else text[:MAX_SHOWN_VALUE - 1] + "…"


def read_dead_letters(client: redis.Redis, names: StreamNames,
                      limit: int = 100) -> list[DeadLetter]:
    """The newest ``limit`` dead letters, newest first."""
    rows = client.xrevrange(names.dead_letter, count=limit)
    return [_decode(entry_id, fields) for entry_id, fields in rows]  # type: ignore[union-attr,arg-type]
