"""What an HTML report shows, gathered from a results folder, an A/B session or two folders,
and (optionally) the datasink's history. Nothing here draws or formats.

* a results folder: one side, every run under it;
* an A/B session (``rbs run --baseline-server ...``): ``baseline/`` and ``comparison/``
  folders with ``rep-NN`` repetitions, compared paired by repetition;
* two folders (``--baseline-dir`` / ``--comparison-dir``): compared unpaired.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass, field
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.compare import (
    CompareOptions,
    ComparisonReport,
    compare_paired,
    compare_samples,
)
from redis_benchmarks_spec.analysis.context import (
    context_from_results,
    result_documents,
    side_from_results,
)
from redis_benchmarks_spec.analysis.sequential_compare import (
    SEQUENTIAL_RECORD,
    SequentialRecord,
    compare_recorded,
)
from redis_benchmarks_spec.datasink import keys, reader
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys, pairable, split
from redis_benchmarks_spec.results.document import RunResult, find_result_files

Point = tuple[int, float]
_REP = re.compile(r"^rep-(\d+)$")


class ReportInputError(ValueError):
    """The folder holds nothing a report can be made of."""


@dataclass
class SideRuns:
    """One side's ok runs per test, and the runs that failed."""

    name: str
    runs: dict[str, list[RunResult]] = field(default_factory=dict)
    failed: list[RunResult] = field(default_factory=list)
    # values known without their documents (datasink points of a baseline branch)
    points: dict[str, list[float]] = field(default_factory=dict)

    def values(self, test: str, metric: str) -> list[float]:
        if test in self.points:
            return list(self.points[test])
        return [r.metrics[metric] for r in self.runs.get(test, []) if metric in r.metrics]


@dataclass
class History:
    """A metric's series on a branch per test, and the compared commits' run times."""

    branch: str
    lines: dict[str, list[tuple[str, list[Point]]]] = field(default_factory=dict)
    markers: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    note: str = ""


@dataclass
class ReportData:
    title: str
    metric: str
    sides: list[SideRuns]
    report: ComparisonReport | None = None
    history: History | None = None
    problems: list[str] = field(default_factory=list)

    @property
    def tests(self) -> list[str]:
        rows = [r.test for r in self.report.rows] if self.report else []
        return sorted({t for side in self.sides for t in [*side.runs, *side.points]} | set(rows))


def _side(name: str, docs: list[RunResult], keys: ComparisonKeys | None = None) -> SideRuns:
    """``keys`` label a suite's topologies apart (by default from ``docs``)."""
    keys = keys or ComparisonKeys.of(docs)
    side = SideRuns(name)
    for doc in docs:
        if doc.ok:
            side.runs.setdefault(keys(doc), []).append(doc)
        else:
            side.failed.append(doc)
    return side


def _docs(directory: Path) -> list[RunResult]:
    if not directory.is_dir():
        raise ReportInputError(f"{directory}: not a directory")
    return result_documents(directory)


def _repetition(path: Path, root: Path) -> int | None:
    for part in path.relative_to(root).parts:
        if m := _REP.match(part):
            return int(m[1])
    return None


def _pairs(root: Path, metric: str, keys: ComparisonKeys) -> dict[str, list[tuple[float, float]]]:
    """Per test, (baseline, comparison) values of repetitions where both sides have one."""
    values: dict[tuple[str, int, str], float] = {}
    for side in ("baseline", "comparison"):
        for path in find_result_files(root / side):
            rep = _repetition(path, root / side)
            doc = RunResult.read(path)
            # as runner.ab.paired_samples: a disturbed run leaves its pair out
            if rep is not None and pairable(doc) and metric in doc.metrics:
                values[(keys(doc), rep, side)] = doc.metrics[metric]
    tests = sorted({t for t, _, _ in values})
    reps = sorted({r for _, r, _ in values})
    return {t: [(values[(t, r, "baseline")], values[(t, r, "comparison")]) for r in reps
                if (t, r, "baseline") in values and (t, r, "comparison") in values]
            for t in tests}


def from_folder(root: Path, options: CompareOptions) -> ReportData:
    """A results folder, or an A/B session when it holds ``baseline/`` and ``comparison/``."""
    if (root / "baseline").is_dir() and (root / "comparison").is_dir():
        return from_ab_session(root, options)
    docs = _docs(root)
    if not docs:
        raise ReportInputError(f"{root}: no result.json below it")
    return ReportData(title=f"Results of {root}", metric=options.metric,
                      sides=[_side(str(root), docs)])


def _server_label(docs: list[RunResult]) -> str:
    """A side of an A/B session named by its server binary(ies)."""
    servers = sorted({d.redis_server for d in docs if d.redis_server})
    return "redis-server " + ", ".join(servers) if servers else "?"


def from_ab_session(root: Path, options: CompareOptions) -> ReportData:
    """An interleaved A/B session: compared paired by repetition."""
    base, comp = _docs(root / "baseline"), _docs(root / "comparison")
    keys = ComparisonKeys.of([*base, *comp])
    pairs = {t: p for t, p in _pairs(root, options.metric, keys).items() if p}
    if not pairs:
        raise ReportInputError(f"{root}: no repetition has an ok run on both sides")
    record = _sequential_record(root, options.metric)
    report = compare_paired(pairs, options) if record is None else \
        compare_recorded(pairs, record, options)
    ok_b, ok_c = [d for d in base if d.ok], [d for d in comp if d.ok]
    report.context = context_from_results(side_from_results(_server_label(ok_b), ok_b),
                                          side_from_results(_server_label(ok_c), ok_c),
                                          ok_b + ok_c, paired=True)
    return ReportData(title=f"A/B session {root}", metric=options.metric,
                      sides=[_side("baseline", base, keys), _side("comparison", comp, keys)],
                      report=report)


def _sequential_record(root: Path, metric: str) -> SequentialRecord | None:
    """The design of an ``--until-decided`` session, when it was run on this metric: its
    pairs are then judged as the run judged them (repeated p-values and intervals), so the
    page and the run's table agree. Another metric is compared fixed-sample."""
    path = root / SEQUENTIAL_RECORD
    if not path.is_file():
        return None
    try:
        record = SequentialRecord.from_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise ReportInputError(f"{path}: {exc}") from None
    return record if record.metric == metric else None


def from_two_folders(baseline: Path, comparison: Path, options: CompareOptions) -> ReportData:
    """Two results folders, compared unpaired."""
    docs = [_docs(baseline), _docs(comparison)]
    keys = ComparisonKeys.of([*docs[0], *docs[1]])
    sides = [_side("baseline", docs[0], keys), _side("comparison", docs[1], keys)]
    samples = {t: (sides[0].values(t, options.metric), sides[1].values(t, options.metric))
               for t in sorted(set(sides[0].runs) | set(sides[1].runs))}
    report = compare_samples(samples, options)
    ok = [r for s in sides for runs in s.runs.values() for r in runs]
    report.context = context_from_results(
        side_from_results(str(baseline), [r for rs in sides[0].runs.values() for r in rs]),
        side_from_results(str(comparison), [r for rs in sides[1].runs.values() for r in rs]),
        ok)
    return ReportData(title=f"{baseline} vs {comparison}", metric=options.metric,
                      sides=sides, report=report)


def from_report_json(path: Path) -> ReportData:
    """A comparison saved by ``rbs compare --format json``: its rows, header and options."""
    try:
        report = ComparisonReport.from_dict(json.loads(path.read_text()))
    except OSError as exc:
        raise ReportInputError(f"{path}: {exc.strerror}") from None
    except (ValueError, KeyError, TypeError) as exc:
        raise ReportInputError(f"{path}: not a comparison written by rbs compare --format "
                               f"json ({exc})") from None
    names = ("baseline", "comparison")
    sides = [SideRuns(name) for name in names]
    return ReportData(title=f"Comparison {path.name}", metric=report.options.metric,
                      sides=sides, report=report)


def _commits(data: ReportData) -> list[str]:
    if data.report and data.report.context:
        ctx = data.report.context
        return [*ctx.baseline.commits, *ctx.comparison.commits]
    return sorted({r.context.git.hash for s in data.sides for rs in s.runs.values()
                   for r in rs if r.context.git.hash})


def _series_label(series: reader.Series) -> str:
    # key: prefix/by/env/org/repo/test/variant/platform/topology/branch/metric
    parts = series.key.split("/")
    return "/".join(parts[7:9]) if len(parts) > 9 else series.key


def attach_history(data: ReportData, client: redis.Redis, branch: str,
                   platform: str | None = None) -> None:
    """The metric's history on ``branch`` for every test, with the compared commits marked
    where those commits have points in the datasink."""
    history = History(branch=branch)
    commits = _commits(data)
    for test in data.tests:
        name, topology = split(test)
        sel = reader.SeriesSelector(metric=data.metric, side=keys.Side("branch", branch),
                                    test_name=name, platform=platform, topology=topology)
        history.lines[test] = [(_series_label(s), s.points)
                               for s in reader.read_series(client, sel) if s.points]
        marks: list[tuple[str, int]] = []
        for sha in commits:
            hsel = reader.SeriesSelector(metric=data.metric, side=keys.Side("hash", sha),
                                         test_name=name, platform=platform,
                                         topology=topology)
            marks += [(sha[:10], t) for s in reader.read_series(client, hsel)
                      for t, _ in s.points[-1:]]
        history.markers[test] = marks
    if not any(history.lines.values()):
        history.note = f"no points on branch {branch} in the datasink for these tests"
    data.history = history
