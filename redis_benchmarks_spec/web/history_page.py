"""What a test's history page shows: one chart per series of the test and metric on a branch
(a platform, topology and build variant each), with each point's commit (read by
:mod:`inputs.history`, as ``rbs history`` reads it), the change points of the series
(:mod:`analysis.branch_changes`), the watch's alerts on those commits and the host
fingerprint boundaries (:mod:`datasink.watch_store`)."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import quote

import redis
from markupsafe import Markup

from redis_benchmarks_spec.analysis.branch_changes import changes_of
from redis_benchmarks_spec.analysis.changepoints import ChangePointOptions
from redis_benchmarks_spec.analysis.history import History, HistoryQuery, when_utc
from redis_benchmarks_spec.common.numbers import plain
from redis_benchmarks_spec.datasink import alert_triage, keys, watch_store
from redis_benchmarks_spec.inputs.history import read_histories
from redis_benchmarks_spec.web.charts import Chart, ChartPoint, history_svg
from redis_benchmarks_spec.web.rows import history_rows

MAX_POINTS = 500


@dataclass
class SeriesView:
    """One series' chart and the rows of its table (newest first)."""

    key: str
    platform: str
    svg: str
    history: History
    marks: dict[str, list[str]] = field(default_factory=dict)
    table: Markup = field(default_factory=Markup)  # its table's rows (web/rows.py)


def _boundaries(client: redis.Redis, where: watch_store.Branch, key: str,
                history: History) -> list[tuple[str, int]]:
    """Where the host fingerprint a point was taken under differs from the previous one's."""
    prints = watch_store.fingerprints(client, where, key)
    out, last = [], None
    for p in history.points:
        fp = prints.get(p.ts_ms)
        if fp is not None and last is not None and fp != last:
            out.append((f"host {fp[:8]}", p.ts_ms))
        last = fp if fp is not None else last
    return out


_PLAIN_ID = re.compile(r"^[A-Za-z0-9_.~:-]*$")


def _quoted(run_id: str) -> str:
    """``quote(run_id, safe="")`` (a run id is mostly letters, digits and colons: those
    quoted at once; quote took ~6 us an id, and a page links 2,000)."""
    return run_id.replace(":", "%3A") if _PLAIN_ID.match(run_id) else quote(run_id, safe="")


def _chart(history: History, label: str, log: list[dict[str, str]],
           said: dict[str, alert_triage.Triage]) -> tuple[Chart, dict, list]:
    """The chart of one history, the marks (alert, notes) per commit and the rows of its
    table (each point's time and value formatted once, for its hover title and its row)."""
    first: dict[str, int] = {}
    for p in history.points:
        first.setdefault(p.commit, p.ts_ms)
    chart = Chart(label, history.query.metric)
    shown = []
    for p in history.points:
        when, value = when_utc(p.ts_ms), plain(p.value, 4)
        url = f"/run/{_quoted(p.run_id)}" if p.run_id else ""
        chart.points.append(ChartPoint(
            p.ts_ms, p.value, url or "#", f"{p.commit[:12] or 'unknown commit'}  {when}  {value}"
            + ("  SUSPECT (measured on a bad artifact)" if p.suspect else "")))
        shown.append((when, value, p.commit, url))
    marks: dict[str, list[str]] = {}
    for line in log:
        sha = line["sha"]
        if sha in first and line["kind"] == "alert":
            word = f" ({said[sha].state})" if sha in said else ""
            chart.alerts.append((f"ALERT {sha[:8]}{word}", first[sha]))
        if sha in first:
            marks.setdefault(sha, []).append(f"{line['kind']}: {line['text']}")
    changes = changes_of(history, ChangePointOptions())  # the suspect points left out
    chart.steps = [(f"step {s.step.change_pct:+.1f}%", s.after.ts_ms) for s in changes.steps]
    rows = [(when, value, sha[:12], url, "; ".join(marks.get(sha, [])))
            for when, value, sha, url in reversed(shown)]
    return chart, marks, rows


def history_views(client: redis.Redis, scope: keys.Scope, query: HistoryQuery) -> list[SeriesView]:
    """Every series of the test and metric on the branch (narrowed by platform), charted:
    read together (:func:`inputs.history.read_histories`), in the scope."""
    where = watch_store.Branch(scope.github_org, scope.github_repo, query.branch)
    log = watch_store.log_lines(client, where)
    said = alert_triage.triages(client, where)
    views = []
    for history in read_histories(client, query, scope):
        sid = history.query
        own = [x for x in log if x["kind"] != "host-changed"
               or x["text"].startswith(f"host changed on {sid.platform} ")]
        label = f"{sid.platform} / {sid.topology} / {sid.build_variant}"
        chart, marks, rows = _chart(history, label, own, said)
        chart.boundaries = _boundaries(client, where, history.series_key, history)
        views.append(SeriesView(history.series_key, sid.platform or "", history_svg(chart),
                                history, marks, history_rows(rows)))
    return views
