"""One metric's history on a branch: the points, and for each the commit and version of the
run that made it (read from the datasink by :mod:`inputs.history`).

Formatting lives in ``cli/history.py``; the sparkline and the CSV/JSON forms are here so a
report or a test can use them without the command line.
"""

from __future__ import annotations

import csv
import io
import json
from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

SPARK = "▁▂▃▄▅▆▇█"


class HistoryError(LookupError):
    """The history asked for cannot be given (nothing stored, several series match)."""


NA = "–"  # a missing commit or version, in the table and in CSV/JSON alike


@dataclass(frozen=True)
class HistoryQuery:
    test: str
    metric: str
    branch: str
    platform: str | None = None
    topology: str | None = None
    build_variant: str | None = None
    last_n: int = 20
    # runs made without --branch are filed by release version or commit: a query of those
    version: str | None = None
    commit: str | None = None

    @property
    def side(self) -> tuple[str, str]:
        """(kind, value) of the series asked for: version, commit (hash) or branch."""
        if self.version:
            return "version", self.version
        if self.commit:
            return "hash", self.commit
        return "branch", self.branch

    @property
    def where(self) -> str:
        """``branch unstable``, ``version 7.0.15`` or ``commit 1a2b3c...``."""
        kind, value = self.side
        return f"{'commit' if kind == 'hash' else kind} {value}"


@dataclass
class HistoryPoint:
    ts_ms: int
    value: float
    commit: str = ""
    version: str = ""
    run_id: str = ""
    # why the point is suspect (measured on an artifact the builder's check found built
    # from a bad kept tree: datasink/suspect_marks.py); "" for a good point. Shown, never
    # judged: the watch and its confirmation leave it out
    suspect: str = ""


def unsuspected(points: list[HistoryPoint]) -> list[HistoryPoint]:
    """The points a judgement may use: every one but the suspect ones."""
    return [p for p in points if not p.suspect]


@dataclass
class History:
    query: HistoryQuery
    series_key: str
    points: list[HistoryPoint] = field(default_factory=list)
    # the repetition (rep-NN) of each point's run, by run id: a table column, not exported
    repetitions: dict[str, int | None] = field(default_factory=dict)


def sparkline(values: list[float]) -> str:
    """One block character per value, scaled between the smallest and the largest."""
    if not values:
        return ""
    low, high = min(values), max(values)
    span = high - low
    if span == 0:
        return SPARK[3] * len(values)
    return "".join(SPARK[min(len(SPARK) - 1, int((v - low) / span * len(SPARK)))]
                   for v in values)


def commit_shown(sha: str | None) -> str:
    """A point's commit as every form shows it: the sha, or ``–`` when the run has none (a
    server built from no commit reports all zeros)."""
    return sha if sha and sha.strip("0") else NA


def when_utc(ms: int) -> str:
    """The table's time column: ``2026-11-26 11:26`` (UTC)."""
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


#: the columns of the table, the CSV and each JSON point, in this order
COLUMNS = ("time_utc", "ts_ms", "value", "commit", "version", "repetition", "run_id",
           "suspect")


def rows(history: History) -> list[dict[str, Any]]:
    """Every point with every column the table shows (and the run id)."""
    out = []
    for p in history.points:
        rep = history.repetitions.get(p.run_id) if p.run_id else None
        out.append({"time_utc": when_utc(p.ts_ms), "ts_ms": p.ts_ms, "value": p.value,
                    "commit": commit_shown(p.commit), "version": p.version or NA,
                    "repetition": rep, "run_id": p.run_id, "suspect": p.suspect})
    return out


def to_csv(history: History) -> str:
    out = io.StringIO()
    writer = csv.DictWriter(out, fieldnames=COLUMNS)
    writer.writeheader()
    for row in rows(history):
        writer.writerow({**row, "repetition": NA if row["repetition"] is None
                         else row["repetition"]})
    return out.getvalue()


def to_json(history: History) -> str:
    return json.dumps({"query": asdict(history.query), "series": history.series_key,
                       "points": rows(history)}, indent=2)
