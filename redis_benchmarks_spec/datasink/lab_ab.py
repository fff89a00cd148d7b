"""The lab's A/B of two commits on a platform, as the engine judged it (this module owns the
key family ``ci.benchmarks.redis/lab-ab/{org}/{repo}/{base sha}/{head sha}/{platform}``).

Each key is a hash, field = the metric judged (``instructions_per_op``,
``ALL_STATS.Totals.Ops/sec``), value = the versioned JSON of one :class:`LabAB`: the
engine's report of that metric (``ComparisonReport.to_dict()``, the report the pull-request
comment is rendered from), per row the test name and topology it is (so a surface that names
its rows otherwise finds them), per row the pairs taken and why the A/B stopped, and the A/B's
note (the stored base's reuse line). The agent writes it when it finishes a pull request's
A/B (``agent.ab_event.lab_entries``); the site's compare page, ``rbs compare`` of the
datasink and the comment's datasink route render it instead of judging the two commits'
points again (``inputs.lab_ab``): the A/B paired the head's runs with the base's counted at
its push, used the ``--until-decided`` looks and the lab host's noise priors, none of which
the points alone carry.

Read back as untrusted (anyone with datasink write access writes here): the entry's size
and nesting are bounded before it is parsed, its version must be :data:`VERSION`, names and
shas are checked, and anything else is a :class:`LabABError` the reader turns into a note.
This module checks the envelope; the report's rows are checked where they become a
``ComparisonReport`` (``inputs.lab_ab``).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.common.safejson import loads as bounded_loads

PREFIX = "ci.benchmarks.redis/lab-ab"
VERSION = 1
#: one entry's JSON: a report of ~1,000 rows fits; a bigger one is not stored (the surfaces
#: then judge the points as before) and a bigger stored one is not read
MAX_ENTRY_BYTES = 1024 * 1024
MAX_JSON_DEPTH = 12
MAX_ROWS = 2000
MAX_TEXT = 2000
_NAME = re.compile(r"^[A-Za-z0-9._:-]{1,200}$")
_METRIC = re.compile(r"^[A-Za-z0-9._:/%-]{1,200}$")
_SHA = re.compile(r"^[0-9a-f]{40}$")


class LabABError(ValueError):
    """A stored entry, or a key asked for, that is not what this module writes; says why."""


@dataclass(frozen=True)
class LabABKey:
    """What one entry is of: the base and head commits of a repository, on a platform, in a
    metric. Every part is checked here, so no unchecked text reaches a key."""

    org: str
    repo: str
    base: str
    head: str
    platform: str
    metric: str

    def __post_init__(self) -> None:
        for name in ("org", "repo", "platform"):
            if not _NAME.match(getattr(self, name)):
                raise LabABError(f"lab A/B: {name} {getattr(self, name)!r} is not a name")
        for name in ("base", "head"):
            if not _SHA.match(getattr(self, name)):
                raise LabABError(f"lab A/B: {name} {getattr(self, name)!r} is not a 40-hex "
                                 "commit")
        if not _METRIC.match(self.metric):
            raise LabABError(f"lab A/B: {self.metric!r} is not a metric name")

    @property
    def key(self) -> str:
        return f"{PREFIX}/{self.org}/{self.repo}/{self.base}/{self.head}/{self.platform}"

    def describe(self) -> str:
        """The entry's key and field, for notes."""
        return f"{self.key} [{self.metric}]"


@dataclass(frozen=True)
class LabAB:
    """One metric of one A/B, as stored: the engine's report (``ComparisonReport.to_dict()``)
    and what the rows are."""

    report: dict[str, Any]
    # row -> (test name, topology); topology None: the one the test ran in
    tests: dict[str, tuple[str, str | None]] = field(default_factory=dict)
    pairs: dict[str, int] = field(default_factory=dict)  # row -> pairs taken
    stopped: dict[str, str] = field(default_factory=dict)  # row -> why the A/B stopped it
    note: str = ""  # the A/B's own note (how many tests reused the base's stored counts)
    event: str = ""  # the build event the A/B answered
    stored_ms: int = 0

    def to_json(self) -> str:
        return json.dumps({
            "version": VERSION, "event": self.event, "stored_ms": self.stored_ms,
            "note": self.note[:MAX_TEXT], "report": self.report,
            "tests": {t: list(v) for t, v in self.tests.items()},
            "pairs": self.pairs, "stopped": {t: s[:MAX_TEXT] for t, s in self.stopped.items()}})


def store(client: redis.Redis, key: LabABKey, entry: LabAB) -> None:
    """Write ``entry`` as ``key``'s (a later A/B of the same commits replaces it).
    :class:`LabABError` when it is too big to be read back (nothing is written then)."""
    text = entry.to_json()
    if len(text.encode()) > MAX_ENTRY_BYTES:
        raise LabABError(f"lab A/B {key.describe()}: {len(text)} bytes, over "
                         f"{MAX_ENTRY_BYTES}; not stored")
    client.hset(key.key, key.metric, text)


def load(client: redis.Redis, key: LabABKey) -> LabAB | None:
    """The entry stored for ``key``, None when there is none; :class:`LabABError` when one
    is stored that this module did not write (too big, not JSON, another version, a field
    of the wrong type)."""
    raw: Any = client.hget(key.key, key.metric)
    if raw is None:
        return None
    if len(raw) > MAX_ENTRY_BYTES:
        raise LabABError(f"lab A/B {key.describe()}: {len(raw)} bytes, over {MAX_ENTRY_BYTES}")
    try:
        data = bounded_loads(raw, MAX_JSON_DEPTH)
    except (ValueError, UnicodeDecodeError) as exc:
        raise LabABError(f"lab A/B {key.describe()}: not JSON ({type(exc).__name__})") from None
    try:
        return _entry(data)
    except (TypeError, KeyError, ValueError, AttributeError) as exc:
        raise LabABError(f"lab A/B {key.describe()}: {exc}") from None


def _entry(data: Any) -> LabAB:
    if not isinstance(data, dict):
        raise TypeError("not an object")
    if data.get("version") != VERSION:
        raise ValueError(f"version {str(data.get('version'))[:20]!r}, this reader reads "
                         f"{VERSION}")
    report = data["report"]
    if not isinstance(report, dict) or not isinstance(report.get("rows"), list) or \
            len(report["rows"]) > MAX_ROWS:
        raise ValueError("no report rows")
    tests = {_text(t): (_text(v[0]), None if v[1] is None else _text(v[1]))
             for t, v in _mapping(data.get("tests", {})).items()
             if isinstance(v, list) and len(v) == 2}
    pairs = {_text(t): _count(n) for t, n in _mapping(data.get("pairs", {})).items()}
    stopped = {_text(t): _text(s) for t, s in _mapping(data.get("stopped", {})).items()}
    stored = data.get("stored_ms", 0)
    if isinstance(stored, bool) or not isinstance(stored, int) or stored < 0:
        raise ValueError("stored_ms is not a time")
    return LabAB(report, tests, pairs, stopped, _text(data.get("note", "")),
                 _text(data.get("event", "")), stored)


def _mapping(raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict) or len(raw) > MAX_ROWS:
        raise ValueError("a per-row field is not a bounded object")
    return raw


def _text(raw: Any) -> str:
    if not isinstance(raw, str) or len(raw) > MAX_TEXT:
        raise ValueError("a text field is not a bounded string")
    return raw


def _count(raw: Any) -> int:
    if isinstance(raw, bool) or not isinstance(raw, int) or not 0 <= raw <= 100_000:
        raise ValueError("a pair count is not a count")
    return raw

