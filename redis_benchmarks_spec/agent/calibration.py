"""A platform's own noise: calibration A/A sessions at agent start, on a schedule, and after
the host fingerprint changed.

An A/A session runs the same redis-server on both sides of interleaved pairs; what its
pairs show is this host's noise for those tests. Each session's offsets (timed metrics) and
spreads (instruction counts) go into the noise book (``analysis.noise``), which turns them
into each test's noise floor, and the family's for tests of the same group, for every later
A/B on this platform. The book also records the host fingerprint the calibration ran under
(``telemetry.fingerprint``): a changed fingerprint drops the timed entries and calibrates
again, since floors measured on another host say nothing about this one.

A calibration that cannot run (a suite missing, a server that does not start) is logged and
the agent serves events with the floors it has (the uncalibrated default, said in every
report); a daemon never stops for it.
"""

from __future__ import annotations

import logging
import time
from dataclasses import dataclass, replace
from pathlib import Path

from redis_benchmarks_spec.agent.platform_config import CalibrationConfig
from redis_benchmarks_spec.analysis.noise import NoiseBook, families_of_runs
from redis_benchmarks_spec.analysis.session_runs import pair_runs
from redis_benchmarks_spec.inputs import noise_file
from redis_benchmarks_spec.runner.ab import ABConfig, Side
from redis_benchmarks_spec.runner.ab_files import save_book
from redis_benchmarks_spec.runner.ab_session import ABSessionPlan, run_session
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.validate import validate_catalog
from redis_benchmarks_spec.telemetry.fingerprint import host_fingerprint

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class CalibrationOutcome:
    """What a calibration did: entries recorded, why it ran, what changed on the host."""

    recorded: int
    why: str
    host_changes: tuple[str, ...] = ()


def due(book: NoiseBook, platform: str, fingerprint: dict[str, str], every_s: float,
        now_ms: int) -> str:
    """Why ``platform`` must be calibrated now, or ``""`` when its calibration holds."""
    last = book.calibrations.get(platform)
    if last is None:
        return "never calibrated"
    if last.fingerprint != fingerprint:
        return "the host fingerprint changed"
    if now_ms - last.at_ms >= every_s * 1000:
        return f"last calibrated {(now_ms - last.at_ms) / 3600_000:.1f} h ago"
    return ""


def calibrate(session: SessionConfig, suites: list[Suite], config: CalibrationConfig,
              book: NoiseBook, why: str) -> CalibrationOutcome:
    """One A/A session of ``suites`` (the same server on both sides, ``config.pairs``
    pairs), recorded into ``book`` (saved) under this host's fingerprint."""
    server = config.server or session.tools.redis_server or "redis-server"
    session = replace(session, test_time=config.test_time)
    ab = ABConfig(session=session, baseline=Side("baseline", server),
                  comparison=Side("comparison", server), repetitions=config.pairs)
    result = run_session(ABSessionPlan(ab, suites, max_pairs=config.pairs,
                                       replace_disturbed=False))
    platform = session.context.platform
    changes = book.calibrated(platform, host_fingerprint(), int(time.time() * 1000),
                              [s.name for s in suites])
    families = families_of_runs(result.runs)
    recorded = 0
    for report in (result.report, result.report.instructions):
        if report is None:
            continue
        for test, pairs in pair_runs(result.runs, report.options.metric,
                                         keep_disturbed=True).items():
            recorded += book.record(test, report.options.metric, platform, pairs.pairs,
                                    families.get(test, "")) is not None
    save_book(book)
    log.info("platform %s calibrated (%s): %d test/metric entries in %s", platform, why,
             recorded, book.path)
    return CalibrationOutcome(recorded, why, tuple(changes))


def calibrate_if_due(session: SessionConfig, suites: list[Suite],
                     config: CalibrationConfig, book_path: Path | None = None
                     ) -> CalibrationOutcome | None:
    """:func:`calibrate` when :func:`due` says so; None when the calibration holds."""
    book = noise_file.load(book_path)
    why = due(book, session.context.platform, host_fingerprint(), config.every_s,
              int(time.time() * 1000))
    if not why:
        return None
    return calibrate(session, suites, config, book, why)


#: what a calibration may raise (a binary that will not start, a bad suite file, an
#: unreadable noise book): logged, and the agent goes on with the floors it has
CALIBRATION_ERRORS = (OSError, RuntimeError, ValueError, noise_file.NoiseBookError)


def calibrate_platform(session: SessionConfig, suites_dir: Path,
                       config: CalibrationConfig) -> CalibrationOutcome | None:
    """The agent's calibration: the plan's suites of ``suites_dir``, :func:`calibrate_if_due`;
    a suite that is missing or a failure is logged (None)."""
    try:
        catalog = validate_catalog(suites_dir)
        suites = [s for s in catalog.suites if s.name in config.tests]
        missing = sorted(set(config.tests) - {s.name for s in suites})
        if missing:
            log.error("calibration: no valid suite %s in %s", missing[0], suites_dir)
        if not suites:
            return None
        return calibrate_if_due(session, suites, config)
    except CALIBRATION_ERRORS as exc:
        log.error("calibration of %s did not run: %s", session.context.platform, exc)
        return None
