"""``rbs report``: one self-contained HTML file (inline CSS and SVG, no script, nothing
fetched at view time) built from :class:`~.report_data.ReportData`.

The page is a list of sections, each a small function ``(data, out_dir) -> html``
(:data:`SECTIONS`), so a new section (say, a sweep plot) is one function and one entry.
"""

from __future__ import annotations

import html
import os
from collections.abc import Callable
from pathlib import Path

import numpy as np
from hdrh.histogram import HdrHistogram

from redis_benchmarks_spec.analysis import plots, report, shown
from redis_benchmarks_spec.analysis.compare import Comparison, ComparisonReport
from redis_benchmarks_spec.analysis.lab_table import LabTable
from redis_benchmarks_spec.analysis.lab_table_report import section_lab_instructions
from redis_benchmarks_spec.analysis.memory_report import section_memory
from redis_benchmarks_spec.analysis.movers_report import section_movers
from redis_benchmarks_spec.analysis.platform_report import section_platforms
from redis_benchmarks_spec.analysis.rate_curve import section_rate_curves
from redis_benchmarks_spec.analysis.report import footnote, header_lines
from redis_benchmarks_spec.analysis.report_data import ReportData, SideRuns
from redis_benchmarks_spec.analysis.sweep_report import section_sweeps
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.common.numbers import plain, plain_p
from redis_benchmarks_spec.loadgen import histogram
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import INSTRUMENTED_NOTE

Section = Callable[[ReportData, Path], str]
CSS = """
body{font-family:system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
table{border-collapse:collapse;font-size:13px;margin:.5em 0;max-width:100%}
td,th{border:1px solid #ccc;padding:3px 6px;text-align:right;overflow-wrap:anywhere}
td:first-child,th:first-child{text-align:left}
.REGRESSION{color:#b00;font-weight:bold}.IMPROVEMENT{color:#070;font-weight:bold}
.UNKNOWN{color:#a60}.BUSY{color:#a0a}.SUSPECT{color:#b80;font-weight:bold}.flag{background:#fec;padding:0 4px;border-radius:3px;margin-right:4px}
figure{margin:.5em 0}figure svg{max-width:100%;height:auto}
.note{color:#666;font-size:13px}
"""
SPECTRUM_POINTS = 200


def esc(text: object) -> str:
    return html.escape(str(text), quote=True)


def _figure(kind: str, test: str, svg: str) -> str:
    return f'<figure class="plot" data-plot="{esc(kind)}" data-test="{esc(test)}">{svg}</figure>'


def _pct(v: float | None) -> str:
    return "–" if v is None else f"{v:+.2f}%"


# --- sections ------------------------------------------------------------------------------


def section_header(data: ReportData, out_dir: Path) -> str:
    lines = header_lines(data.report.context if data.report else None)
    items = "".join(f"<li>{esc(line)}</li>" for line in lines)
    return f"<h1>{esc(data.title)}</h1>{_metric_line(data)}<ul>{items}</ul>"


def _metric_line(data: ReportData) -> str:
    """The metric the verdicts are decided on (the one with the most decided tests, as the
    terminal leads with it), and the others the page also judges."""
    if data.report is None:
        return f"<p>metric <code>{esc(data.metric)}</code></p>"
    judged = shown.by_decided(data.report)
    lead = judged[0].options.metric
    also = "".join(f"; also judged: {esc(shown.metric_name(r.options.metric))} "
                   f"<code>{esc(r.options.metric)}</code>" for r in judged[1:])
    return (f'<p class="decided-metric" data-metric="{esc(lead)}">decided on '
            f"<b>{esc(shown.metric_name(lead))}</b> <code>{esc(lead)}</code>{also}</p>")


def _verdict_row(row: Comparison) -> str:
    ci = ("unbounded" if row.ci_low_pct is None or row.ci_high_pct is None
          else f"[{row.ci_low_pct:+.2f}%, {row.ci_high_pct:+.2f}%]")
    p = "–" if row.p_adjusted is None else plain_p(row.p_adjusted)
    verdict = f'<span class="{esc(row.verdict)}">{esc(row.verdict)}</span>'
    needed = "" if row.runs_needed is None else str(row.runs_needed)
    cells = [f'<a href="#t-{esc(row.test)}">{esc(report.label(row))}</a>',
             f"{row.n_baseline} / {row.n_comparison}", _pct(row.median_ratio_pct),
             esc(report.change_cell(row)), ci, p, verdict, needed, esc(row.reason)]
    return "<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>"


def section_verdicts(data: ReportData, out_dir: Path) -> str:
    """A verdict table per judged metric, the most decided first, and the measured
    metrics not shown."""
    if data.report is None:
        return section_results_table(data, out_dir)
    parts = ["<h2>Verdicts</h2>"]
    for i, r in enumerate(shown.by_decided(data.report)):
        parts.append(_verdict_table(r, "verdicts" if i == 0 else f"verdicts-{i}"))
    note = shown.hidden_note(data.report)
    if note:
        parts.append(f'<p class="note hidden-metrics">{esc(note)}</p>')
    return "".join(parts)


def _verdict_table(r: ComparisonReport, table_id: str) -> str:
    head = ["test", "n b / c", "median ratio", esc("c" + report.change_header(r)[1:]),
            "95% CI", "p (adj)", "verdict", "runs needed", "why"]
    rows = "".join(_verdict_row(row) for row in r.rows)
    counts = ", ".join(f"{n} {v.lower()}" for v, n in r.summary.items())
    name = shown.metric_name(r.options.metric)
    return (f'<section class="metric" data-metric="{esc(r.options.metric)}">'
            f'<h3>{esc(name)} <code>{esc(r.options.metric)}</code></h3><p>{esc(counts)}</p>'
            f'<table id="{table_id}"><tr>'
            + "".join(f"<th>{h}</th>" for h in head) + f"</tr>{rows}</table>"
            f'<p class="note">{esc(footnote(r))}</p></section>')


def section_results_table(data: ReportData, out_dir: Path) -> str:
    side = data.sides[0]
    rows = []
    for test in data.tests:
        values = side.values(test, data.metric)
        median = plain(float(np.median(values)), 4) if values else "–"
        rows.append(f'<tr><td><a href="#t-{esc(test)}">{esc(test)}</a></td>'
                    f"<td>{len(values)}</td><td>{median}</td>"
                    f"<td>{_instrumented_cell(side, test, data.metric)}</td></tr>")
    return ('<h2>Results</h2><table id="verdicts"><tr><th>test</th><th>runs</th>'
            "<th>median</th><th>measured under a profiler</th></tr>"
            f"{''.join(rows)}</table>")


def _instrumented_cell(side: SideRuns, test: str, metric: str) -> str:
    """The runs of ``test`` whose ``metric`` the table leaves out, and why."""
    left_out = side.instrumented_count(test, metric)
    return "" if not left_out else \
        f'<span class="instrumented">{left_out}, not shown: not the server\'s speed</span>'


def _instrumented_note(sides: list[SideRuns], test: str, what: str,
                       metric: str | None = None) -> str:
    """The line a figure carries when it leaves instrumented runs out (of ``metric``'s, when
    given: a deterministic metric leaves none out)."""
    counts = [f"{side.name} {n}" for side in sides
              if (n := side.instrumented_count(test, metric))]
    if not counts:
        return ""
    return (f'<p class="note instrumented" data-test="{esc(test)}">{esc(what)} not drawn for '
            f"the run(s) {esc(INSTRUMENTED_NOTE)} ({esc(', '.join(counts))})</p>")


def _interval(row: Comparison | None) -> tuple[float, float, float] | None:
    if row is None or row.change_pct is None:
        return None
    low = row.ci_low_pct if row.ci_low_pct is not None else float("-inf")
    high = row.ci_high_pct if row.ci_high_pct is not None else float("inf")
    return row.change_pct, low, high


def _histograms(runs: list[RunResult]) -> tuple[list[HdrHistogram], list[str]]:
    """Decoded histograms of ``runs``, and why the undecodable ones were left out."""
    hists, problems = [], []
    for r in runs:
        if r.result and r.result.histogram:
            try:
                hists.append(histogram.decode(r.result.histogram))
            except ValueError as exc:
                problems.append(f"{r.run_id}: histogram left out: {exc}")
    return hists, problems


def _spectrum(sides: list[SideRuns], test: str) -> str:
    """Merged HDR histograms per side; the tool's own percentiles when it exports none."""
    curves, sources, notes = [], set(), []
    for side in sides:
        runs = side.speed_runs(test)
        hists, problems = _histograms(runs)
        notes += problems
        merged = histogram.merge(hists)
        if merged is not None:
            nines = min(plots.MAX_NINES, np.log10(max(merged.get_total_count(), 10)))
            pcts = 100.0 * (1.0 - 10.0 ** -np.linspace(0, nines, SPECTRUM_POINTS))
            ms = np.array([histogram.percentile_ms(merged, float(p)) for p in pcts])
            curves.append((side.name, pcts, ms))
            sources.add("merged HDR histograms")
        elif reported := _reported_percentiles(runs):
            pcts = np.array(sorted(reported))
            curves.append((side.name, pcts, np.array([reported[p] for p in pcts])))
            sources.add("tool's reported percentiles, median of runs")
    left_out = _instrumented_note(sides, test, "latency")
    note = "".join(f'<p class="note">{esc(n)}</p>' for n in notes) + left_out
    if not curves:
        return note + ("" if left_out else
                       '<p class="note">no latency percentiles in these results</p>')
    return note + _figure("spectrum", test,
                          plots.spectrum_svg(curves, "; ".join(sorted(sources))))


def _reported_percentiles(runs: list[RunResult]) -> dict[float, float]:
    per: dict[float, list[float]] = {}
    for r in runs:
        if r.result:
            for label, ms in r.result.totals.latency.percentiles_ms.items():
                per.setdefault(float(label.lstrip("p")), []).append(ms)
    return {p: float(np.median(v)) for p, v in per.items()}


def _links(sides: list[SideRuns], test: str, out_dir: Path) -> str:
    """Every file a run lists in ``paths`` (logs, flame graphs...), relative to the page,
    one line per run named by its side and its run number on that side."""
    lines = []
    for side in sides:
        for i, run in enumerate(side.runs.get(test, []), start=1):
            items = [f'<a href="{esc(os.path.relpath(path, out_dir))}">{esc(label)}</a>'
                     for label, path in sorted(run.paths.items()) if Path(path).is_file()]
            if items:
                lines.append(f"<li>{esc(side.name)} run {i}: {' · '.join(items)}</li>")
    return f'<details class="links"><summary>files ({len(lines)} runs)</summary><ul>' \
           f'{"".join(lines)}</ul></details>' if lines else ""


def _flags(runs: list[RunResult]) -> str:
    flags = sorted({f for r in runs for f in r.flags})
    return "".join(f'<span class="flag">{esc(f)}</span>' for f in flags)


def section_tests(data: ReportData, out_dir: Path) -> str:
    rows = {r.test: r for r in data.report.rows} if data.report else {}
    floor = data.report.options.noise_floor_pct if data.report else 0.0
    parts = ["<h2>Tests</h2>"]
    for test in data.tests:
        runs = [r for side in data.sides for r in side.runs.get(test, [])]
        sides = [(s.name, s.values(test, data.metric)) for s in data.sides]
        if not runs and not any(values for _, values in sides):
            continue  # a row known only from a saved comparison: nothing to draw
        parts.append(f'<section id="t-{esc(test)}"><h3>{esc(test)} {_flags(runs)}</h3>')
        if any(values for _, values in sides):
            parts.append(_figure("samples", test, plots.samples_svg(
                data.metric, sides, _interval(rows.get(test)), floor)))
        parts.append(_instrumented_note(data.sides, test, shown.metric_name(data.metric),
                                        data.metric))
        parts.append(_spectrum(data.sides, test))
        parts.append(_links(data.sides, test, out_dir) + "</section>")
    return "".join(parts)


def section_history(data: ReportData, out_dir: Path) -> str:
    h = data.history
    if h is None:
        return ('<h2>History</h2><p class="note">no datasink given (rbs report '
                "--history-datasink URL [--history-branch B] adds each metric's history)</p>")
    parts = [f"<h2>History on {esc(h.branch)}</h2>"]
    if h.note:
        parts.append(f'<p class="note">{esc(h.note)}</p>')
    for test, lines in h.lines.items():
        if lines:
            svg = plots.history_svg(data.metric, lines, h.markers.get(test, []))
            parts.append(f"<h3>{esc(test)}</h3>" + _figure("history", test, svg))
    return "".join(parts)


def section_problems(data: ReportData, out_dir: Path) -> str:
    failed = [f"{r.test_name}: {r.status}: {r.reason}" for s in data.sides for r in s.failed]
    problems = [*(data.report.problems if data.report else []), *data.problems, *failed]
    if not problems:
        return ""
    return "<h2>Problems</h2><ul>" + "".join(f"<li>{esc(p)}</li>" for p in problems) + "</ul>"


SECTIONS: list[Section] = [section_header, section_platforms, section_verdicts, section_movers,
                           section_sweeps,
                           section_rate_curves, section_memory, section_tests, section_history,
                           section_lab_instructions,
                           section_problems]


def render(data: ReportData, out_dir: Path, sections: list[Section] | None = None) -> str:
    """The whole page; links are made relative to ``out_dir`` (where it will be written)."""
    body = "\n".join(section(data, out_dir) for section in (sections or SECTIONS))
    return (f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
            f"<title>{esc(data.title)}</title><style>{CSS}</style></head>"
            f"<body>{body}</body></html>\n")


def write(data: ReportData, path: Path) -> Path:
    """Render and write the page (atomically) to ``path``."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(data, path.parent.resolve()))
    tmp.replace(path)
    return path


def write_lab_table(table: LabTable, path: Path, branch: str) -> Path:
    """A page of the lab-wide instruction table alone (``rbs lab table``, the replay)."""
    data = ReportData(f"Where Redis spends its instructions: {branch} at {table.commit[:10]}",
                      INSTRUCTIONS_METRIC, [], lab_table=table)

    def heading(d: ReportData, _out: Path) -> str:
        return f"<h1>{esc(d.title)}</h1>"
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(path.suffix + ".tmp")
    tmp.write_text(render(data, path.parent.resolve(), [heading, section_lab_instructions]))
    tmp.replace(path)
    return path
