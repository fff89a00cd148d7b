"""The pull-request comment's Markdown: formatting only (the numbers come from the reports).

States: "queued" (trigger accepted, nothing finished yet), then one section per platform
and build variant as each finishes, with an overall verdict table on top.
"""

from __future__ import annotations

import time
from collections.abc import Iterator

from redis_benchmarks_spec.analysis.compare import (
    BUSY,
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.context import short
from redis_benchmarks_spec.analysis.report import (
    footnote,
    markdown_header,
    md_code,
    memory_markdown,
    metrics_markdown,
)
from redis_benchmarks_spec.analysis.shown import by_decided
from redis_benchmarks_spec.common.comment_size import GITHUB_MAX_BODY_CHARS, body_chars, fit
from redis_benchmarks_spec.notify.pr_compact import compact_section, full_tables_line, short_note
from redis_benchmarks_spec.notify.pr_summary import FALSE_ALARMS, headline, movers_lines
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section

RUNNING = "running"  # a platform chose its suites and runs them (its section's state)
UNSTABLE_CV = 0.10  # a side whose CV is above this is flagged "unstable"
TITLE = "Benchmark results"
#: the compact form's largest effects per metric, tried in turn until the body fits
COMPACT_KEEP = (20, 10, 5, 2, 0)
PROBLEMS_SHOWN = 3  # runs not judged, named per platform above the sections
PROBLEM_CHARS = 200


def _what(info: PrInfo) -> str:
    # refs come from the pull request: any name git accepts, shown literally
    head = f"head `{short(info.head_sha)}`" + (f" ({md_code(info.head_ref)})"
                                                if info.head_ref else "")
    base = f"base {md_code(info.base_ref or '?')}" + (f" at `{short(info.base_sha)}`"
                                                       if info.base_sha else "")
    return f"Pull request #{info.number}: {head} compared with {base}."


def queued_body(info: PrInfo, platforms: list[str], eta: str = "") -> str:
    """The comment as soon as the trigger is accepted."""
    where = ", ".join(f"`{p}`" for p in platforms) if platforms else "every platform"
    return "\n".join([info.marker, f"**Queued**: benchmarks queued on {where}{eta}.", "",
                      f"## {TITLE}", "", _what(info), "",
                      f":hourglass: Build started; benchmarks queued on {where}.", ""])


def _flags(section: Section, report: ComparisonReport) -> dict[str, list[str]]:
    flags = {test: list(values) for test, values in section.flags.items() if values}
    for row in report.rows:
        cvs = [cv for cv in (row.cv_baseline, row.cv_comparison) if cv is not None]
        if cvs and max(cvs) > UNSTABLE_CV:
            flags.setdefault(row.test, []).append(f"unstable (CV {max(cvs):.0%})")
    return flags


def _sequential_lines(section: Section, report: ComparisonReport) -> list[str]:
    """Per test of the agent's interleaved A/B: verdict, pairs taken, why it stopped."""
    if not section.sequential:
        return []
    verdicts = {row.test: row.verdict for row in report.rows}
    lines = ["Interleaved A/B until decided (group-sequential, alpha spent over the looks):",
             "", "| Test | Verdict | Pairs | Looks at | Stopped because |",
             "| --- | --- | --- | --- | --- |"]
    for test, p in sorted(section.sequential.items()):
        looks = ", ".join(str(n) for n in p.get("looks", []))
        cells = [f"`{test}`", verdicts.get(test, UNKNOWN), str(p.get("pairs", 0)), looks,
                 str(p.get("stopped", ""))[:200]]
        # the record came through the broker: no cell may break out of the table
        lines.append("| " + " | ".join(_cell(c) for c in cells) + " |")
    return [*lines, ""]


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _section_lines(section: Section, report: ComparisonReport | None,
                   keep: int | None = None) -> list[str]:
    """The section's Markdown: every table, or (``keep`` set) the compact form that keeps
    the ``keep`` largest effects per metric and links the report for the rest."""
    notes = section.notes if keep is None else [short_note(n) for n in section.notes]
    lines = [f"### `{section.platform}` · `{section.build_variant}`", ""]
    lines += [f":information_source: {note}" for note in notes]
    lines += [""] if notes else []
    if section.state == RUNNING:
        return lines + [":hourglass: Running.", ""]
    if section.state != "completed" or report is None:
        return lines + [f":x: {section.state}: {section.reason or 'no results'}", ""]
    if keep is not None:
        lines += [full_tables_line(section), "", *compact_section(section, report, keep)]
        return lines + _links_line(section)
    lines += [*markdown_header(report.context), *_sequential_lines(section, report)]
    lines += metrics_markdown(report, level="####")  # the most decided metric first
    if report.memory is not None:
        lines += memory_markdown(report.memory, level="####")
    lines += movers_lines(section.movers, section.changed_files)
    flags = _flags(section, report)
    if flags:
        lines += ["**Flags:** " + "; ".join(f"`{t}`: {', '.join(f)}"
                                             for t, f in sorted(flags.items())), ""]
    return lines + _links_line(section)


def _links_line(section: Section) -> list[str]:
    if not section.links:
        return []
    return [" · ".join(f"[{label}]({url})" for label, url in section.links.items()), ""]


def _counts_table(parts: list[Part]) -> list[str]:
    """Verdict counts per platform, build variant and judged metric (the most decided
    metric first)."""
    out = [("| Platform | Build variant | Regressions | Improvements | Suspect | Unknown | "
            "Busy | No change | Metric |"),
           "| --- | --- | --- | --- | --- | --- | --- | --- | --- |"]
    for s, parsed in parts:
        if parsed is None:
            out.append(f"| `{s.platform}` | `{s.build_variant}` | {s.state} | | | | | | |")
            continue
        for report in by_decided(parsed):
            c = report.summary
            out.append(f"| `{s.platform}` | `{s.build_variant}` | {c.get(REGRESSION, 0)} | "
                       f"{c.get(IMPROVEMENT, 0)} | {c.get(SUSPECT, 0)} | {c.get(UNKNOWN, 0)} | "
                       f"{c.get(BUSY, 0)} | {c.get(NO_CHANGE, 0)} | `{report.options.metric}` |")
    return out + [""]


def _machine_line(sections: list[Section]) -> list[str]:
    """What the pull request cost each platform: wall minutes of every run it made."""
    spent = [(s.platform, s.machine_s) for s in sections if s.machine_s is not None]
    if not spent:
        return []
    return ["Machine time: " + ", ".join(f"`{p}` {m / 60:.1f} min" for p, m in spent)
            + " (wall time of every run it made, server start and preload included; a base "
            "counted at its push is not run again).",
            ""]


Part = tuple[Section, "ComparisonReport | None"]  # a section and its parsed report


def _pending_lines(sections: list[Section], pending: list[str]) -> list[str]:
    """Each platform that has not answered yet, since when it runs and where its ETA is (its
    section's queued line): a platform still running is named, never left out."""
    if not pending:
        return []
    running = {s.platform: s for s in sections if s.state == RUNNING}
    said = []
    for platform in pending:
        section = running.get(platform)
        if section is None:
            said.append(f"`{platform}` (no agent has taken the build yet)")
            continue
        since = "" if section.started_ms is None else time.strftime(
            " since %H:%M UTC", time.gmtime(section.started_ms / 1000))
        said.append(f"`{platform}` (running{since}; what it runs and when it should be done "
                    "are in its section)")
    return [":hourglass: Still running on " + ", ".join(said) + ": their tests are added to "
            "this comment when they finish.", ""]


def _not_judged_lines(parts: list[Part]) -> list[str]:
    """Per finished platform, the runs its report could not judge (a failed run, no
    baseline points), named: this run will not answer them, and the line says how to ask
    again (the compact form of a section does not list its problems)."""
    lines = []
    for section, report in parts:
        if report is None or not report.problems:
            continue
        named = "; ".join(_cell(p[:PROBLEM_CHARS]) for p in report.problems[:PROBLEMS_SHOWN])
        more = len(report.problems) - min(len(report.problems), PROBLEMS_SHOWN)
        lines += [f":warning: Not judged on `{section.platform}` · `{section.build_variant}`: "
                  f"{named}" + (f"; and {more} more" if more else "") + ". This run does not "
                  "answer them: a new label, or `/rbs benchmark suites=<name>`, runs them "
                  "again.", ""]
    return lines


def results_body(info: PrInfo, sections: list[Section], pending: list[str],
                 limit: int = GITHUB_MAX_BODY_CHARS) -> str:
    """The comment with every finished section; ``pending`` platforms still running. At
    most ``limit`` characters (GitHub's): when every table does not fit, each completed
    section keeps its largest effects and links its report for the rest."""
    parts = [(s, ComparisonReport.from_dict(s.report) if s.report else None)
             for s in sections]
    head = [info.marker, headline(sections, pending), "", f"## {TITLE}", "", _what(info), "",
            *_counts_table(parts)]
    head += _machine_line(sections)
    head += _pending_lines(sections, pending)
    head += _not_judged_lines(parts)
    reports = [r for _, r in parts if r is not None]
    tail = [f"<sub>{footnote(reports[0])}</sub>", ""] if reports else []
    tail += [f"<sub>{FALSE_ALARMS}</sub>", ""] if any(s.sequential for s in sections) else []
    for keep in (None, *COMPACT_KEEP):
        body = _body((head, tail), parts, keep, limit)
        if body is not None:
            return body
    return fit("\n".join(_lines((head, tail), parts, 0)), limit)


def _body(frame: tuple[list[str], list[str]], parts: list[Part], keep: int | None,
          limit: int) -> str | None:
    """The body in one form (``keep``, as :func:`_section_lines`), or None as soon as it
    passes ``limit`` (a form that does not fit is not rendered to its end)."""
    used, lines = 0, []
    for line in _lines(frame, parts, keep):
        used += body_chars(line) + 1
        if used > limit + 1:
            return None
        lines.append(line)
    return "\n".join(lines)


def _lines(frame: tuple[list[str], list[str]], parts: list[Part],
           keep: int | None) -> Iterator[str]:
    yield from frame[0]
    for section, report in parts:
        yield from _section_lines(section, report, keep)
    yield from frame[1]
