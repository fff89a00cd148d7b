"""A platform's section of the pull-request comment when the full tables would pass
GitHub's 65,536-character limit (``common.comment_size``): per judged metric the verdict
counts and the ``keep`` largest decided effects, the undecided tests counted by why they
stopped, the movers of the tests shown, and the link to the report holding every table.
Formatting only: the verdicts come from the agents' reports."""

from __future__ import annotations

from collections import Counter

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    SUSPECT,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.report import label, markdown_header, summary_markdown
from redis_benchmarks_spec.analysis.shown import by_decided, metric_name
from redis_benchmarks_spec.notify.pr_summary import movers_lines
from redis_benchmarks_spec.pullrequest.state import Section

SHOWN_VERDICTS = (REGRESSION, IMPROVEMENT, SUSPECT)
NOTE_CHARS = 900  # a note (selection, base reuse, host line) is cut to this in the compact form
REASONS_SHOWN = 4  # why undecided tests stopped: the most frequent reasons, counted
MOVERS_SHOWN = 2  # "why it moved" tables, for the largest effects shown
FLAGS_SHOWN = 5


def _cell(text: str) -> str:
    return text.replace("\\", "\\\\").replace("|", "\\|").replace("\n", " ")


def _pct(value: float | None) -> str:
    return "–" if value is None else f"{value:+.2f} %"


def largest(report: ComparisonReport, keep: int) -> list[Comparison]:
    """The ``keep`` decided (or suspect) rows with the largest effects, largest first."""
    rows = [r for r in report.rows if r.verdict in SHOWN_VERDICTS]
    return sorted(rows, key=lambda r: (-abs(r.change_pct or 0.0), label(r)))[:keep]


def _effects_table(rows: list[Comparison], pairs: dict[str, int]) -> list[str]:
    if not rows:
        return []
    lines = ["| Test | Verdict | Change | 95 % CI | Pairs |", "| --- | --- | ---: | --- | ---: |"]
    for r in rows:
        ci = f"[{_pct(r.ci_low_pct)}, {_pct(r.ci_high_pct)}]"
        n = pairs.get(r.test, min(r.n_baseline, r.n_comparison))
        lines.append(f"| `{_cell(label(r))}` | {r.verdict} | {_pct(r.change_pct)} | {ci} | {n} |")
    return [*lines, ""]


def _undecided_line(report: ComparisonReport) -> list[str]:
    """Tests not decided, counted by why (the reason's first clause)."""
    rows = [r for r in report.rows if r.verdict not in (*SHOWN_VERDICTS, NO_CHANGE)]
    if not rows:
        return []
    why = Counter((r.reason or r.verdict).split(";")[0][:120] for r in rows)
    top = "; ".join(f"{_cell(w)} ({n})" for w, n in why.most_common(REASONS_SHOWN))
    more = len(why) - min(len(why), REASONS_SHOWN)
    return [f"Not decided: {len(rows)} test(s): {top}" + (f"; {more} other reason(s)" if more
                                                          else "") + ".", ""]


def _metric_lines(report: ComparisonReport, keep: int, pairs: dict[str, int],
                  title: str) -> list[str]:
    shown = largest(report, keep)
    decided = sum(1 for r in report.rows if r.verdict in SHOWN_VERDICTS)
    lines = [f"**{title}**: {summary_markdown(report)}", ""]
    lines += _effects_table(shown, pairs)
    if decided > len(shown):
        lines += [f"{decided - len(shown)} more changed test(s) in the full report.", ""]
    return lines + _undecided_line(report)


def _sequential_line(section: Section) -> list[str]:
    """Pairs taken over the section's tests and why they stopped, counted."""
    if not section.sequential:
        return []
    taken = sorted(int(p.get("pairs", 0)) for p in section.sequential.values())
    why = Counter(str(p.get("stopped", ""))[:80] or "?" for p in section.sequential.values())
    top = "; ".join(f"{_cell(w)} ({n})" for w, n in why.most_common(REASONS_SHOWN))
    line = (f"Interleaved A/B of {len(taken)} test(s): {taken[len(taken) // 2]} pairs "
            f"median, {taken[-1]} at most; stopped because: {top}.")
    return [line, ""]


def compact_section(section: Section, report: ComparisonReport, keep: int) -> list[str]:
    """A completed section's body in the compact form (see the module docstring)."""
    pairs = {t: int(p.get("pairs", 0)) for t, p in section.sequential.items()}
    lines = [*markdown_header(report.context), *_sequential_line(section)]
    shown: list[Comparison] = []
    for part in by_decided(report):
        lines += _metric_lines(part, keep, pairs, metric_name(part.options.metric))
        shown += largest(part, keep)
    if report.memory is not None:
        lines += _metric_lines(report.memory, keep, pairs, "Memory after the preload")
    movers = {r.test: section.movers[r.test] for r in shown if section.movers.get(r.test)}
    first = dict(list(movers.items())[:min(keep, MOVERS_SHOWN)])
    lines += movers_lines(first, section.changed_files)
    flagged = sorted((t, f) for t, f in section.flags.items() if f)
    if flagged:
        more = len(flagged) - min(len(flagged), FLAGS_SHOWN)
        lines += ["**Flags:** " + "; ".join(f"`{t}`: {', '.join(f)}"
                                             for t, f in flagged[:FLAGS_SHOWN])
                  + (f"; {more} more test(s) flagged" if more else ""), ""]
    return lines


def full_tables_line(section: Section) -> str:
    """Where the tables this form leaves out are."""
    url = section.links.get("HTML report")
    where = f"the [HTML report]({url})" if url else \
        "the platform's report (no report link configured: `rbs agent --reports-dir`)"
    return (f":page_facing_up: Summary only: every table of `{section.platform}` is in "
            f"{where}; all of them would pass GitHub's comment limit.")


def short_note(note: str) -> str:
    """A note cut to :data:`NOTE_CHARS`."""
    return note if len(note) <= NOTE_CHARS else note[:NOTE_CHARS - 1] + "…"
