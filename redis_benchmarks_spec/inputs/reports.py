"""A report's runs read from disk or the datasink, each document once, then judged by the
one engine: a results folder (one side), an A/B session (``baseline/`` and ``comparison/``
with ``rep-NN`` repetitions, paired by repetition), two folders (one session's sides, paired,
else unpaired), a comparison saved by ``rbs compare --format json``, and the history of the
compared tests on a branch.
"""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.context import context_from_results, side_from_results
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.lab_table import LabTable, lab_table
from redis_benchmarks_spec.analysis.report_data import (
    ReportData,
    ReportInputError,
    SideRuns,
    from_runs,
    side_of,
)
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON
from redis_benchmarks_spec.datasink import lab_profile
from redis_benchmarks_spec.inputs.comparison_series import HistoryQuery, history_of
from redis_benchmarks_spec.inputs.session_folder import (
    RunsOnDisk,
    SessionFolderError,
    is_session,
    load_folders,
    load_session,
    result_documents,
)
from redis_benchmarks_spec.results.document import RunResult


def _docs(directory: Path) -> list[RunResult]:
    if not directory.is_dir():
        raise ReportInputError(f"{directory}: not a directory")
    return result_documents(directory)


def from_folder(root: Path, options: CompareOptions, recorded_metric: bool = False
                ) -> ReportData:
    """A results folder, or an A/B session when it holds ``baseline/`` and ``comparison/``
    (``recorded_metric``: judged on the metric its ``--until-decided`` record decided on,
    which ``auto`` may have chosen, when it has one)."""
    if is_session(root):
        return from_ab_session(root, options, recorded_metric)
    docs = _docs(root)
    if not docs:
        raise ReportInputError(f"{root}: no result.json below it")
    return ReportData(title=f"Results of {root}", metric=options.metric,
                      sides=[side_of(str(root), docs)])


def _server_label(docs: list[RunResult]) -> str:
    """A side of an A/B session named by its server binary(ies)."""
    servers = sorted({d.redis_server for d in docs if d.redis_server})
    return "redis-server " + ", ".join(servers) if servers else "?"


def judged(found: RunsOnDisk, options: CompareOptions,
           labels: tuple[str, str] | None = None) -> ComparisonReport:
    """The engine's report of runs read from disk, with the header of their documents
    (each side labelled by ``labels``, by default by its server binary)."""
    record = found.record if found.record and found.record.metric == options.metric else None
    ok_b = [d for d in found.side(BASELINE) if d.ok]
    ok_c = [d for d in found.side(COMPARISON) if d.ok]
    names = labels or found.labels or (_server_label(ok_b), _server_label(ok_c))
    context = context_from_results(side_from_results(names[0], ok_b),
                                   side_from_results(names[1], ok_c),
                                   ok_b + ok_c, paired=found.paired)
    how = Judging(options, found.paired, record, found.priors, host_noise=found.host_noise,
                  context=context)
    return judge(found.runs, how, found.problems)


def from_ab_session(root: Path, options: CompareOptions,
                    recorded_metric: bool = False) -> ReportData:
    """An interleaved A/B session: its runs judged by the engine, as the run judged them
    (``recorded_metric``: see :func:`from_folder`)."""
    try:
        found = load_session(root)
    except SessionFolderError as exc:
        raise ReportInputError(str(exc)) from None
    if recorded_metric and found.record is not None:
        options = replace(options, metric=found.record.metric)
    report = judged(found, options)
    if not report.rows:
        raise ReportInputError(f"{root}: no ok run on both sides of the session")
    return from_runs(f"A/B session {root}", found.runs, report)


def from_two_folders(baseline: Path, comparison: Path, options: CompareOptions) -> ReportData:
    """Two results folders: one session's sides (paired), else two samples (unpaired)."""
    try:
        found = load_folders(baseline, comparison)
    except SessionFolderError as exc:
        raise ReportInputError(str(exc)) from None
    report = judged(found, options, (str(baseline), str(comparison)))
    return from_runs(f"{baseline} vs {comparison}", found.runs, report)


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


def read_lab_table(client: redis.Redis, where: tuple[str, str, str], commit: str | None = None,
                   against: str | None = None) -> LabTable | None:
    """The lab-wide instruction table of ``commit`` (default: the branch's last profiled
    commit) against ``against`` (default: the profiled commit before it), with its table
    per suite group (None when the lab profiled no such commit of the branch)."""
    org, repo, _ = where
    if commit is None:
        commits = lab_profile.profiled_commits(client, where, 2)
        if not commits:
            return None
        commit, previous = commits[-1], (commits[0] if len(commits) > 1 else None)
    else:
        previous = lab_profile.profiled_before(client, where, commit)
    previous = against or previous
    now, groups = lab_profile.load_suites(client, org, repo, commit)
    if not now:
        return None
    before = lab_profile.load(client, org, repo, previous) if previous else None
    return lab_table(commit, now, previous if before else None, before or None, groups=groups)


def attach_history(data: ReportData, client: redis.Redis, branch: str,
                   platform: str | None = None) -> None:
    """The metric's history on ``branch`` for every test, with the compared commits marked
    where those commits have points in the datasink (``inputs.comparison_series``)."""
    data.history = history_of(client, HistoryQuery(data.metric, branch, tuple(data.tests),
                                                   tuple(_commits(data)), platform))
    data.lab_table = read_lab_table(client, ("redis", "redis", branch))
