"""A sweep's curve (throughput and latency percentiles against the swept value) and its knee.

The knee is the issue's own definition made exact: the first swept value after which
throughput stops growing (no later point beats it by more than ``growth_pct``, default 5 %,
which is half the run-to-run noise here) while latency grows (the next point's p99 is
higher). It is a plain rule rather than a curvature method (Kneedle and the like), because
sweeps have few, log-spaced points and single noisy runs, where curvature estimates jump
between neighbours; the rule says in words what it found. No knee is named when throughput
still grows at the largest value.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import asdict, dataclass
from typing import Any

from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import instrumented

#: the percentiles a sweep draws and prints (redis-benchmark reports p50/p95/p99 only)
#: memtier reports p50/p90/p99/p99.9/p99.99 as asked; redis-benchmark p50/p95/p99
SWEEP_PERCENTILES = ("p50.00", "p90.00", "p95.00", "p99.00", "p99.90", "p99.99")
DEFAULT_GROWTH_PCT = 5.0


@dataclass(frozen=True)
class CurvePoint:
    """One swept value: throughput and latency percentiles (ms) of its run; for a
    clients/connections point also what it ran (``concurrency`` of the result)."""

    value: float  # the swept number (a governor's position in the sweep)
    ops_per_sec: float
    latency_ms: dict[str, float]
    label: str = ""  # the value as given (a governor's name)
    connections: int | None = None
    requests_per_connection: float | None = None
    duration_s: float | None = None
    wall_s: float | None = None
    meets_minimum: bool | None = None
    flags: tuple[str, ...] = ()  # the run's flags (disturbed, below-minimum, ...)
    max_ms: float | None = None  # the slowest request the tool saw


@dataclass(frozen=True)
class Knee:
    """Where throughput stops growing while latency grows, and the sentence saying so."""

    index: int | None
    value: float | None
    reason: str


@dataclass
class SweepCurve:
    test: str
    param: str
    points: list[CurvePoint]
    knee: Knee

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _point(r: RunResult, position: int) -> CurvePoint:
    assert r.result is not None
    raw = r.sweep["value"]
    latency = r.result.totals.latency.percentiles_ms
    conc = r.concurrency
    return CurvePoint(float(raw) if raw.isdigit() else float(position),
                      r.result.totals.ops_per_sec,
                      {p: latency[p] for p in SWEEP_PERCENTILES if p in latency}, raw,
                      conc.get("connections"), conc.get("requests_per_connection"),
                      conc.get("duration_s"), conc.get("wall_s"), conc.get("meets_minimum"),
                      tuple(r.flags), r.result.totals.latency.max_ms)


def curve_points(results: Sequence[RunResult]) -> list[CurvePoint]:
    """The points of one test's swept runs (ok runs with a tool result), by swept value
    (values that are names, such as governors, in the order they ran); a run measured under
    a profiler is no point: its throughput and latency are not the server's speed."""
    ran = sorted((r for r in results if r.ok and r.result is not None and "value" in r.sweep
                  and not instrumented(r.flags)), key=lambda r: r.start_ms)
    return sorted((_point(r, i) for i, r in enumerate(ran)), key=lambda p: p.value)


def _p99(point: CurvePoint) -> float | None:
    return point.latency_ms.get("p99.00", point.latency_ms.get("p50.00"))


def find_knee(points: Sequence[CurvePoint], growth_pct: float = DEFAULT_GROWTH_PCT) -> Knee:
    """The first point after which throughput stops growing while latency grows."""
    if len(points) < 3:
        return Knee(None, None, f"{len(points)} point(s): too few for a knee")
    for i, point in enumerate(points[:-1]):
        best_later = max(p.ops_per_sec for p in points[i + 1:])
        if best_later > point.ops_per_sec * (1 + growth_pct / 100):
            continue
        now, then = _p99(point), _p99(points[i + 1])
        if now is None or then is None or then <= now:
            continue
        return Knee(i, point.value, _knee_reason(point, best_later, growth_pct, (now, then)))
    return Knee(None, None, "throughput still grows (or latency does not) up to the largest "
                            "value: no knee in this range")


def _knee_reason(point: CurvePoint, best_later: float, growth_pct: float,
                 p99: tuple[float, float]) -> str:
    """The sentence naming the knee: how the best later throughput compares, in words."""
    gain = (best_later / point.ops_per_sec - 1) * 100
    later = (f"no larger value is faster: the best of them is {plain(-gain)}% slower than "
             "this one" if gain <= 0 else
             f"larger values add at most {plain(gain)}% throughput (a knee allows less than "
             f"{plain(growth_pct)}%)")
    return (f"{later}, while p99 rises from {plain(p99[0])} ms here to {plain(p99[1])} ms at "
            "the next value")


def sweep_curves(results: Sequence[RunResult],
                 growth_pct: float = DEFAULT_GROWTH_PCT) -> list[SweepCurve]:
    """One curve per (test, swept parameter) among ``results``."""
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for r in results:
        if r.sweep.get("param"):
            groups.setdefault((r.test_name, r.sweep["param"]), []).append(r)
    curves = []
    for (test, param), group in sorted(groups.items()):
        points = curve_points(group)
        curves.append(SweepCurve(test, param, points, find_knee(points, growth_pct)))
    return curves
