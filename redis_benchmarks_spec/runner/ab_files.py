"""What an A/B session writes besides its runs' documents, for ``rbs run`` and the agent
alike (:mod:`runner.ab_session` calls these; nobody else writes them):

* ``noise-priors.json`` and ``host-noise.json`` in the session folder, before the first
  pair: the noise its verdicts are judged with (``analysis.session_files``), so a later
  ``rbs report`` of the folder, even of an interrupted session, judges as the run did;
* ``sequential.json`` after an ``--until-decided`` session: its design and looks;
* an A/A session's (the same binary on both sides) pair spreads, into the noise book it was
  given (``analysis.noise``), saved atomically.
"""

from __future__ import annotations

import json
from pathlib import Path

from redis_benchmarks_spec.analysis.compare import ComparisonReport
from redis_benchmarks_spec.analysis.engine import MEMORY_METRIC, judged_deterministic
from redis_benchmarks_spec.analysis.noise import NoiseBook, families_of_runs
from redis_benchmarks_spec.analysis.sequential_compare import SEQUENTIAL_RECORD, SequentialRecord
from redis_benchmarks_spec.analysis.session_files import (
    HOST_NOISE_FILE,
    PRIORS_FILE,
    SIDES_FILE,
    SessionPriors,
    host_noise_to_json,
    priors_to_json,
    sides_to_json,
)
from redis_benchmarks_spec.analysis.session_runs import ABRun, pair_runs
from redis_benchmarks_spec.analysis.verdict import HostNoise
from redis_benchmarks_spec.runner.ab import ABConfig


def write_judging(root: Path, priors: SessionPriors, host_noise: dict[str, HostNoise]) -> None:
    """The noise the session will be judged with (the priors always; the host's noise when
    there is any: a folder without it is read as none)."""
    root.mkdir(parents=True, exist_ok=True)
    (root / PRIORS_FILE).write_text(priors_to_json(priors))
    if host_noise:
        (root / HOST_NOISE_FILE).write_text(host_noise_to_json(host_noise))


def write_sides(root: Path, labels: tuple[str, str] | None) -> None:
    """The names of the sides the session was given (two commits), for later reports."""
    if labels is not None:
        root.mkdir(parents=True, exist_ok=True)
        (root / SIDES_FILE).write_text(sides_to_json(labels))


def write_record(root: Path, record: SequentialRecord | None) -> None:
    """An ``--until-decided`` session's record (nothing for a fixed session)."""
    if record is not None:
        root.mkdir(parents=True, exist_ok=True)
        (root / SEQUENTIAL_RECORD).write_text(record.to_json())


def same_binary(ab: ABConfig) -> bool:
    """Both sides run the same file with the same arguments: an A/A (calibration) session."""
    a, b = Path(ab.baseline.redis_server), Path(ab.comparison.redis_server)
    if ab.baseline.server_args != ab.comparison.server_args:
        return False
    try:
        return a.resolve() == b.resolve() or a.read_bytes() == b.read_bytes()
    except OSError:
        return False


def record_aa(book: NoiseBook, ab: ABConfig, runs: list[ABRun],
              report: ComparisonReport) -> int:
    """An A/A session's pair spreads into ``book`` (per test, metric, platform), saved when
    any was recorded; how many test/metric entries were. Not an A/A session: 0."""
    if not same_binary(ab):
        return 0
    platform = ab.session.context.platform
    families = families_of_runs(runs)
    # deterministic metrics (instructions, memory figures) pool as priors; a timed metric's
    # offsets and spread set its floor and least spread on this host (analysis/noise.py)
    timed = [] if report.options.metric == MEMORY_METRIC else [report.options.metric]
    recorded = 0
    for metric in dict.fromkeys([*timed, *judged_deterministic(report)]):
        for test, pairs in pair_runs(runs, metric, keep_disturbed=True).items():
            recorded += book.record(test, metric, platform, pairs.pairs,
                                    families.get(test, "")) is not None
    if recorded:
        save_book(book)
    return recorded


def save_book(book: NoiseBook) -> None:
    """The book written atomically to its file (a reader never sees half of it)."""
    book.path.parent.mkdir(parents=True, exist_ok=True)
    tmp = book.path.with_suffix(".tmp")
    tmp.write_text(json.dumps(book.to_dict(), indent=1))
    tmp.replace(book.path)
