"""What ``rbs run`` does with a finished session: push it to the given datasink, or to the
embedded one (started on demand). A failure leaves the results on disk and says how to
push them later."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import redis

from redis_benchmarks_spec.datasink import platforms
from redis_benchmarks_spec.datasink.embedded import (
    DatasinkError,
    DatasinkStatus,
    EmbeddedDatasink,
    default_data_dir,
)
from redis_benchmarks_spec.datasink.store import (
    DatasinkConfig,
    connect,
    push_result_files,
    push_results_dir,
)
from redis_benchmarks_spec.datasink.writer import PushOptions, PushReport, skip_reason
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.layout import document_path
from redis_benchmarks_spec.results.platform import PlatformRecord


@dataclass(frozen=True)
class SessionPushOutcome:
    """Whether a session's results reached the datasink, and a line saying so.

    ``lost``: the datasink answered, yet runs that belong in history did not reach it (a
    document not where the layout says, a refused write): an error, unlike a datasink
    that is down, after which ``rbs datasink push`` sends the kept files later."""

    ok: bool
    message: str
    report: PushReport | None = None
    lost: bool = False


def push_session(results_dir: Path, url: str | None = None, data_dir: Path | None = None,
                 results: list[RunResult] | None = None,
                 platform: PlatformRecord | None = None) -> SessionPushOutcome:
    """Push ``results_dir`` to ``url``, or to the embedded datasink of ``data_dir``.

    ``results``, the session's documents still in memory, are pushed as they are (no
    re-reading from disk) and found on disk where :mod:`results.layout` puts every run
    shape (rep-NN/, clients-N/, A/B sides); their files get the "pushed" markers. A session
    with runs to push of which fewer reached the datasink is a failed push, never a quiet 0.
    ``platform``, this host's description, is stored too when its facts changed
    (:func:`datasink.platforms.write`).
    """
    later = f"results kept in {results_dir}; push them later with `rbs datasink push {results_dir}`"
    started = shared = ""
    if url is None:
        try:
            state = EmbeddedDatasink(data_dir).up()
        except DatasinkError as exc:
            first = str(exc).splitlines()[0]
            return SessionPushOutcome(False, f"embedded datasink did not start: {first}; {later}")
        url = state.url
        if state.started:
            started = started_note(state)
        elif not state.mine:
            shared = f" (owner: {state.whose})"
    config = DatasinkConfig(url=url or "")
    client = connect(config)
    with client:
        if results is None:
            report = push_results_dir(client, results_dir)
        else:
            files, missing = session_files(results_dir, results)
            report = push_result_files(client, files)
            report.files_not_pushed += missing
        why = "" if report.error else _store_platform(client, platform)
    where = config.display_url + shared
    short = missing_history(report, results or [])
    why += skipped_reasons(report)
    if report.ok and not short:
        return SessionPushOutcome(True, f"{started}{report.summary()}{why} to {where}", report)
    return SessionPushOutcome(False, f"{started}{report.summary()}{short}{why} to {where}; "
                              f"{later}",
                              report, lost=not report.error)


def _store_platform(client: redis.Redis, record: PlatformRecord | None) -> str:
    """Store this host's description when its facts changed; a note when it could not be
    (the results are what matters, and they arrived)."""
    if record is None:
        return ""
    try:
        platforms.write(client, record)
    except redis.RedisError as exc:
        return f" (platform record of {record.platform} not stored: {exc})"
    return ""


def session_files(session: Path, results: list[RunResult]
                  ) -> tuple[list[tuple[Path, RunResult | None]], list[str]]:
    """Each result beside its document's path, and the paths expected but not on disk."""
    files: list[tuple[Path, RunResult | None]] = []
    missing: list[str] = []
    for result in results:
        path = document_path(session, result)
        if path.is_file():
            files.append((path, result))
        else:
            missing.append(f"{path} (run {result.run_id}: no document there)")
    return files, missing


def missing_history(report: PushReport, results: list[RunResult]) -> str:
    """``"; 3 of 8 run(s) with history to push did not reach it"`` or ''."""
    wanted = [r.run_id for r in results if not skip_reason(r, PushOptions())]
    done = set(report.pushed)
    lost = [run_id for run_id in wanted if run_id not in done]
    if not lost:
        return ""
    return f"; {len(lost)} of {len(wanted)} run(s) with history to push did not reach it"


def skipped_reasons(report: PushReport) -> str:
    """`` (skipped: status failed; no metrics)``: each distinct reason once, or ''."""
    reasons = sorted(set(report.skipped.values()))
    return f" (skipped: {'; '.join(reasons)})" if reasons else ""


def started_note(state: DatasinkStatus) -> str:
    """What to tell a user whose command just started the embedded datasink."""
    note = f" ({state.detail})" if state.detail else ""
    return (f"started the embedded datasink at {state.url} (pid {state.pid}, data in "
            f"{state.data_dir}), owned by {state.whose}{note}; it keeps running for Grafana "
            f"and `rbs compare`: stop it with `{down_command(state)}`; ")


def down_command(state: DatasinkStatus) -> str:
    """The command that stops this datasink, run by its owner: ``rbs datasink down``, with
    the folder when it is not the owner's default."""
    return f"rbs datasink down{_data_dir_flag(state)}"


def _data_dir_flag(state: DatasinkStatus) -> str:
    home = state.owner.datasink_dir if state.owner else default_data_dir()
    if state.data_dir == home.resolve():
        return ""
    return f" --datasink-data-dir {state.data_dir}"
