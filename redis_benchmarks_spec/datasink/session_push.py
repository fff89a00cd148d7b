"""What ``rbs run`` does with a finished session: push it to the given datasink, or to the
embedded one (started on demand). A failure leaves the results on disk and says how to
push them later."""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.datasink.embedded import DatasinkError, EmbeddedDatasink
from redis_benchmarks_spec.datasink.store import DatasinkConfig, connect, push_results_dir
from redis_benchmarks_spec.datasink.writer import PushReport


@dataclass(frozen=True)
class SessionPushOutcome:
    """Whether a session's results reached the datasink, and a line saying so."""

    ok: bool
    message: str
    report: PushReport | None = None


def push_session(results_dir: Path, url: str | None = None,
                 data_dir: Path | None = None) -> SessionPushOutcome:
    """Push ``results_dir`` to ``url``, or to the embedded datasink of ``data_dir``."""
    later = f"results kept in {results_dir}; push them later with `rbs datasink push {results_dir}`"
    if url is None:
        try:
            url = EmbeddedDatasink(data_dir).up().url
        except DatasinkError as exc:
            return SessionPushOutcome(False, f"embedded datasink did not start: {exc}; {later}")
    config = DatasinkConfig(url=url or "")
    client = connect(config)
    with client:
        report = push_results_dir(client, results_dir)
    where = config.display_url
    if report.ok:
        return SessionPushOutcome(True, f"{report.summary()} to {where}", report)
    return SessionPushOutcome(False, f"{report.summary()} to {where}; {later}", report)
