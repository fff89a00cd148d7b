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

SPARK = "▁▂▃▄▅▆▇█"


class HistoryError(LookupError):
    """The history asked for cannot be given (nothing stored, several series match)."""


@dataclass(frozen=True)
class HistoryQuery:
    test: str
    metric: str
    branch: str
    platform: str | None = None
    topology: str | None = None
    build_variant: str | None = None
    last_n: int = 20


@dataclass
class HistoryPoint:
    ts_ms: int
    value: float
    commit: str = ""
    version: str = ""
    run_id: str = ""


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


def to_csv(history: History) -> str:
    out = io.StringIO()
    writer = csv.writer(out)
    writer.writerow(["ts_ms", "value", "commit", "version", "run_id"])
    for p in history.points:
        writer.writerow([p.ts_ms, p.value, p.commit, p.version, p.run_id])
    return out.getvalue()


def to_json(history: History) -> str:
    return json.dumps({"query": asdict(history.query), "series": history.series_key,
                       "points": [asdict(p) for p in history.points]}, indent=2)
