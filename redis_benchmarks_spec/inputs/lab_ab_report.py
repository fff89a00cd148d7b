"""The lab's A/B of two commits, where one is stored, rendered instead of judging the
commits' points again.

A pull request's A/B in the lab is judged by the engine on what the datasink's points do
not carry: the head's runs paired with the base's runs counted once at its push (a stored
base: k base runs standing in n pairs), the ``--until-decided`` looks, the lab host's noise
priors. Read back as points, the same commits were two samples of 2 and 3 values:
BITCOUNT's speed-up was IMPROVEMENT -57.7 % [-59.7, -55.7] in the comment and UNKNOWN
"too few points (n=2)" on the site (issue 62). The agent now stores the engine's report of
each A/B it judged (``datasink.lab_ab``); the site's compare page, ``rbs compare`` of the
datasink and the comment's datasink route ask here first and, when the two commits have one
on the platform, show its rows (those they read), named as they name them, with a note
saying whose verdicts they are and the pairs behind them. The engine stays the only judge:
this renders its stored output, and rows it did not judge are judged as before
(:func:`inputs.session_pairs.judged`). A stored entry that is not what the agent writes (too
big, not JSON, another version, a field of the wrong type) is left out with a note.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields, replace
from typing import Any

import redis

from redis_benchmarks_spec.analysis.compare import (
    VERDICTS,
    CompareOptions,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.datasink import keys, lab_ab, reader
from redis_benchmarks_spec.datasink.lab_ab import LabAB, LabABError, LabABKey
from redis_benchmarks_spec.inputs import session_pairs

SeriesByRow = dict[str, reader.Series]
Rows = dict[str, tuple[str, str]]  # a surface's row -> (test name, topology)
PAIRS_NAMED = 10  # rows whose pairs the note names; the rest are counted


@dataclass(frozen=True)
class LabView:
    """A stored A/B as one surface shows it: the engine's rows that surface read, named as
    it names them, with the note (and the A/B's own problems) in ``report.problems``."""

    key: LabABKey
    report: ComparisonReport

    @property
    def rows(self) -> frozenset[str]:
        return frozenset(r.test for r in self.report.rows)

    def rest(self, rows: Iterable[str]) -> list[str]:
        """Of ``rows``, those the stored A/B did not judge (judged from the points)."""
        return [r for r in rows if r not in self.rows]


def _number(v: Any) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool)


def _text(v: Any) -> bool:
    return isinstance(v, str) and len(v) <= lab_ab.MAX_TEXT


def _of(check: Any) -> Any:
    return lambda v: isinstance(v, dict) and all(_text(k) and check(x) for k, x in v.items())


# the field types of Comparison and CompareOptions a stored report may carry, each checked;
# a field of another type keeps its default
_CHECKS = {
    "str": _text, "bool": lambda v: isinstance(v, bool),
    "int": lambda v: isinstance(v, int) and not isinstance(v, bool),
    "float": _number, "float | None": lambda v: v is None or _number(v),
    "int | None": lambda v: v is None or (isinstance(v, int) and not isinstance(v, bool)),
    "dict[str, float]": _of(_number), "dict[str, str]": _of(_text),
}


def _typed(cls: Any, raw: Any) -> dict[str, Any]:
    if not isinstance(raw, dict):
        raise LabABError(f"{cls.__name__}: not an object")
    out = {}
    for f in fields(cls):
        check = _CHECKS.get(str(f.type))
        if f.name in raw and check is not None:
            if not check(raw[f.name]):
                raise LabABError(f"{cls.__name__}.{f.name}: not a {f.type}")
            out[f.name] = raw[f.name]
    return out


def _texts(raw: Any) -> tuple[str, ...]:
    if not isinstance(raw, list) or len(raw) > lab_ab.MAX_ROWS or not all(map(_text, raw)):
        raise LabABError("a list of notes is not a bounded list of strings")
    return tuple(raw)


def report_of(entry: LabAB, metric: str) -> ComparisonReport:
    """The engine's report an entry holds, every field checked (untrusted); a
    :class:`LabABError` when it is not one of ``metric``."""
    raw = entry.report
    try:
        options = CompareOptions(**_typed(CompareOptions, raw.get("options")))
        rows = tuple(Comparison(**_typed(Comparison, r)) for r in raw["rows"])
        report = ComparisonReport(
            rows, options, _texts(raw.get("problems", [])),
            raw["method"] if _text(raw.get("method")) else "",
            hidden=_texts(raw.get("hidden", [])),
            instrumented=_texts(raw.get("instrumented", [])))
    except (TypeError, KeyError) as exc:
        raise LabABError(f"not an engine report ({type(exc).__name__}: {exc})") from None
    if options.metric != metric or any(r.metric != metric for r in rows):
        raise LabABError(f"not a report of {metric}")
    if any(r.verdict not in VERDICTS for r in rows):
        raise LabABError("a row's verdict is not one the engine gives")
    return report


def rows_of(series: Mapping[str, reader.Series]) -> Rows:
    """A surface's rows as (test name, topology), from their commits' series keys (points
    read on a branch after gc name no series of the commit: left out)."""
    out: Rows = {}
    for row, found in series.items():
        if found.key.startswith(keys.PREFIX + "/"):
            try:
                sid = keys.parse_key(found.key)
            except ValueError:
                continue
            out[row] = (sid.test_name, sid.topology)
    return out


def key_of_sides(sides: tuple[SeriesByRow, SeriesByRow], metric: str) -> LabABKey | None:
    """The A/B the two sides' points would be: each side one commit's own (by.hash) series,
    of one repository and one platform; None otherwise (a branch, several commits)."""
    found = []
    for side in sides:
        ids = set()
        for series in side.values():
            try:
                sid = keys.parse_key(series.key)
            except ValueError:
                return None
            if sid.side.kind != "hash":
                return None
            ids.add((sid.scope.github_org, sid.scope.github_repo, sid.platform,
                     sid.side.value))
        if len(ids) != 1:
            return None
        found.append(ids.pop())
    (org, repo, platform, base), (org2, repo2, platform2, head) = found
    if (org, repo, platform) != (org2, repo2, platform2):
        return None
    try:
        return LabABKey(org, repo, base, head, platform, metric)
    except LabABError:
        return None


def _matched(entry: LabAB, report: ComparisonReport, rows: Rows) -> dict[str, str]:
    """The stored row -> the surface's row it is (same test and topology; a stored row
    without a topology is the surface's one row of that test)."""
    out = {}
    for row in report.rows:
        name, topology = entry.tests.get(row.test, (row.test, None))
        same = [r for r, (n, t) in rows.items() if n == name and topology in (None, t)]
        if len(same) == 1:
            out[row.test] = same[0]
    return out


def _note(key: LabABKey, entry: LabAB, shown: list[Comparison]) -> str:
    pairs = [f"{r.test} {entry.pairs[r.test]} pairs"
             + (f" ({entry.stopped[r.test]})" if entry.stopped.get(r.test) else "")
             for r in shown if r.test in entry.pairs][:PAIRS_NAMED]
    more = len(shown) - len(pairs)
    said = "; ".join(pairs) + (f"; {more} more row(s)" if more > 0 and pairs else "")
    return (f"Verdicts on {key.platform}: the lab's A/B of these commits (base "
            f"{key.base[:10]}, head {key.head[:10]}), as the engine judged it when the agent "
            f"finished it{f' (event {entry.event})' if entry.event else ''}, not judged again "
            "from the points" + (f". Pairs: {said}." if said else ".")
            + (f" {entry.note}" if entry.note else ""))


def find(client: redis.Redis, key: LabABKey, rows: Rows) -> tuple[LabView | None, list[str]]:
    """The stored A/B of ``key`` as the surface of ``rows`` shows it, or None (none stored,
    none of its rows read here, or an entry that is not the agent's: then a note says so)."""
    try:
        entry = lab_ab.load(client, key)
        if entry is None:
            return None, []
        report = report_of(entry, key.metric)
    except LabABError as exc:
        return None, [f"a stored lab A/B of these commits was left out ({exc}); its points "
                      + "are judged instead"]
    except redis.RedisError as exc:
        return None, [f"the lab's stored A/B could not be read ({type(exc).__name__}); "
                      + "the points are judged instead"]
    named = _matched(entry, report, rows)
    shown = [r for r in report.rows if r.test in named]
    if not shown:
        return None, []
    renamed = tuple(replace(r, test=named[r.test]) for r in shown)
    note = _note(key, entry, shown)
    return LabView(key, replace(report, rows=renamed,
                                problems=(note, *report.problems))), []


def find_for_sides(client: redis.Redis, sides: tuple[SeriesByRow, SeriesByRow],
                   metric: str, key: LabABKey | None = None
                   ) -> tuple[LabView | None, list[str]]:
    """:func:`find` of the A/B the sides' points are (:func:`key_of_sides`, or ``key``)."""
    key = key or key_of_sides(sides, metric)
    if key is None:
        return None, []
    return find(client, key, {**rows_of(sides[0]), **rows_of(sides[1])})


def overlay(view: LabView, rest: ComparisonReport | None,
            problems: Iterable[str] = ()) -> ComparisonReport:
    """The stored A/B's report with the rows it did not judge (``rest``, judged from the
    points) after its own, and the surface's ``problems`` first."""
    mine = view.report
    if rest is None or not rest.rows:
        return replace(mine, problems=(*problems, *mine.problems))
    named = ", ".join(r.test for r in rest.rows[:PAIRS_NAMED])
    said = (f"{len(rest.rows)} row(s) the lab's A/B did not judge ({named}"
            f"{', ...' if len(rest.rows) > PAIRS_NAMED else ''}): judged from the points")
    return replace(mine, rows=(*mine.rows, *rest.rows),
                   problems=(*problems, *mine.problems, said, *rest.problems))


def judged(client: redis.Redis, sides: tuple[SeriesByRow, SeriesByRow],
           options: CompareOptions, problems: Iterable[str] = (),
           rows: Iterable[str] | None = None, key: LabABKey | None = None) -> ComparisonReport:
    """:func:`inputs.session_pairs.judged` of the sides, except the rows a stored lab A/B
    of these commits judged (``key``, or the one the sides' points are): those are its."""
    base, comp = sides
    rows = sorted(set(base) | set(comp)) if rows is None else list(rows)
    kept = ({r: base[r] for r in rows if r in base}, {r: comp[r] for r in rows if r in comp})
    view, notes = find_for_sides(client, kept, options.metric, key)
    problems = [*problems, *notes]
    if view is None:
        return session_pairs.judged(client, sides, options, problems, rows)
    rest = view.rest(rows)
    return overlay(view, session_pairs.judged(client, sides, options, [], rest)
                   if rest else None, problems)
