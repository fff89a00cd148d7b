"""What ``rbs run`` does with a finished session: push it to the given datasink, or to the
embedded one (started on demand). A failure leaves the results on disk and says how to
push them later."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

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
from redis_benchmarks_spec.datasink.writer import PushReport
from redis_benchmarks_spec.results.document import RunResult, result_path


@dataclass(frozen=True)
class SessionPushOutcome:
    """Whether a session's results reached the datasink, and a line saying so."""

    ok: bool
    message: str
    report: PushReport | None = None


def push_session(results_dir: Path, url: str | None = None, data_dir: Path | None = None,
                 results: list[RunResult] | None = None) -> SessionPushOutcome:
    """Push ``results_dir`` to ``url``, or to the embedded datasink of ``data_dir``.

    ``results``, the session's documents still in memory, are pushed as they are (no
    re-reading from disk); their files only get the "pushed" markers.
    """
    later = f"results kept in {results_dir}; push them later with `rbs datasink push {results_dir}`"
    started = ""
    if url is None:
        try:
            state = EmbeddedDatasink(data_dir).up()
        except DatasinkError as exc:
            first = str(exc).splitlines()[0]
            return SessionPushOutcome(False, f"embedded datasink did not start: {first}; {later}")
        url = state.url
        if state.started:
            started = started_note(state)
    config = DatasinkConfig(url=url or "")
    client = connect(config)
    with client:
        if results is None:
            report = push_results_dir(client, results_dir)
        else:
            files: list[tuple[Path, RunResult | None]] = [
                (path, r) for r in results
                if (path := result_path(results_dir, r)).is_file()]
            report = push_result_files(client, files)
    where = config.display_url
    if report.ok:
        return SessionPushOutcome(True, f"{started}{report.summary()} to {where}", report)
    return SessionPushOutcome(False, f"{started}{report.summary()} to {where}; {later}", report)


def started_note(state: DatasinkStatus) -> str:
    """What to tell a user whose command just started the embedded datasink."""
    note = f" ({state.detail})" if state.detail else ""
    return (f"started the embedded datasink at {state.url} (pid {state.pid}, data in "
            f"{state.data_dir}){note}; it keeps running for Grafana and `rbs compare`: stop "
            f"it with `rbs datasink down{_data_dir_flag(state)}`; ")


def _data_dir_flag(state: DatasinkStatus) -> str:
    if state.data_dir == default_data_dir().resolve():
        return ""
    return f" --datasink-data-dir {state.data_dir}"
