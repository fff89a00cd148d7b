"""The two parts of the pull-request comment a maintainer reads first: the headline (one
line: improvement, regression, no change, not decided or platforms disagree, with the
largest effects; what every platform decided the same way first) and, per
test, the functions whose instructions per op moved most, with whether they lie in the files
the pull request changes. Formatting only: the verdicts come from the agents' reports."""

from __future__ import annotations

from pathlib import PurePosixPath
from typing import Any

from redis_benchmarks_spec.analysis import policy
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
from redis_benchmarks_spec.analysis.platform_agreement import (
    DISAGREE,
    EVERY,
    NO_EFFECT,
    ONE_PLATFORM,
    Agreement,
    agreement,
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
LEAD_SHOWN = 4  # tests named where the line leads with an effect of one sign and standing
DISAGREE_SHOWN = 2  # tests whose platforms disagree, named with every platform's number


def _decided_rows(sections: list[Section]) -> list[tuple[str, Comparison]]:
    """(platform, row) of every test, from the part of the report whose kind takes
    precedence (``analysis.policy``: instruction counts when measured, else the report's
    own metric)."""
    out = []
    for s in sections:
        if s.report is None:
            continue
        report = ComparisonReport.from_dict(s.report)
        parts = [report, *([report.instructions] if report.instructions is not None else [])]
        rows = policy.decides_first(parts, lambda r: r.options.metric).rows
        out += [(s.platform, r) for r in rows]
    return out


def _effect(platform: str, row: Comparison) -> str:
    metric = metric_words(row.metric)
    return f"`{row.test}` {metric} {_change(row)} on `{platform}`"


def _change(row: Comparison) -> str:
    """``+1.9 % [+0.5 %, +3.3 %]``: the change and its interval when it has one."""
    ci = "" if row.ci_low_pct is None or row.ci_high_pct is None else \
        f" [{row.ci_low_pct:+.1f} %, {row.ci_high_pct:+.1f} %]"
    return f"{row.change_pct or 0.0:+.1f} %{ci}"


def _plural(n: int, word: str) -> str:
    return f"{n} {word}{'' if n == 1 else 's'}"


def _said(row: Comparison) -> str:
    """What the engine said of a row, in words ("a regression there", "not decided")."""
    if row.verdict in (REGRESSION, IMPROVEMENT):
        return f"{'a regression' if row.verdict == REGRESSION else 'an improvement'} there"
    return VERDICT_WORDS.get(row.verdict, row.verdict.lower())


def _elsewhere(test: Agreement) -> str:
    """How the other platforms read the lead row's test: ``-16.5 % on `lab-b``` where they
    decided it the same way, with what they said otherwise."""
    out = []
    for platform, row in test.others[:3]:
        said = "" if row.verdict == test.verdict else f", {_said(row)}"
        out.append(f"{row.change_pct or 0.0:+.1f} % on `{platform}`{said}")
    if test.standing == ONE_PLATFORM and not test.others:
        out.append(f"only `{test.lead[0]}` compared it")
    return f" ({'; '.join(out)})" if out else ""


def _lead(word: str, where: str, items: list[Agreement], total: int) -> str:
    """The largest effects of one sign and standing, as the line leads with them: the
    largest with its interval and the other platforms' reading, then the next ones."""
    top, *rest = items
    platform, row = top.lead
    more = [f"`{t.test}` {t.lead[1].change_pct or 0.0:+.1f} %" for t in rest[:LEAD_SHOWN - 1]]
    also = f"; then {', '.join(more)}" if more else ""
    return (f"**{word}**{where} in {len(items)} of {total} tests: {_effect(platform, row)}"
            f"{_elsewhere(top)}{also}")


def _small(word: str, where: str, items: list[Agreement]) -> str:
    """Effects of one sign all under :data:`SMALL_EFFECT_PCT`: counted, the largest named."""
    platform, row = items[0].lead
    return (f"small {word}s{where} in {_plural(len(items), 'test')}, each under "
            f"{SMALL_EFFECT_PCT:g} % (largest `{row.test}` {row.change_pct or 0.0:+.1f} % "
            f"on `{platform}`)")


def _signed(items: list[Agreement], where: str, total: int, first: bool) -> list[str]:
    """The regressions and improvements of one standing (``where`` says which: " on every
    platform", ...), a large regression first, else a large improvement, else the larger
    small effect; an effect under :data:`SMALL_EFFECT_PCT` is counted, not led with."""
    worse = [t for t in items if t.verdict == REGRESSION]
    better = [t for t in items if t.verdict == IMPROVEMENT]

    def largest(group: list[Agreement]) -> float:
        return max((t.size for t in group), default=0.0)
    worse_first = largest(worse) >= SMALL_EFFECT_PCT or (
        largest(better) < SMALL_EFFECT_PCT and largest(worse) >= largest(better))
    order = [("Regression", worse), ("Improvement", better)]
    parts: list[str] = []
    for word, group in order if worse_first else order[::-1]:
        if not group:
            continue
        if parts and largest(group) < SMALL_EFFECT_PCT:
            parts.append(_small(word.lower(), where, group))
        else:
            shown = word if first and not parts else word.lower()
            parts.append(_lead(shown, where, group, total))
    return parts


def _disagree(items: list[Agreement], first: bool) -> str:
    """Tests one platform decided while another's estimate points the other way: every
    platform's number side by side, never called a plain regression or improvement."""
    shown = []
    for test in items[:DISAGREE_SHOWN]:
        readings = [f"{_change(r)} on `{p}` ({_said(r)})" for p, r in [test.lead, *test.others]]
        shown.append(f"`{test.test}` {metric_words(test.metric)} " + " against ".join(readings))
    more = len(items) - len(shown)
    word = "Platforms disagree" if first else "platforms disagree"
    return (f"**{word}** on {_plural(len(items), 'test')} (platform-specific): "
            + "; ".join(shown)
            + (f"; and {more} more" if more > 0 else ""))


def _shown_change(test: Agreement) -> str:
    """One test's reading in a few words, as the changed-code list names it."""
    platform, row = test.lead
    if test.standing == EVERY:
        return f"{row.change_pct or 0.0:+.1f} %"
    if test.standing == ONE_PLATFORM:
        return f"{row.change_pct or 0.0:+.1f} % on `{platform}` only"
    if test.standing == DISAGREE:
        return "platforms disagree"
    return VERDICT_WORDS.get(row.verdict, row.verdict.lower())


def _changed_tests(sections: list[Section], tests: list[Agreement]) -> str:
    """The tests that execute most of the changed code (the selection's scores), each with
    what it showed; '' when the selection knew no profile."""
    scores: dict[str, float] = {}
    for s in sections:
        for suite, score in s.changed_scores.items():
            scores[suite] = max(score, scores.get(suite, 0.0))
    if not scores:
        return ""
    by_suite: dict[str, Agreement] = {}
    for test in tests:  # in standing order: per suite, what every platform says first
        by_suite.setdefault(split(test.test)[0], test)
    shown = []
    for suite in sorted(scores, key=lambda n: (-scores[n], n))[:CHANGED_SHOWN]:
        found = by_suite.get(suite)
        shown.append(f"`{suite}` {'not run' if found is None else _shown_change(found)}")
    more = len(scores) - len(shown)
    return ("Tests that run the changed functions most: " + ", ".join(shown)
            + (f" (and {more} more)" if more > 0 else "") + ".")


def headline(sections: list[Section], pending: list[str]) -> str:
    """The comment's first line: what every platform that ran a test decided the same way
    first, then what one platform alone decided, then the tests whose platforms disagree
    (both numbers, never a plain regression); within each, the largest decided effect of
    each sign (one under :data:`SMALL_EFFECT_PCT` is counted, not led with). Then the tests
    that run the pull request's changed functions most and what they showed. Where each
    test stands comes from :mod:`analysis.platform_agreement`."""
    rows = _decided_rows(sections)
    still = f" Still running on {', '.join(f'`{p}`' for p in pending)}." if pending else ""
    if not rows:
        return (f"**Not decided yet**: no test has finished.{still}" if pending else
                "**No test ran**: the selection found no suite that executes the changed code"
                if any(s.state == "completed" for s in sections) else "**No result**.")
    tests = agreement(rows)
    several = len({p for p, _ in rows}) > 1
    prefix = "Partial: " if pending else ""
    changed = _changed_tests(sections, tests)
    tail = (f" {changed}" if changed else "") + still
    if all(t.standing == NO_EFFECT for t in tests):
        unchanged = sum(1 for t in tests if all(r.verdict == NO_CHANGE for _, r in t.rows))
        if unchanged == len(tests):
            return (f"**{prefix}No change** in any of the {len(tests)} tests (each interval "
                    f"lies within the noise floor).{tail}")
        return (f"**{prefix}Not decided**: {len(tests) - unchanged} of {len(tests)} tests "
                f"need more pairs to decide; none changed beyond its interval.{tail}")
    parts: list[str] = []
    for where, label in ((EVERY, " on every platform" if several else ""),
                         (ONE_PLATFORM, " on one platform only")):
        items = [t for t in tests if t.standing == where]
        parts += _signed(items, label, len(tests), first=not parts)
    split_ = [t for t in tests if t.standing == DISAGREE]
    if split_:
        parts.append(_disagree(split_, first=not parts))
    if prefix:
        parts[0] = parts[0].replace("**", f"**{prefix}", 1)
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
