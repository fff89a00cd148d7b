"""The one datasink reader of comparisons: ``rbs compare``, the pull-request comment and the
reports read the series they judge or draw here.

A comparison names each side by a :class:`~datasink.reader.SeriesSelector` (a branch,
release version or commit, narrowed by platform, build variant, scope, dates, last N); this
module reads both sides (one ``TS.MRANGE`` per side and topology), labels the rows (the test,
or ``test @ topology`` when several topologies are read: ``results.comparison_key``), keeps
the tests a :class:`~common.name_filter.NameFilter` keeps (judged on the series'
``tested_groups`` / ``tested_commands`` labels, so no run document is fetched), cuts the
baseline at its last change point when asked (``analysis.branch_changes``), leaves out the
points measured on an artifact found bad (``inputs.suspect_points``, with a note), and hands back
values per row for :func:`analysis.engine.judge_samples`. Reports read a branch's history of
the compared tests here too (:func:`history_of`).

Errors are the reader's and the analysis's own: :class:`~datasink.reader.AmbiguousSelectorError`
(a selector matched two series of one test) and
:class:`~analysis.changepoints.ChangePointError` (no window could be cut); callers say them in
their own words (a usage error, a line of the comment).
"""

from __future__ import annotations

from dataclasses import dataclass, replace

import redis

from redis_benchmarks_spec.analysis.branch_changes import after_last_change
from redis_benchmarks_spec.analysis.changepoints import CHANGE_POINT_HISTORY
from redis_benchmarks_spec.analysis.report_data import History
from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.datasink import commit_series, keys, reader, suspect_marks
from redis_benchmarks_spec.inputs.suspect_points import drop_suspect, scopes_of
from redis_benchmarks_spec.results.comparison_key import label, split

Samples = dict[str, tuple[list[float], list[float]]]
SIDES = ("baseline", "comparison")


@dataclass(frozen=True)
class SidesQuery:
    """What one comparison reads: each side's selector, the topologies, the window."""

    baseline: reader.SeriesSelector
    comparison: reader.SeriesSelector
    # () reads the selectors' own topology and names rows by test; several topologies are
    # read one by one, each row named ``test @ topology`` when there are two or more
    topologies: tuple[str, ...] = ()
    # the baseline is each test's points after its last change point (of the newest
    # CHANGE_POINT_HISTORY points), not the selector's window
    change_point_window: bool = False
    keep: NameFilter | None = None  # tests kept by name, groups and commands


@dataclass(frozen=True)
class SidesRead:
    """Both sides' series per row, the rows kept, and notes on the windows used."""

    baseline: dict[str, reader.Series]
    comparison: dict[str, reader.Series]
    rows: tuple[str, ...]
    notes: tuple[str, ...] = ()

    def side(self, name: str) -> dict[str, reader.Series]:
        return self.baseline if name == "baseline" else self.comparison

    def values(self, side: str, row: str) -> list[float]:
        found = self.side(side).get(row)
        return [v for _, v in found.points] if found else []

    def samples(self, rows: tuple[str, ...] | list[str] | None = None) -> Samples:
        """(baseline values, comparison values) per row (default: every kept row)."""
        return {r: (self.values("baseline", r), self.values("comparison", r))
                for r in (self.rows if rows is None else rows)}

    def newest_ms(self) -> dict[str, int | None]:
        """Per side, the time of its newest point (the host noise in effect then)."""
        return {side: max((s.points[-1][0] for s in self.side(side).values() if s.points),
                          default=None) for side in SIDES}


def read_side(client: redis.Redis, selector: reader.SeriesSelector,
              topologies: tuple[str, ...] = ()) -> dict[str, reader.Series]:
    """One side's series per row (see :class:`SidesQuery` for ``topologies``)."""
    if not topologies:
        return reader.series_by_test(client, selector)
    out: dict[str, reader.Series] = {}
    for topology in topologies:
        found = reader.series_by_test(client, replace(selector, topology=topology))
        for test, series in found.items():
            out[label(test, topology, len(topologies) > 1)] = series
    return out


def _kept(query: SidesQuery, labels: dict[str, dict[str, str]]) -> tuple[str, ...]:
    if query.keep is None:
        return tuple(sorted(labels))
    return tuple(r for r in sorted(labels) if query.keep.matches(
        labels[r].get(keys.LABEL_TEST_NAME, r),
        [g for g in labels[r].get(keys.LABEL_TESTED_GROUPS, "").split(";") if g],
        [c for c in labels[r].get(keys.LABEL_TESTED_COMMANDS, "").split(";") if c]))


def read_sides(client: redis.Redis, query: SidesQuery) -> SidesRead:
    """Both sides of ``query``, windowed and filtered (module doc)."""
    base_selector = replace(query.baseline, last_n=CHANGE_POINT_HISTORY) \
        if query.change_point_window else query.baseline
    base = read_side(client, base_selector, query.topologies)
    comp = read_side(client, query.comparison, query.topologies)
    marked = suspect_marks.any_marked(client, scopes_of(base, query.baseline.metric)
                                      | scopes_of(comp, query.comparison.metric))
    base, notes = drop_suspect(client, base, query.baseline.metric, marked)
    comp, more = drop_suspect(client, comp, query.comparison.metric, marked)
    notes += more
    if query.change_point_window and base:
        trimmed, notes = after_last_change({t: s.points for t, s in base.items()})
        base = {t: replace(s, points=trimmed[t]) for t, s in base.items()}
    labels = {r: (base.get(r) or comp[r]).labels for r in set(base) | set(comp)}
    return SidesRead(base, comp, _kept(query, labels), tuple(notes))


def read_sides_per_platform(client: redis.Redis, query: SidesQuery) -> dict[str, SidesRead]:
    """Both sides read once over every platform (one ``TS.MRANGE`` each, not one per side,
    platform and topology: on commits' by.hash series each costs the server a walk of the
    commit's label index; both sent before either reply is read, so the server answers the
    second while the first is made Python), then per platform the rows :func:`read_sides`
    reads with that platform and the topologies either side has there: each platform either
    side has. Whether any suspect mark exists is asked once for them all."""
    # commits' series by their keys where the writer kept them (datasink/commit_series.py)
    found = commit_series.read(client, [query.baseline, query.comparison]) or [
        _per_platform(series, selector.metric) for series, selector in zip(
            reader.read_series_many(client, [query.baseline, query.comparison]),
            (query.baseline, query.comparison))]
    # whether any scope read has a suspect mark: one round trip for every platform and side
    marked = suspect_marks.any_marked(client, {sid.scope for side in found
                                               for pairs in side.values()
                                               for sid, s in pairs if s.points})
    out = {}
    for platform in sorted(set(found[0]) | set(found[1])):
        base, comp = found[0].get(platform, []), found[1].get(platform, [])
        several = len({sid.topology for sid, _ in base + comp}) > 1
        kept = [drop_suspect(client, _rows(side, several), query.baseline.metric, marked)
                for side in (base, comp)]
        rows = [r for r, _ in kept]
        labels = {r: (rows[0].get(r) or rows[1][r]).labels for r in set(rows[0]) | set(rows[1])}
        out[platform] = SidesRead(rows[0], rows[1], _kept(query, labels),
                                  tuple(n for _, notes in kept for n in notes))
    return out


def _per_platform(series: list[reader.Series],
                  metric: str) -> dict[str, list[tuple[keys.SeriesId, reader.Series]]]:
    out: dict[str, list[tuple[keys.SeriesId, reader.Series]]] = {}
    for s in series:
        sid = keys.parse_key(s.key, metric)
        out.setdefault(sid.platform, []).append((sid, s))
    return out


def _rows(found: list[tuple[keys.SeriesId, reader.Series]],
          several: bool) -> dict[str, reader.Series]:
    """Series per row (:func:`read_side`'s names); two of one row are ambiguous, as there."""
    out: dict[str, reader.Series] = {}
    for sid, series in found:
        row = label(sid.test_name, sid.topology, several)
        if row in out:
            raise reader.AmbiguousSelectorError(
                f"{sid.test_name} {sid.metric}: several series match, narrow the selector: "
                f"{out[row].key}, {series.key}")
        out[row] = series
    return out


def platforms_with(client: redis.Redis, metric: str) -> list[str]:
    """Platforms that have series of ``metric``: the hint when a side found nothing."""
    found = reader.series_labels(client, [f"{keys.LABEL_METRIC}={keys.label_value(metric)}",
                                          f"{keys.LABEL_PLATFORM}!="], [keys.LABEL_PLATFORM])
    return sorted({x[keys.LABEL_PLATFORM] for x in found if x.get(keys.LABEL_PLATFORM)})


def _series_label(series: reader.Series) -> str:
    parsed = keys.parse_key(series.key)
    return f"{parsed.platform}/{parsed.topology}"


@dataclass(frozen=True)
class HistoryQuery:
    """A report's history: the metric of its rows on a branch, the compared commits marked."""

    metric: str
    branch: str
    rows: tuple[str, ...]
    commits: tuple[str, ...] = ()
    platform: str | None = None


def history_of(client: redis.Redis, query: HistoryQuery) -> History:
    """Per row, its series on the branch (one line per platform and topology) and where the
    compared commits have points (a marker at each commit's newest point)."""
    history = History(branch=query.branch)
    for row in query.rows:
        name, topology = split(row)
        sel = reader.SeriesSelector(metric=query.metric, side=keys.Side("branch", query.branch),
                                    test_name=name, platform=query.platform, topology=topology)
        history.lines[row] = [(_series_label(s), s.points)
                              for s in reader.read_series(client, sel) if s.points]
        marks: list[tuple[str, int]] = []
        for sha in query.commits:
            hsel = replace(sel, side=keys.Side("hash", sha))
            marks += [(sha[:10], t) for s in reader.read_series(client, hsel)
                      for t, _ in s.points[-1:]]
        history.markers[row] = marks
    if not any(history.lines.values()):
        history.note = f"no points on branch {query.branch} in the datasink for these tests"
    return history
