"""The two parts of the pull-request comment a maintainer reads first: the headline (one
line: improvement, regression, no change or not decided, with the largest effects) and, per
test, the functions whose instructions per op moved most, with whether they lie in the files
the pull request changes. Formatting only: the verdicts come from the agents' reports."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.common.metrics import words as metric_words
from redis_benchmarks_spec.pullrequest.state import Section


def _decided_rows(sections: list[Section]) -> list[tuple[str, Comparison]]:
    """(platform, row) of every test: the instruction rows when measured (deterministic,
    decided first), else the timed ones."""
    out = []
    for s in sections:
        if s.report is None:
            continue
        report = ComparisonReport.from_dict(s.report)
        rows = report.counted.rows if report.counted is not None else report.rows
        out += [(s.platform, r) for r in rows]
    return out


def _effect(platform: str, row: Comparison) -> str:
    metric = metric_words(row.metric)
    ci = "" if row.ci_low_pct is None or row.ci_high_pct is None else \
        f" [{row.ci_low_pct:+.1f} %, {row.ci_high_pct:+.1f} %]"
    return f"`{row.test}` {metric} {row.change_pct:+.1f} %{ci} on `{platform}`"


def headline(sections: list[Section], pending: list[str]) -> str:
    """The comment's first line."""
    rows = _decided_rows(sections)
    if not rows:
        return ("**Not decided yet**: no test has finished." if pending else
                "**No test ran**: the selection found no suite that executes the changed code"
                if any(s.state == "completed" for s in sections) else "**No result**.")
    worse = [(p, r) for p, r in rows if r.verdict == REGRESSION]
    better = [(p, r) for p, r in rows if r.verdict == IMPROVEMENT]
    unchanged = [(p, r) for p, r in rows if r.verdict == NO_CHANGE]
    prefix = "Partial: " if pending else ""

    def largest(items: list[tuple[str, Comparison]]) -> str:
        top = sorted(items, key=lambda pr: -abs(pr[1].change_pct or 0.0))[:2]
        return "; ".join(_effect(p, r) for p, r in top)
    if worse:
        return f"**{prefix}Regression** in {len(worse)} of {len(rows)} tests: {largest(worse)}."
    if better:
        return f"**{prefix}Improvement** in {len(better)} of {len(rows)} tests: " \
               f"{largest(better)}."
    if len(unchanged) == len(rows):
        return f"**{prefix}No change** in any of the {len(rows)} tests (each interval lies " \
               "within the noise floor)."
    return f"**{prefix}Not decided**: {len(rows) - len(unchanged)} of {len(rows)} tests need " \
           "more pairs to decide; none changed beyond its interval."


def _in_changed(file: str | None, changed: list[str]) -> str:
    if not file:
        return "unknown"
    names = {PurePosixPath(f).name for f in changed}
    return "yes" if PurePosixPath(file).name in names else "no"


def movers_lines(movers: dict[str, list[dict[str, Any]]], changed: list[str],
                 level: str = "####") -> list[str]:
    """Per test, the table of the functions whose instructions per op moved most."""
    lines = []
    for test, moves in sorted(movers.items()):
        if not moves:
            continue
        inside = sum(1 for m in moves[:5] if _in_changed(m.get("file"), changed) == "yes")
        where = ", ".join(f"`{f}`" for f in changed[:6]) or "none known"
        lines += [f"{level} Why `{test}` moved: functions by change in instructions per op",
                  "",
                  (f"{inside} of the top {min(5, len(moves))} lie in the files this pull "
                  f"request changes ({where})."),
                  "",
                  ("| Function | File | Before (per op) | After (per op) | Change | In a "
                  "changed file |"),
                  "| --- | --- | ---: | ---: | ---: | --- |"]
        for m in moves[:8]:
            file = PurePosixPath(m["file"]).name if m.get("file") else "?"
            lines.append(f"| `{m['function']}` | `{file}` | {m['baseline_per_op']:,.1f} | "
                         f"{m['comparison_per_op']:,.1f} | {m['delta_per_op']:+,.1f} "
                         f"({m['share_of_total_pct']:+.2f} % of all) | "
                         f"{_in_changed(m.get('file'), changed)} |")
        lines.append("")
    return lines


FALSE_ALARMS = ("False alarms are controlled over each platform's whole session, not per "
                "test: the verdicts of all its tests form one Benjamini-Hochberg family "
                "(false discovery rate at the session's alpha), so adding suites does not "
                "add false flags the way a per-test threshold would.")
