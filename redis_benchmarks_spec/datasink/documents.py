"""The datasink's copy of a result document: the one definition of its stored form.

The file on the lab host (``result.json``, :mod:`results.document`) is the whole record. The
datasink keeps what its readers use, in two forms:

* **lean** (written by every push): the document without the tool's raw output
  (``result.data``, memtier's JSON: ~19 of a memtier document's ~29 KB). Nothing reads it
  back from the datasink: the exporter's metrics were extracted from it before the push, and
  the PR report reads the histogram, the tool's totals, flags and files, which stay. The
  file on the lab host (``paths`` names it) keeps the raw output.
* **folded** (``rbs datasink gc``, after the window of whole documents): what ``rbs history``
  and change points read of a run (its commit, version, repetition, platform, build
  variant, times, flags), compressed with zlib.

Both decode to a :class:`~results.document.RunResult`. A stored value opening with ``{`` is
plain JSON (every document pushed before folding was compressed); anything else is a zlib
stream (whose first byte is never ``{``).
"""

from __future__ import annotations

import json
import zlib
from typing import Any

import orjson

from redis_benchmarks_spec.results.document import RunResult

FOLDED_NOTE = "folded by rbs datasink gc: tool output, histogram and telemetry dropped"
#: fields a folded document keeps; everything else is reset to its default
FOLDED_KEEP = ("test_name", "run_id", "status", "context", "redis_version", "redis_git_sha",
               "binary", "start_ms", "end_ms", "flags", "sweep", "schema_version")
_JSON_OPEN = b"{"[0]


def encode_lean(result: RunResult) -> bytes:
    """The value a push stores under the run's key: compact JSON without the tool's raw
    output (a non-finite number is ``null``: JSON has no NaN)."""
    return result.to_compact_json(without_tool_data=True)


def is_folded(raw: dict[str, Any]) -> bool:
    return FOLDED_NOTE in (raw.get("notes") or [])


def fold(raw: dict[str, Any]) -> dict[str, Any]:
    """A stored document reduced to :data:`FOLDED_KEEP` (still a valid RunResult)."""
    folded = _set({name: raw[name] for name in FOLDED_KEEP if name in raw})
    context = _set(dict(folded.get("context") or {}))
    context["git"] = _set(dict(context.get("git") or {}))
    folded["context"] = context
    folded["notes"] = [FOLDED_NOTE]
    return folded


def _set(fields: dict[str, Any]) -> dict[str, Any]:
    """``fields`` without the empty ones (None, "", [], {}): the dataclasses' defaults."""
    return {k: v for k, v in fields.items() if v not in (None, "", [], {})}


def encode_folded(raw: dict[str, Any]) -> bytes:
    """The folded form of a stored document, compressed."""
    return zlib.compress(json.dumps(fold(raw), separators=(",", ":")).encode(), 9)


def decode_dict(value: bytes | str) -> dict[str, Any]:
    """The JSON object of a stored value, plain or compressed (ValueError when neither)."""
    data = value.encode() if isinstance(value, str) else value
    if data[:1] and data[0] != _JSON_OPEN:
        try:
            data = zlib.decompress(data)
        except zlib.error as exc:
            raise ValueError(f"neither JSON nor a zlib stream: {exc}") from exc
    try:  # orjson: ~4 times the stdlib's speed (a history page reads 2,000 documents)
        parsed = orjson.loads(data)
    except orjson.JSONDecodeError:  # what only the stdlib reads (NaN, integers past 64 bits)
        parsed = json.loads(data)
    if not isinstance(parsed, dict):
        raise ValueError("not a JSON object")  # noqa: TRY004  (callers catch ValueError)
    return parsed


#: bytes of a stored document that hold its ``context`` (it follows test name, run id and
#: status, all short: :meth:`RunResult.to_json` writes fields in their order)
HEAD_BYTES = 1024
_CONTEXT_KEY = '"context":'


def peek_context(head: bytes | str) -> dict[str, Any] | None:
    """The ``context`` object of a stored document from its first :data:`HEAD_BYTES` (a
    GETRANGE), or None when it is not there whole (a compressed or an unusual document:
    read it all)."""
    text = head.decode(errors="replace") if isinstance(head, bytes) else head
    at = text.find(_CONTEXT_KEY)
    if not text.startswith("{") or at < 0:
        return None
    try:
        context, _end = json.JSONDecoder().raw_decode(text, at + len(_CONTEXT_KEY))
    except ValueError:
        return None
    return context if isinstance(context, dict) else None


def decode(value: bytes | str) -> RunResult:
    """The :class:`RunResult` of a stored value (lean, folded, or a whole older document)."""
    return RunResult.from_dict(decode_dict(value))
