"""The compare page's data: two commits' points of one metric read by the one comparison
reader (:func:`inputs.comparison_series.read_sides_per_platform`: each commit once over
every platform, the rows ``rbs compare --baseline-hash --comparison-hash`` reads per
platform) and judged by the one engine, per platform when the page names none: the pairs
of one interleaved A/B session when both commits' points are that session's runs (the lab's
A/B of a pull request: :mod:`inputs.session_pairs`, as its comment judged them), else two
samples (:func:`analysis.engine.judge_samples`), with the metric's catalogue floor; where
the lab's agent kept its A/B of the two commits on a platform (``datasink.lab_ab``), that
A/B's report as the engine judged it (:mod:`inputs.lab_ab_report`). The
functions that moved come from the runs' instruction profiles
(:mod:`analysis.function_movers`), where their files are readable here."""

from __future__ import annotations

import hashlib
import pickle
import re
import threading
from collections import OrderedDict
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

import redis
from markupsafe import Markup

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.engine import (
    INSTRUCTIONS_METRIC,
    catalogue_options,
    judge_samples_many,
)
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY, FunctionMove, function_movers
from redis_benchmarks_spec.analysis.session_runs import ABRun
from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.datasink import commit_points, keys, reader, run_reader
from redis_benchmarks_spec.inputs import lab_ab_report, session_pairs
from redis_benchmarks_spec.inputs.comparison_series import (
    Samples,
    SidesQuery,
    SidesRead,
    read_sides_per_platform,
)
from redis_benchmarks_spec.inputs.lab_ab_report import LabView
from redis_benchmarks_spec.inputs.profiles import read_functions
from redis_benchmarks_spec.results.comparison_key import label, split
from redis_benchmarks_spec.web.rows import compare_rows

SHA = re.compile(r"^[0-9a-f]{7,40}$")
NAME = re.compile(r"^[A-Za-z0-9._:-]{1,100}$")


class CompareRequestError(ValueError):
    """A compare URL whose parameters are not what the page accepts; says which."""


@dataclass(frozen=True)
class CompareRequest:
    """What the URL asks: two commits, a metric, and optionally a platform, a group and a
    command (exact names: a link is shared, so it names, it does not search)."""

    a: str
    b: str
    metric: str
    platform: str | None = None
    group: str | None = None
    command: str | None = None

    def __post_init__(self) -> None:
        for name in ("a", "b"):
            if not SHA.match(getattr(self, name)):
                raise CompareRequestError(f"{name}: not a commit sha (7 to 40 hex digits)")
        for name in ("platform", "group", "command"):
            value = getattr(self, name)
            if value is not None and not NAME.match(value):
                raise CompareRequestError(f"{name}: not a name ([A-Za-z0-9._:-]+)")
        if not re.match(r"^[A-Za-z0-9._:/%-]{1,200}$", self.metric):
            raise CompareRequestError("metric: not a metric name")

    def keep(self) -> NameFilter | None:
        if not (self.group or self.command):
            return None
        exact = (lambda v: f"^{re.escape(v)}$" if v else None)
        return NameFilter(".*", exact(self.group), exact(self.command))


@dataclass
class PlatformCompare:
    """One platform's report, and per row the functions that moved most."""

    platform: str
    report: ComparisonReport
    movers: dict[str, list[FunctionMove]] = field(default_factory=dict)
    rows: Markup = field(default_factory=Markup)  # the table's rows (web/rows.py)


def _on_branch(client: redis.Redis, sha: str, metric: str,
               platform: str) -> dict[tuple[str, str], list[reader.Point]]:
    """A commit's points when gc deleted its by.hash series: read on the branch it was
    benchmarked on (datasink/commit_points.py, as the pull-request comment reads them), per
    (test, topology), over every scope and build variant."""
    found: dict[tuple[str, str], list[reader.Point]] = {}
    for scope in reader.scopes(client):
        for variant in reader.list_build_variants(client, scope):
            points = commit_points.on_branch(client, commit_points.CommitQuery(
                scope, sha, platform, variant, metric))
            for row, pts in (points.points.items() if points else []):
                found.setdefault(row, []).extend(pts)
    return found


def _expired_side(client: redis.Redis, sha: str, req: CompareRequest,
                  platform: str) -> dict[str, reader.Series]:
    """:func:`_on_branch` as series per row (``test @ topology`` for several topologies)."""
    points = _on_branch(client, sha, req.metric, platform)
    several = len({top for _, top in points}) > 1
    return {label(test, top, several): reader.Series(f"{sha} on its branch", {}, pts)
            for (test, top), pts in sorted(points.items())}


def _reads(client: redis.Redis, req: CompareRequest) -> dict[str, SidesRead]:
    """Both commits' points per platform (the one asked, else every platform either ran
    on), each commit read once over every platform (``read_sides_per_platform``)."""
    def side(sha: str) -> reader.SeriesSelector:
        return reader.SeriesSelector(metric=req.metric, side=keys.Side("hash", sha),
                                     platform=req.platform)
    return read_sides_per_platform(client, SidesQuery(side(req.a), side(req.b),
                                                      keep=req.keep()))


def _with_expired(client: redis.Redis, req: CompareRequest, platform: str,
                  found: SidesRead | None) -> SidesRead:
    """``found``, or where a side has no by.hash series there (gc deleted them), that side
    read on its branch (the group and command filters need the by.hash series' labels)."""
    found = found or SidesRead({}, {}, ())
    if req.keep() is not None or (found.baseline and found.comparison):
        return found
    base = found.baseline or _expired_side(client, req.a, req, platform)
    comp = found.comparison or _expired_side(client, req.b, req, platform)
    notes = tuple(f"{which} {sha[:10]}: by.hash series gone (gc), its points read on its "
                  "branch" for which, sha, had in (("baseline", req.a, found.baseline),
                                                  ("comparison", req.b, found.comparison))
                  if not had)
    return SidesRead(base, comp, tuple(sorted(set(base) | set(comp))), found.notes + notes)


def _functions(client: redis.Redis, series: reader.Series | None) -> list[list[dict[str, Any]]]:
    """Per run of a series, the function counts its instruction profile wrote (when the
    file is readable from here)."""
    if series is None or not series.points or not series.key.startswith(keys.PREFIX):
        return []  # (points read on a branch after gc: no series of the commit's runs)
    parsed = keys.parse_key(series.key)
    ids = run_reader.run_ids_at(client, parsed.scope, parsed.test_name,
                                [ts for ts, _ in series.points])
    docs = run_reader.result_documents(client, sorted({r for row in ids for r in row}))
    out = []
    for doc in docs.values():
        path = doc.paths.get(PATH_KEY)
        if path and Path(path).is_file():
            functions = read_functions(Path(path))
            if functions:
                out.append(functions)
    return out


def _movers(client: redis.Redis, found: SidesRead,
            report: ComparisonReport) -> dict[str, list[FunctionMove]]:
    out = {}
    for row in report.rows:
        if row.baseline_median:
            moves = function_movers(_functions(client, found.baseline.get(row.test)),
                                    _functions(client, found.comparison.get(row.test)),
                                    row.baseline_median)
            if moves:
                out[row.test] = moves
    return out


_JUDGED: OrderedDict[str, ComparisonReport] = OrderedDict()
JUDGED_SIZE = 256
_JUDGING = threading.Lock()


def judged(samples: dict[str, Samples], options: CompareOptions,
           problems: dict[str, list[str]]) -> dict[str, ComparisonReport]:
    """Per platform, :func:`analysis.engine.judge_samples` of its samples (the platforms
    not judged yet measured together: :func:`~analysis.engine.judge_samples_many`), each
    kept by the digest of its samples, options and problems: the same samples always get
    the same verdicts, and a page is mostly asked again before new points arrive."""
    # pickled, not repr'd: the floats' shortest repr cost ~10 ms a page of every platform
    digests = {p: hashlib.sha256(pickle.dumps((sorted(found.items()), problems[p]), 5)
                                 + repr(options).encode()).hexdigest()
               for p, found in samples.items()}
    out: dict[str, ComparisonReport] = {}
    with _JUDGING:
        for platform, key in digests.items():
            if key in _JUDGED:
                _JUDGED.move_to_end(key)
                out[platform] = _JUDGED[key]
    new = [p for p in samples if p not in out]
    if new:
        out.update(judge_samples_many({p: samples[p] for p in new}, options,
                                      {p: problems[p] for p in new}))
    with _JUDGING:
        for platform in new:
            _JUDGED[digests[platform]] = out[platform]
        while len(_JUDGED) > JUDGED_SIZE:
            _JUDGED.popitem(last=False)
    return out


def compare(client: redis.Redis, req: CompareRequest) -> list[PlatformCompare]:
    """Every platform both commits ran on (or the one asked), each judged by the engine."""
    reads = _reads(client, req)
    platforms = [req.platform] if req.platform else sorted(
        p for p, found in reads.items() if found.baseline and found.comparison)
    if not platforms and req.keep() is None:  # gc may have deleted a side's by.hash series
        platforms = sorted({p for scope in reader.scopes(client)
                            for p in reader.list_platforms(client, scope)})
    return _judged_platforms(client, req, reads, platforms)


def compare_where_both_ran(client: redis.Redis, req: CompareRequest) -> list[PlatformCompare]:
    """:func:`compare` of ``req.platform`` when both commits have by.hash points there,
    else nothing: one platform's part of the page of every platform
    (:mod:`.page_workers`), judged as that page judges it."""
    if req.platform is None:
        raise ValueError("compare_where_both_ran: a request of one platform")
    reads = _reads(client, req)
    found = reads.get(req.platform)
    if found is None or not (found.baseline and found.comparison):
        return []
    return _judged_platforms(client, req, reads, [req.platform])


def _kept_sides(found: SidesRead) -> tuple[dict[str, reader.Series], dict[str, reader.Series]]:
    return ({r: found.baseline[r] for r in found.rows if r in found.baseline},
            {r: found.comparison[r] for r in found.rows if r in found.comparison})


def _session(client: redis.Redis, found: SidesRead, metric: str) -> list[ABRun] | None:
    """The runs of one interleaved A/B session behind both commits' points on a platform
    (:func:`inputs.session_pairs.session_runs`), or None: two samples."""
    base, comp = _kept_sides(found)
    return session_pairs.session_runs(client, base, comp, metric)


def _lab_views(client: redis.Redis, found: dict[str, SidesRead], samples: dict[str, Samples],
               metric: str, problems: dict[str, list[str]]) -> dict[str, LabView]:
    """Per platform, the lab's stored A/B of the two commits there (``inputs.lab_ab_report``:
    its rows are the engine's report, not judged again); a stored entry left out adds its
    note to the platform's ``problems``."""
    out = {}
    for platform in samples:
        view, notes = lab_ab_report.find_for_sides(client, _kept_sides(found[platform]), metric)
        problems[platform] += notes
        if view is not None:
            out[platform] = view
    return out


def _judged_platforms(client: redis.Redis, req: CompareRequest, reads: dict[str, SidesRead],
                      platforms: list[str]) -> list[PlatformCompare]:
    """Each of ``platforms``' rows of ``reads`` (or read on the branch where gc deleted a
    side's by.hash series) judged, with its table's rows."""
    options = catalogue_options(req.metric)
    found = {p: _with_expired(client, req, p, reads.get(p)) for p in platforms}
    samples = {p: f.samples() for p, f in found.items()}
    samples = {p: s for p, s in samples.items() if s}
    problems = {p: [*found[p].notes, *(
        f"{split(t)[0]}: no points on the {'baseline' if not b else 'comparison'} side"
        for t, (b, c) in s.items() if not b or not c)] for p, s in samples.items()}
    labs = _lab_views(client, found, samples, req.metric, problems)
    # the rows no stored lab A/B judged: judged from the points (all of them, mostly)
    rest = {p: replace(found[p], rows=tuple(labs[p].rest(found[p].rows)))
            if p in labs else found[p] for p in samples}
    todo = {p: rest[p].samples() for p in samples}
    todo = {p: s for p, s in todo.items() if s}
    sessions = {p: _session(client, rest[p], req.metric) for p in todo}
    reports = judged({p: s for p, s in todo.items() if sessions[p] is None}, options,
                     {p: [] if p in labs else problems[p] for p in todo
                      if sessions[p] is None})
    for platform, runs in sessions.items():
        if runs is not None:  # the pairs of the lab's A/B, as its comment judged them
            reports[platform] = session_pairs.judged_session(
                runs, _kept_sides(rest[platform]), options,
                [] if platform in labs else problems[platform])
    for platform, view in labs.items():  # the lab's A/B as the engine judged it
        reports[platform] = lab_ab_report.overlay(view, reports.get(platform),
                                                  problems[platform])
    out = []
    for platform in samples:
        report = reports[platform]
        movers = _movers(client, found[platform], report) \
            if req.metric == INSTRUCTIONS_METRIC else {}
        out.append(PlatformCompare(platform, report, movers, compare_rows(report.rows, movers)))
    return out
