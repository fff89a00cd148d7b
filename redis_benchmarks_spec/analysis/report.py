"""Render a :class:`ComparisonReport` as a rich table, GitHub Markdown or JSON.

Nothing is computed here beyond formatting: every number comes from the report.
"""

from __future__ import annotations

import json
import re
import unicodedata
from collections.abc import Callable

from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.analysis.compare import (
    BUSY,
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    Comparison,
    ComparisonReport,
    metric_direction,
)
from redis_benchmarks_spec.analysis.context import CompareContext, SideInfo, short
from redis_benchmarks_spec.analysis.host_noise import ACROSS_PLATFORMS_NOTE, host_table
from redis_benchmarks_spec.analysis.shown import by_decided, hidden_note, metric_name
from redis_benchmarks_spec.common.numbers import plain, plain_p
from redis_benchmarks_spec.results import binary
from redis_benchmarks_spec.results.memory import MEMORY_METRICS

VERDICT_STYLE = {REGRESSION: "bold red", IMPROVEMENT: "bold green", SUSPECT: "bold yellow",
                 UNKNOWN: "yellow", BUSY: "bold magenta", NO_CHANGE: "dim"}
VERDICT_ICON = {REGRESSION: ":red_circle:", IMPROVEMENT: ":green_circle:",
                SUSPECT: ":warning:", UNKNOWN: ":grey_question:", BUSY: ":hourglass:",
                NO_CHANGE: ":white_circle:"}
NA = "–"


def _num(value: float | None) -> str:
    """A metric value with a sensible number of digits."""
    if value is None:
        return NA
    if abs(value) >= 1000:
        return f"{value:,.0f}"
    return plain(value, 4)


def _pct(value: float | None) -> str:
    return NA if value is None else f"{value:+.2f}%"


def _ci(row: Comparison) -> str:
    if row.ci_low_pct is None or row.ci_high_pct is None:
        return "unbounded"
    return f"[{row.ci_low_pct:+.2f}%, {row.ci_high_pct:+.2f}%]"


def _p(row: Comparison) -> str:
    if row.p_value is None:
        return NA
    adj = NA if row.p_adjusted is None else plain_p(row.p_adjusted)
    return f"{plain_p(row.p_value)} ({adj})"


T_TAG = " (t)"


def _is_t(row: Comparison) -> bool:
    return row.method.startswith("mean")  # paired rows with the Student t method


def _change(row: Comparison) -> str:
    """The change; rows whose estimator is not Hodges-Lehmann say which it is."""
    return _pct(row.change_pct) + (T_TAG if _is_t(row) and row.change_pct is not None else "")


def change_cell(row: Comparison) -> str:
    """The change cell as every report shows it."""
    return _change(row)


def change_header(report: ComparisonReport) -> str:
    """The change column's name: the estimator, and the mark of rows using another one."""
    return ("Change (HL, or t where marked)" if any(_is_t(r) for r in report.rows)
            else "Change (HL)")


def _ratio(row: Comparison) -> str:
    return _pct(row.median_ratio_pct)


def _needed(row: Comparison) -> str:
    return NA if row.runs_needed is None else str(row.runs_needed)


def _cv(row: Comparison) -> str:
    def one(v: float | None) -> str:
        return NA if v is None else f"{v * 100:.1f}%"
    return f"{one(row.cv_baseline)} / {one(row.cv_comparison)}"


def _n(row: Comparison) -> str:
    return f"{row.n_baseline} / {row.n_comparison}"


def _spread(row: Comparison) -> str:
    """The measured run-to-run spread (SD of the per-pair log ratios) and the floor the row
    was judged against."""
    sd = NA if row.pair_sd_pct is None else f"{row.pair_sd_pct:.1f}%"
    floor = NA if row.noise_floor_pct is None else f"±{row.noise_floor_pct:g}%"
    source = f" (spread: {row.spread_from})" if row.spread_from else ""
    return f"{sd} / {floor}{source}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}" + ("" if n == 1 else "s")


def counted_rows(report: ComparisonReport) -> str:
    """What the report's rows are: "2 tests", or a memory report's "6 figures of 1 test"
    (each row one figure of a test)."""
    tests = len({row.test for row in report.rows})
    if any(row.metric in MEMORY_METRICS for row in report.rows):
        return f"{_plural(len(report.rows), 'figure')} of {_plural(tests, 'test')}"
    return _plural(len(report.rows), "test")


def _summary_line(report: ComparisonReport) -> str:
    s = report.summary
    busy = f", {s[BUSY]} busy" if s.get(BUSY) else ""
    suspect = f", {s[SUSPECT]} suspect" if s.get(SUSPECT) else ""
    return (f"{s.get(REGRESSION, 0)} regression(s), {s.get(IMPROVEMENT, 0)} improvement(s)"
            f"{suspect}, {s.get(UNKNOWN, 0)} unknown{busy}, {s.get(NO_CHANGE, 0)} no change "
            f"({counted_rows(report)})")


def _direction_note(report: ComparisonReport) -> str:
    better = "higher" if metric_direction(report.options.metric) > 0 else "lower"
    return f"`{report.options.metric}` ({better} is better)"


def _side_text(side: SideInfo) -> str:
    parts = [side.label or "?"]
    if side.platform:
        parts.append(f"platform {side.platform}")
    named = set(side.label.split()[1:]) if side.label else set()  # "version 7.0.15"
    commits = [c for c in side.commits if c not in named]
    if commits:
        parts.append("commit " + ", ".join(short(c) for c in commits[:3])
                     + (f" (+{len(commits) - 3})" if len(commits) > 3 else ""))
    versions = [v for v in side.versions if v not in named]  # said once, by the label
    if versions:
        parts.append("version " + ", ".join(versions[:3]))
    parts.append(f"{side.runs} run(s)")
    return "; ".join(parts)


def _where(context: CompareContext) -> str:
    """Where the runs were taken (platform, variant, topology), and whether paired."""
    where = [f"{name} {', '.join(values)}" for name, values in (
        ("platform", context.platforms), ("build variant", context.build_variants),
        ("topology", context.topologies)) if values]
    return "; ".join(where + (["interleaved runs, paired by repetition"]
                              if context.paired else []))


def _host_notes(context: CompareContext) -> list[str]:
    """The platform comparison's caveat, the dependencies the sides ran at different
    versions and the host-noise flags."""
    notes = [ACROSS_PLATFORMS_NOTE] if context.across_platforms else []
    notes += binary.change_notes(context.dependency_changes)
    return notes + [f"flag: {flag}" for flag in context.noise_flags]


def header_lines(context: CompareContext | None) -> list[str]:
    """What was compared, as plain lines: each side, then where (platform, variant...),
    then the platform caveat and host-noise flags."""
    if context is None:
        return []
    lines = [f"baseline:   {_side_text(context.baseline)}",
             f"comparison: {_side_text(context.comparison)}"]
    where = _where(context)
    return lines + ([where] if where else []) + _host_notes(context)


def _footnote(report: ComparisonReport) -> str:
    o = report.options
    # the abbreviations of the rows' methods; an unpaired comparison has no pairs to explain
    terms = (" (HL = Hodges-Lehmann; t = mean of per-pair log ratios, Student t interval)"
             if "per-pair" in report.method else "")
    return (f"Change and its {o.confidence:.0%} confidence interval (CI), as % of the "
            f"baseline: {report.method}"
            f"{terms}. "
            "Median ratio: comparison median / baseline median - 1 (a different estimator, "
            "shown for reference; the verdict uses the change). Verdict: REGRESSION/IMPROVEMENT "
            f"when the CI excludes 0, the change exceeds the ±{o.noise_floor_pct:g}% noise "
            f"floor and the Benjamini-Hochberg adjusted p (across all {counted_rows(report)}) "
            f"is below alpha={o.alpha:g}; NO CHANGE when the CI lies inside the noise floor; "
            "otherwise UNKNOWN with the estimated runs per side that would likely decide it "
            "(runs needed), or BUSY when pairs were left out because other processes disturbed "
            "them; SUSPECT when a timed change has the opposite sign to the decided "
            "instruction count of the same runs. p (adj) = raw p-value (BH-adjusted). "
            "n b / c = points per side (pairs used, when paired). CV = coefficient of "
            "variation (standard deviation / mean) per side. Spread / floor = the "
            "measured SD of the per-pair log ratios and the noise floor that row was judged "
            f"against{_floor_note(o.floor_note)}.")


def _floor_note(note: str) -> str:
    return f" ({note})" if note else ""


# --- rich ----------------------------------------------------------------------------------


def to_rich_table(report: ComparisonReport) -> Table:
    """A terminal table of every row of the report's own metric, verdicts coloured."""
    return _rich_table(report, report.context)


def rich_tables(report: ComparisonReport) -> list[Table]:
    """A table per judged metric, the most decided first (:func:`by_decided`); the header
    of what was compared on the first."""
    return [_rich_table(r, report.context if i == 0 else None)
            for i, r in enumerate(by_decided(report))]


def _rich_table(report: ComparisonReport, context: CompareContext | None) -> Table:
    title = "\n".join([*(escape(line) for line in header_lines(context)),
                       f"{_direction_note(report)}: {_summary_line(report)}"])
    table = Table(title=title, caption=_footnote(report), caption_justify="left")
    for col, justify in (("test", "left"), ("n b / c", "right"), ("baseline median", "right"),
                         ("comparison median", "right"), ("median ratio", "right"),
                         ("c" + change_header(report)[1:], "right"), ("95% CI", "right"),
                         ("p (adj)", "right"),
                         ("CV b / c", "right"), ("spread / floor", "right"),
                         ("verdict", "left"), ("runs needed", "right"),
                         ("why", "left")):
        table.add_column(col, justify=justify)  # type: ignore[arg-type]
    for row in _ordered(report):
        style = VERDICT_STYLE.get(row.verdict, "")
        why = "" if row.verdict == NO_CHANGE else escape(row.reason)
        table.add_row(escape(label(row)), _n(row), _num(row.baseline_median),
                      _num(row.comparison_median), _ratio(row), _change(row), _ci(row),
                      _p(row), _cv(row), _spread(row), f"[{style}]{row.verdict}[/]",
                      _needed(row) if row.verdict in (UNKNOWN, BUSY) else "", why)
    return table


def hosts_rich_table(context: CompareContext | None) -> Table | None:
    """Each side's platform description and host noise, or None without platforms."""
    if context is None or not context.hosts:
        return None
    header, rows = host_table(context.hosts)
    table = Table(title="Platforms")
    for col in header:
        table.add_column(escape(col), justify="left")
    for row in rows:
        table.add_row(*(escape(cell) for cell in row))
    return table


def label(row: Comparison) -> str:
    """The row's test, and its figure when the row is one of a memory table's."""
    return f"{row.test}: {row.metric}" if row.metric in MEMORY_METRICS else row.test


def _ordered(report: ComparisonReport) -> list[Comparison]:
    rank = {REGRESSION: 0, IMPROVEMENT: 1, SUSPECT: 2, BUSY: 3, UNKNOWN: 4, NO_CHANGE: 5}
    return sorted(report.rows, key=lambda r: (rank.get(r.verdict, 9), label(r)))


# --- markdown ------------------------------------------------------------------------------


def md_code(text: str) -> str:
    """``text`` as a Markdown code span that shows it literally, whatever it holds.

    Branch names come from outside (git allows `` ` ``, ``<``, ``@``, ``[`` ... and any
    Unicode): in a code span they cannot mention anyone, open HTML or links, or break out
    (the fence is longer than any run of backticks inside). Invisible and direction-changing
    characters (U+202E ...) are shown as ``<U+202E>`` so a name cannot pose as another.
    """
    shown = "".join(f"<U+{ord(c):04X}>" if unicodedata.category(c)[0] == "C"
                    or unicodedata.category(c) in ("Zl", "Zp") else c for c in text)
    longest = max((len(run) for run in re.findall("`+", shown)), default=0)
    fence = "`" * (longest + 1)
    pad = " " if shown.startswith("`") or shown.endswith("`") else ""
    return f"{fence}{pad}{shown}{pad}{fence}"


def _md_cell(text: str) -> str:
    """Escape what would break a GFM table cell."""
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _md_table(header: list[str], rows: list[list[str]]) -> list[str]:
    def line(cells: list[str]) -> str:
        return "| " + " | ".join(_md_cell(c) for c in cells) + " |"
    out = [line(header), "| " + " | ".join("---" for _ in header) + " |"]
    out.extend(line(r) for r in rows)
    return out


MD_HEADER = ["Test", "n b / c", "Baseline median", "Comparison median", "Median ratio",
             "Change (HL)", "95% CI", "p (adj)", "CV b / c", "Spread / floor", "Verdict"]


def _md_row(row: Comparison) -> list[str]:
    return [f"`{label(row)}`", _n(row), _num(row.baseline_median), _num(row.comparison_median),
            _ratio(row), _change(row), _ci(row), _p(row), _cv(row), _spread(row), row.verdict]


def _md_flagged_row(row: Comparison) -> list[str]:
    return [*_md_row(row), row.reason]


def _md_unknown_row(row: Comparison) -> list[str]:
    return [*_md_row(row)[:-1], _needed(row), row.reason]


def _md_section(title: str, rows: list[Comparison],
                render: Callable[[Comparison], list[str]], header: list[str],
                level: str = "###") -> list[str]:
    if not rows:
        return []
    return [f"{level} {title} ({len(rows)})", "", *_md_table(header, [render(r) for r in rows]),
            ""]


def _md_side(side: SideInfo) -> list[str]:
    commits = ", ".join(f"`{short(c)}`" for c in side.commits) or NA
    return [md_code(side.label) if side.label else NA, commits,
            ", ".join(side.versions) or NA, str(side.runs)]


def markdown_header(context: CompareContext | None) -> list[str]:
    """What was compared, as a small Markdown table and a line saying where."""
    if context is None:
        return []
    rows = list(zip(["Source", "Commits", "Versions", "Runs"], _md_side(context.baseline),
                    _md_side(context.comparison)))
    if context.across_platforms:
        rows.insert(1, ("Platform", md_code(context.baseline.platform),
                        md_code(context.comparison.platform)))
    lines = [*_md_table(["", "Baseline", "Comparison"], [list(r) for r in rows]), ""]
    where = _where(context)
    lines += [f"On {where}.", ""] if where else []
    notes = [f"> {note}" for note in _host_notes(context)]
    return lines + ([*notes, ""] if notes else []) + hosts_markdown(context)


def hosts_markdown(context: CompareContext) -> list[str]:
    """Each side's platform description and host noise, as a Markdown table."""
    if not context.hosts:
        return []
    header, rows = host_table(context.hosts)
    # the values come from records other hosts wrote: shown literally, never as Markdown
    shown = [[fact, *(md_code(v) for v in values)] for fact, *values in rows]
    return ["**Platforms**", "", *_md_table(header, shown), ""]


def markdown_verdicts(report: ComparisonReport, level: str = "###") -> list[str]:
    """Regressions, improvements, unknowns, no change (folded) and problems (folded)."""
    lines: list[str] = []
    header = [change_header(report) if h == "Change (HL)" else h for h in MD_HEADER]
    lines += _md_section(f"{VERDICT_ICON[REGRESSION]} Regressions",
                         report.by_verdict(REGRESSION), _md_flagged_row, [*header, "Why"],
                         level)
    lines += _md_section(f"{VERDICT_ICON[IMPROVEMENT]} Improvements",
                         report.by_verdict(IMPROVEMENT), _md_flagged_row, [*header, "Why"],
                         level)
    unknown_header = [*header[:-1], "Runs/side needed", "Why"]
    lines += _md_section(f"{VERDICT_ICON[SUSPECT]} Suspect (timed change against the decided "
                         "instruction count)", report.by_verdict(SUSPECT), _md_flagged_row,
                         [*header, "Why"], level)
    lines += _md_section(f"{VERDICT_ICON[BUSY]} Busy (pairs disturbed by other processes)",
                         report.by_verdict(BUSY), _md_unknown_row, unknown_header, level)
    lines += _md_section(f"{VERDICT_ICON[UNKNOWN]} Unknown", report.by_verdict(UNKNOWN),
                         _md_unknown_row, unknown_header, level)
    no_change = report.by_verdict(NO_CHANGE)
    if no_change:
        lines += [f"<details><summary>No change ({len(no_change)})</summary>", "",
                  *_md_table(header, [_md_row(r) for r in no_change]), "", "</details>", ""]
    if report.problems:
        lines += [f"<details><summary>Problems ({len(report.problems)})</summary>", ""]
        lines += [f"- {_md_cell(p)}" for p in report.problems] + ["", "</details>", ""]
    return lines


def summary_markdown(report: ComparisonReport) -> str:
    """The bold verdict-count line."""
    return f"**{_summary_line(report)}** on {_direction_note(report)}"


def footnote(report: ComparisonReport) -> str:
    """How the columns and verdicts are defined."""
    return _footnote(report)


def to_markdown(report: ComparisonReport, title: str = "Benchmark comparison") -> str:
    """A GitHub pull-request comment: header, then each judged metric (the most decided
    first) with its summary, regressions, improvements, unknowns; a hidden metric is said."""
    lines = [f"## {title}", "", *markdown_header(report.context)]
    lines += metrics_markdown(report)
    if report.memory is not None:
        lines += memory_markdown(report.memory)
    return "\n".join(lines)


def metrics_markdown(report: ComparisonReport, level: str = "###") -> list[str]:
    """Every judged metric, the most decided first (:func:`by_decided`): the first one's
    summary and verdicts at ``level``, each other in its own titled section; then the line
    naming the measured metrics not shown."""
    first, *others = by_decided(report)
    lines = [summary_markdown(first), ""]
    if others:
        lines += [f"Decided first: {metric_name(first.options.metric)}; also below: "
                  + ", ".join(metric_name(o.options.metric) for o in others) + ".", ""]
    lines += [*markdown_verdicts(first, level), f"<sub>{_footnote(first)}</sub>", ""]
    for other in others:
        lines += metric_markdown(other, level)
    note = hidden_note(report)
    return lines + ([f"> {note}", ""] if note else [])


def memory_markdown(report: ComparisonReport, level: str = "###") -> list[str]:
    """The same runs judged on the memory each figure took after the preload."""
    title = (f"{level} Memory after the preload (noise floor "
             f"±{report.options.noise_floor_pct:g}%)")
    return [title, "", summary_markdown(report), "",
            *markdown_verdicts(report, level + "#"), f"<sub>{_footnote(report)}</sub>", ""]


def metric_markdown(report: ComparisonReport, level: str = "###") -> list[str]:
    """The same runs judged on another metric, as a titled section."""
    title = (f"{level} {metric_name(report.options.metric)} ({report.options.metric}, noise "
             f"floor ±{report.options.noise_floor_pct:g}%)")
    return [title, "", summary_markdown(report), "",
            *markdown_verdicts(report, level + "#"), f"<sub>{_footnote(report)}</sub>", ""]


# --- json ----------------------------------------------------------------------------------


def to_json(report: ComparisonReport) -> str:
    """The report as indented JSON (``ComparisonReport.from_dict`` reads it back)."""
    return json.dumps(report.to_dict(), indent=2, sort_keys=True)


def render(report: ComparisonReport, fmt: str) -> str | Table:
    """``table`` -> rich Table; ``markdown`` / ``json`` -> text."""
    if fmt == "table":
        return to_rich_table(report)
    if fmt == "markdown":
        return to_markdown(report)
    if fmt == "json":
        return to_json(report)
    raise ValueError(f"unknown format {fmt!r} (table, markdown, json)")
