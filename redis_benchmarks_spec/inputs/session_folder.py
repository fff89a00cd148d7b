"""Runs read back from disk, each document once, for :func:`analysis.engine.judge`.

* an A/B session (``rbs run --baseline-server ...``): ``<root>/baseline/rep-NN/...`` and
  ``<root>/comparison/rep-NN/...``, with ``sequential.json`` (an ``--until-decided``
  session's design and looks), ``noise-priors.json`` and ``host-noise.json`` (the noise it
  judged with, ``analysis.session_files``) beside, written by the session's owner
  (``runner.ab_files``);
* two results folders: when they are the two sides of one A/B session (``<root>/baseline``
  and ``<root>/comparison``), they are that session, paired, and ``rbs compare`` says what
  the run said; otherwise two independent samples, compared unpaired.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.analysis.sequential_compare import SEQUENTIAL_RECORD, SequentialRecord
from redis_benchmarks_spec.analysis.session_files import (
    HOST_NOISE_FILE,
    PRIORS_FILE,
    SIDES_FILE,
    SessionPriors,
    host_noise_from_json,
    priors_from_json,
    sides_from_json,
)
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.analysis.verdict import HostNoise
from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.results.layout import repetition_of, session_documents


class SessionFolderError(ValueError):
    """A folder that cannot be read as asked; the message names it."""


@dataclass
class RunsOnDisk:
    """Runs of both sides, and what the folders said about how to judge them."""

    runs: list[ABRun] = field(default_factory=list)
    paired: bool = False
    record: SequentialRecord | None = None
    priors: SessionPriors = field(default_factory=dict)
    problems: list[str] = field(default_factory=list)
    root: Path | None = None  # the session's folder, when the runs are one session's
    # per timed metric, the host's noise the session was judged with (host-noise.json)
    host_noise: dict[str, HostNoise] = field(default_factory=dict)
    # what the session named its sides (sides.json: two commits and their subjects)
    labels: tuple[str, str] | None = None

    def side(self, name: str) -> list[RunResult]:
        return [r.result for r in self.runs if r.side == name]


def _read_side(directory: Path, side: str, keep: NameFilter | None,
               problems: list[str]) -> list[ABRun]:
    if not directory.is_dir():
        raise SessionFolderError(f"{directory}: not a directory")
    out = []
    for path in session_documents(directory):
        try:
            doc = RunResult.read(path)
        except (ValueError, OSError) as exc:
            problems.append(str(exc) if str(path) in str(exc) else f"{path}: {exc}")
            continue
        if keep is not None and not keep.matches(doc.test_name, doc.tested_groups,
                                                 doc.tested_commands):
            continue
        if not doc.ok:
            problems.append(f"{path}: status {doc.status!r}, ignored")
        # the document says which pair it belongs to; older ones only by their folder
        rep = doc.context.repetition if doc.context.repetition is not None \
            else repetition_of(path, directory)
        out.append(ABRun(side, rep, doc))
    return out


def read_priors(root: Path) -> SessionPriors:
    path = root / PRIORS_FILE
    if not path.is_file():
        return {}
    try:
        return priors_from_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise SessionFolderError(f"{path}: {exc}") from None


def read_host_noise(root: Path) -> dict[str, HostNoise]:
    path = root / HOST_NOISE_FILE
    if not path.is_file():
        return {}
    try:
        return host_noise_from_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise SessionFolderError(f"{path}: {exc}") from None


def read_sides(root: Path) -> tuple[str, str] | None:
    path = root / SIDES_FILE
    if not path.is_file():
        return None
    try:
        return sides_from_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise SessionFolderError(f"{path}: {exc}") from None


def read_record(root: Path) -> SequentialRecord | None:
    path = root / SEQUENTIAL_RECORD
    if not path.is_file():
        return None
    try:
        return SequentialRecord.from_json(path.read_text())
    except (OSError, ValueError) as exc:
        raise SessionFolderError(f"{path}: {exc}") from None


def is_session(root: Path) -> bool:
    return (root / BASELINE).is_dir() and (root / COMPARISON).is_dir()


def load_session(root: Path, keep: NameFilter | None = None) -> RunsOnDisk:
    """An A/B session's runs, paired by repetition, with its record and priors."""
    problems: list[str] = []
    runs = [*_read_side(root / BASELINE, BASELINE, keep, problems),
            *_read_side(root / COMPARISON, COMPARISON, keep, problems)]
    return RunsOnDisk(runs, True, read_record(root), read_priors(root), problems, root,
                      read_host_noise(root), read_sides(root))


def _session_root(baseline: Path, comparison: Path) -> Path | None:
    b, c = baseline.resolve(), comparison.resolve()
    if b.name == BASELINE and c.name == COMPARISON and b.parent == c.parent:
        return b.parent
    return None


def load_folders(baseline: Path, comparison: Path, keep: NameFilter | None = None) -> RunsOnDisk:
    """Two folders: one session's sides (paired), or two independent samples."""
    root = _session_root(baseline, comparison)
    if root is not None:
        found = load_session(root, keep)
        if any(r.repetition is not None for r in found.runs):
            return found
    problems: list[str] = []
    runs = [*_read_side(baseline, BASELINE, keep, problems),
            *_read_side(comparison, COMPARISON, keep, problems)]
    unpaired = [ABRun(r.side, None, r.result) for r in runs]
    return RunsOnDisk(unpaired, False, None, {}, problems)


def result_documents(directory: Path) -> list[RunResult]:
    """Every readable ``result.json`` under ``directory`` (unreadable ones are skipped: the
    comparison itself reports them as problems)."""
    docs = []
    for path in find_result_files(directory):
        try:
            docs.append(RunResult.read(path))
        except (ValueError, OSError):
            continue
    return docs
