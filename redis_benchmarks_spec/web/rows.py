"""The rows of the site's two long tables as HTML, written here rather than by a template.

A comparison of every platform shows 2,204 rows of nine cells, a test's history on every
platform 2,000 rows of five; Jinja took ~5 times as long as a format string per row (its
context look-ups, a call per global, a ``Markup`` per value: ~100 ms of a compare page,
against ~20). Every value is escaped here with :func:`html.escape`, as the templates escape
theirs, and the rows are handed to the template as :class:`markupsafe.Markup`.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape

from markupsafe import Markup

from redis_benchmarks_spec.analysis.compare import Comparison
from redis_benchmarks_spec.analysis.function_movers import FunctionMove
from redis_benchmarks_spec.common.numbers import plain

MOVERS_SHOWN = 5


def pct(value: float | None) -> str:
    """A change in percent as the tables show it (``+1.23 %``), ``-`` when none."""
    return "-" if value is None else f"{value:+.2f} %"


def plain4(value: float | None) -> str:
    """A value with 4 significant digits, plain (:func:`common.numbers.plain`), or ``-``."""
    return "-" if value is None else plain(value, 4)


def compare_rows(rows: Iterable[Comparison],
                 movers: Mapping[str, Sequence[FunctionMove]]) -> Markup:
    """The compare table's rows: test, verdict, change, interval, both medians, sizes, the
    functions that moved most, the reason."""
    out = []
    for r in rows:
        test, verdict = escape(r.test), escape(r.verdict)
        moved = "".join(f"<code>{escape(m.function)}</code> {m.share_of_total_pct:+.2f}%<br>"
                        for m in list(movers.get(r.test, ()))[:MOVERS_SHOWN])
        out.append(
            f'<tr data-test="{test}"><td>{test}</td><td class="{verdict.replace(" ", "-")}" '
            f'data-verdict="{verdict}">{verdict}</td><td>{pct(r.change_pct)}</td>'
            f"<td>[{pct(r.ci_low_pct)}, {pct(r.ci_high_pct)}]</td>"
            f"<td>{plain4(r.baseline_median)}</td><td>{plain4(r.comparison_median)}</td>"
            f"<td>{r.n_baseline} / {r.n_comparison}</td><td>{moved}</td>"
            f'<td class="note">{escape(r.reason)}</td></tr>')
    return Markup("\n".join(out))


def history_rows(rows: Iterable[tuple[str, str, str, str, str]]) -> Markup:
    """The history table's rows (newest first): time, value, commit, a link to the run's
    page, the commit's alerts and notes."""
    out = []
    for when, value, commit, run, marks in rows:
        link = f'<a href="{escape(run)}">run</a>' if run else ""
        out.append(f"<tr><td>{escape(when)}</td><td>{escape(value)}</td>"
                   f"<td><code>{escape(commit)}</code></td><td>{link}</td>"
                   f'<td class="alert">{escape(marks)}</td></tr>')
    return Markup("\n".join(out))
