"""What an agent's interleaved A/B of a pull-request event found, kept in the broker for the
pull-request comment (this module owns the key ``<prefix>:pr-ab:<event id>:<platform>``).

The agent writes it (:func:`save`) before it marks the suites done, and hands the merged
record to its event-done hook (the pull-request comment) in the same process; the stored copy
is what an agent that resumes the event merges with, or hands on when it resumes an event whose
suites were all done (:func:`load`). Two kinds of record:

* the sequential comparison of baseline/PR pairs (a :class:`ComparisonReport`) with, per test,
  the pairs taken, the looks and why it stopped;
* only a note, when the platform allows a budget but could not use it (no build of the base
  commit): the comment says so and shows the usual comparison against the datasink.

A record is read back as untrusted (anyone with broker write access can write it): a record
that does not parse is reported as a note, never shown as a verdict.
"""

from __future__ import annotations

import json
from dataclasses import asdict, dataclass, field
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.common.safejson import loads as bounded_loads
from redis_benchmarks_spec.events.names import StreamNames

RECORD_TTL_S = 30 * 24 * 3600
MAX_RECORD_BYTES = 4 * 1024 * 1024
MAX_JSON_DEPTH = 16


@dataclass
class TestProgress:
    """One test's sequential A/B: pairs taken, pair counts looked at, why it stopped."""

    pairs: int
    looks: list[int]
    stopped: str
    disturbed: int = 0  # pairs run but left out: other processes disturbed them


@dataclass
class ABRecord:
    """The record of one event on one platform."""

    base_sha: str = ""
    note: str = ""  # e.g. why no A/B was run
    report: dict[str, Any] | None = None  # ComparisonReport.to_dict()
    progress: dict[str, TestProgress] = field(default_factory=dict)
    flags: dict[str, list[str]] = field(default_factory=dict)  # per test, the PR side's runs
    # per test, the functions whose instructions per op moved most (FunctionMove.to_dict)
    movers: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    machine_s: float | None = None  # wall seconds of every run the platform made for it

    def comparison(self) -> ComparisonReport | None:
        return ComparisonReport.from_dict(self.report) if self.report else None


def key(names: StreamNames, event_id: str, platform: str) -> str:
    return f"{names.prefix}:pr-ab:{event_id}:{platform}"


def merge(old: ABRecord | None, new: ABRecord) -> ABRecord:
    """``new`` with the rows of ``old`` it did not re-run (a resumed event runs only the
    suites a previous holder had not finished)."""
    if old is None or old.report is None or new.report is None:
        return new
    fresh = {row["test"] for row in new.report["rows"]}
    kept = [row for row in old.report["rows"] if row["test"] not in fresh]
    report = dict(new.report, rows=kept + list(new.report["rows"]))
    summary: dict[str, int] = {}
    for row in report["rows"]:
        summary[row["verdict"]] = summary.get(row["verdict"], 0) + 1
    report["summary"] = summary
    progress = {t: p for t, p in old.progress.items() if t not in fresh} | new.progress
    flags = {t: f for t, f in old.flags.items() if t not in fresh} | new.flags
    movers = {t: m for t, m in old.movers.items() if t not in fresh} | new.movers
    machine = None if old.machine_s is None and new.machine_s is None else \
        (old.machine_s or 0.0) + (new.machine_s or 0.0)  # a resumed event: both holders' runs
    return ABRecord(new.base_sha, new.note, report, progress, flags, movers, machine)


def save(client: redis.Redis, names: StreamNames, event_id: str, platform: str,
         record: ABRecord) -> ABRecord:
    """Store ``record``, merged with what is stored for the same event and platform; the
    merged record is returned (what the comment shows)."""
    merged = merge(load(client, names, event_id, platform), record)
    client.set(key(names, event_id, platform), json.dumps(asdict(merged)), ex=RECORD_TTL_S)
    return merged


def load(client: redis.Redis, names: StreamNames, event_id: str,
         platform: str) -> ABRecord | None:
    """The stored record, None when there is none; a garbled one comes back as a note."""
    raw: Any = client.get(key(names, event_id, platform))
    if raw is None:
        return None
    try:
        if len(raw) > MAX_RECORD_BYTES:
            raise ValueError(f"{len(raw)} bytes")
        data = bounded_loads(raw, MAX_JSON_DEPTH)
        progress = {str(t): TestProgress(int(p["pairs"]), [int(n) for n in p["looks"]],
                                         str(p["stopped"]), int(p.get("disturbed", 0)))
                    for t, p in data.get("progress", {}).items()}
        flags = {str(t): [str(f) for f in fs] for t, fs in data.get("flags", {}).items()}
        record = ABRecord(str(data.get("base_sha", "")), str(data.get("note", "")),
                          data.get("report"), progress, flags,
                          _movers(data.get("movers", {})), _seconds(data.get("machine_s")))
        record.comparison()  # the report must read back
        return record
    except (ValueError, TypeError, KeyError, AttributeError) as exc:
        return ABRecord(note=f"the A/B record {key(names, event_id, platform)} is unreadable "
                             f"({type(exc).__name__}); not shown")


def _seconds(raw: Any) -> float | None:
    """A stored duration: a finite number of seconds under a day, else None (untrusted)."""
    if isinstance(raw, bool) or not isinstance(raw, (int, float)):
        return None
    return float(raw) if 0 <= raw < 24 * 3600 else None


def _movers(raw: Any) -> dict[str, list[dict[str, Any]]]:
    """The stored movers, each field checked for its type (untrusted)."""
    out: dict[str, list[dict[str, Any]]] = {}
    for test, moves in dict(raw).items():
        out[str(test)] = [{
            "function": str(m["function"])[:200],
            "file": None if m.get("file") is None else str(m["file"])[:300],
            "baseline_per_op": float(m["baseline_per_op"]),
            "comparison_per_op": float(m["comparison_per_op"]),
            "delta_per_op": float(m["delta_per_op"]),
            "share_of_total_pct": float(m["share_of_total_pct"])} for m in list(moves)[:50]]
    return out
