"""A metric's judging policy, read from its catalogue entry here and nowhere else.

The noise floor, the watch's candidate floor, the share of a candidate a confirmation must
carry, the floor under which a confirmed change is a note rather than an alert, and the
precedence between kinds are fields of the metric's frozen entry (``common.metrics``; the
prior and the least pairs are read by ``analysis.paired`` and ``analysis.compare``). The
engine's options (:meth:`analysis.verdict.CompareOptions.for_metric`), the watch
(``analysis.arrival``), its confirmer and alerts (``notify.watch_confirm``), bisect
(``bisection.search``), the PR comment (``notify.pr_summary``) and the reports' order
(``analysis.shown``) ask here, so none of them writes a number or an order of its own.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import TypeVar

from redis_benchmarks_spec.common.metrics import metric as catalogued

T = TypeVar("T")


def floor_pct(metric: str) -> float:
    """The noise floor that judges an interval of ``metric`` without a calibration."""
    return catalogued(metric).floor_pct


def candidate_floor_pct(metric: str) -> float:
    """The least step of ``metric`` the watch raises as a candidate from one new point."""
    return catalogued(metric).candidate_floor_pct


def carries(change_pct: float | None, candidate_pct: float, metric: str) -> bool:
    """Does ``change_pct`` carry the candidate's change: its sign, and at least the
    catalogue's share of its size (the watch's re-runs, a bisection's midpoint)?"""
    if change_pct is None or candidate_pct == 0:
        return False
    return change_pct / candidate_pct >= catalogued(metric).confirm_share


def alert_floor_pct(metric: str) -> float:
    """A confirmed change of ``metric`` smaller than this is a note, not an alert."""
    return catalogued(metric).alert_floor_pct


def precedence(metric: str) -> int:
    """``metric``'s rank when the same runs were judged on several kinds (lowest first)."""
    return catalogued(metric).precedence


def decides_first(items: Sequence[T], metric_of: Callable[[T], str]) -> T:
    """The item whose metric's kind takes precedence (the first such on a tie)."""
    return min(items, key=lambda item: precedence(metric_of(item)))


def leading(items: Sequence[T], metric_of: Callable[[T], str]) -> list[T]:
    """The items of the kind that takes precedence among ``items``, in their order."""
    if not items:
        return []
    best = precedence(metric_of(decides_first(items, metric_of)))
    return [item for item in items if precedence(metric_of(item)) == best]
