"""The two parts of the pull-request comment a maintainer reads first: the headline (one
line: improvement, regression, no change or not decided, with the largest effects) and, per
test, the functions whose instructions per op moved most, with whether they lie in the files
the pull request changes. Formatting only: the verdicts come from the agents' reports."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from redis_benchmarks_spec.analysis.compare import (
    BUSY,
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    SUSPECT,
    UNKNOWN,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.common.metrics import words as metric_words
from redis_benchmarks_spec.pullrequest.state import Section
from redis_benchmarks_spec.results.comparison_key import split

VERDICT_WORDS = {NO_CHANGE: "no change", UNKNOWN: "not decided", BUSY: "busy",
                 SUSPECT: "suspect"}
#: a decided effect smaller than this (percent, either sign) is counted in the first line,
#: never led with: a +0.7 % instruction change beside a -16.5 % one is not the news
SMALL_EFFECT_PCT = 1.0
CHANGED_SHOWN = 3  # tests named as running the changed functions


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
    return f"`{row.test}` {metric} {row.change_pct or 0.0:+.1f} %{ci} on `{platform}`"


def _size(item: tuple[str, Comparison]) -> float:
    return abs(item[1].change_pct or 0.0)


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _lead(word: str, items: list[tuple[str, Comparison]], total: int) -> str:
    """The largest effect of one sign, as the line leads with it."""
    platform, top = max(items, key=_size)
    elsewhere = [f"{r.change_pct or 0.0:+.1f} % on `{p}`" for p, r in items
                 if r.test == top.test and p != platform][:3]
    also = f" ({', '.join(elsewhere)})" if elsewhere else ""
    return f"**{word}** in {len(items)} of {total} tests: {_effect(platform, top)}{also}"


def _small(word: str, items: list[tuple[str, Comparison]]) -> str:
    """Effects of one sign all under :data:`SMALL_EFFECT_PCT`: counted, the largest named."""
    platform, row = max(items, key=_size)
    return (f"small {word}s in {_plural(len(items), 'test')}, each under "
            f"{SMALL_EFFECT_PCT:g} % (largest `{row.test}` {row.change_pct or 0.0:+.1f} % "
            f"on `{platform}`)")


def _changed_tests(sections: list[Section],
                   rows: list[tuple[str, Comparison]]) -> str:
    """The tests that execute most of the changed code (the selection's scores), each with
    what it showed; '' when the selection knew no profile."""
    scores: dict[str, float] = {}
    for s in sections:
        for suite, score in s.changed_scores.items():
            scores[suite] = max(score, scores.get(suite, 0.0))
    if not scores:
        return ""
    by_suite: dict[str, Comparison] = {}
    # per suite, its largest decided effect, else what its first row says
    for _, row in sorted(rows, key=lambda pr: (pr[1].verdict not in (REGRESSION, IMPROVEMENT),
                                               -_size(pr))):
        by_suite.setdefault(split(row.test)[0], row)
    shown = []
    for suite in sorted(scores, key=lambda n: (-scores[n], n))[:CHANGED_SHOWN]:
        found = by_suite.get(suite)
        what = "not run" if found is None else \
            f"{found.change_pct or 0.0:+.1f} %" if found.verdict in (REGRESSION, IMPROVEMENT) \
            else VERDICT_WORDS.get(found.verdict, found.verdict.lower())
        shown.append(f"`{suite}` {what}")
    more = len(scores) - len(shown)
    return ("Tests that run the changed functions most: " + ", ".join(shown)
            + (f" (and {more} more)" if more > 0 else "") + ".")


def headline(sections: list[Section], pending: list[str]) -> str:
    """The comment's first line: the largest decided effect of each sign (an effect under
    :data:`SMALL_EFFECT_PCT` is counted, not led with), then the tests that run the pull
    request's changed functions most and what they showed."""
    rows = _decided_rows(sections)
    if not rows:
        return ("**Not decided yet**: no test has finished." if pending else
                "**No test ran**: the selection found no suite that executes the changed code"
                if any(s.state == "completed" for s in sections) else "**No result**.")
    worse = [(p, r) for p, r in rows if r.verdict == REGRESSION]
    better = [(p, r) for p, r in rows if r.verdict == IMPROVEMENT]
    unchanged = [(p, r) for p, r in rows if r.verdict == NO_CHANGE]
    prefix = "Partial: " if pending else ""
    changed = _changed_tests(sections, rows)
    tail = f" {changed}" if changed else ""
    if not worse and not better:
        if len(unchanged) == len(rows):
            return (f"**{prefix}No change** in any of the {len(rows)} tests (each interval "
                    f"lies within the noise floor).{tail}")
        return (f"**{prefix}Not decided**: {len(rows) - len(unchanged)} of {len(rows)} tests "
                f"need more pairs to decide; none changed beyond its interval.{tail}")
    def largest(items: list[tuple[str, Comparison]]) -> float:
        return max(map(_size, items), default=0.0)
    # a large regression leads; else a large improvement; else the larger small effect
    worse_first = largest(worse) >= SMALL_EFFECT_PCT or (
        largest(better) < SMALL_EFFECT_PCT and largest(worse) >= largest(better))
    order = [("Regression", worse), ("Improvement", better)]
    parts: list[str] = []
    for word, items in order if worse_first else order[::-1]:
        if not items:
            continue
        if parts and largest(items) < SMALL_EFFECT_PCT:
            parts.append(_small(word.lower(), items))
        else:
            parts.append(_lead(f"{prefix}{word}" if not parts else word.lower(), items,
                               len(rows)))
    return "; ".join(parts) + "." + tail


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
