"""Change points of a test's series on a branch (read by :mod:`inputs.history`), each step
placed between two commits (the last point before it and the first after it)."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from datetime import datetime, timezone
from typing import Any

from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions, Step, steps
from redis_benchmarks_spec.analysis.history import History, HistoryPoint, unsuspected
from redis_benchmarks_spec.analysis.verdict import metric_direction


@dataclass(frozen=True)
class BranchQuery:
    """Which series: a branch, a metric, tests by regexp, narrowed like ``rbs history``."""

    branch: str
    metric: str
    tests_regexp: str = ".*"
    platform: str | None = None
    topology: str | None = None
    build_variant: str | None = None
    last_n: int = 500


@dataclass
class PlacedStep:
    """A step with the points on either side of it."""

    step: Step
    before: HistoryPoint
    after: HistoryPoint
    worse: bool  # the change goes the wrong way for this metric

    def to_dict(self) -> dict[str, Any]:
        return {**asdict(self.step), "before": asdict(self.before),
                "after": asdict(self.after), "worse": self.worse}


@dataclass
class SeriesChanges:
    test: str
    series_key: str
    points: int
    steps: list[PlacedStep] = field(default_factory=list)

    def to_dict(self) -> dict[str, Any]:
        return {"test": self.test, "series": self.series_key, "points": self.points,
                "steps": [s.to_dict() for s in self.steps]}


def changes_of(history: History, options: ChangePointOptions) -> SeriesChanges:
    """The change points of one test's series (its history on the branch), each placed
    between the points on either side of it (the suspect points left out)."""
    points = unsuspected(history.points)
    values = [p.value for p in points]
    out = SeriesChanges(history.query.test, history.series_key, len(values))
    direction = metric_direction(history.query.metric)
    for step in steps(values, options):
        out.steps.append(PlacedStep(step, points[step.index - 1], points[step.index],
                                    step.change_pct * direction < 0))
    return out


def _date(ms: int) -> str:
    return datetime.fromtimestamp(ms / 1000, tz=timezone.utc).strftime("%Y-%m-%d %H:%M")


def after_last_change(points: dict[str, list[tuple[int, float]]],
                      options: ChangePointOptions | None = None
                      ) -> tuple[dict[str, list[tuple[int, float]]], list[str]]:
    """Each test's (ts, value) points after its last change point, and a note per test
    saying which window was used."""
    trimmed: dict[str, list[tuple[int, float]]] = {}
    notes: list[str] = []
    for test, series in sorted(points.items()):
        found = steps([v for _, v in series], options)
        if not found:
            trimmed[test] = series
            notes.append(f"{test}: baseline window = all {len(series)} points (no change "
                         "point)")
            continue
        last = found[-1]
        trimmed[test] = series[last.index:]
        notes.append(f"{test}: baseline window = the {len(trimmed[test])} points after the "
                     f"change point of {last.change_pct:+.1f}% at {_date(series[last.index][0])}"
                     f" (of {len(series)})")
    return trimmed, notes
