"""The one definition of where a session's result documents live on disk.

Every run shape of ``rbs run`` writes below the session folder (``results/<stamp>/``)::

    <session>/<test>/<topology>/result.json                       a single run
    <session>/rep-NN/<test>/<topology>/result.json                --repetitions N
    <session>/<param>-<value>/<test>/<topology>/result.json       --sweep clients=1,8,64
    <session>/<baseline|comparison>/rep-NN/<test>/<topology>/...  an A/B session's sides

The runner writes a run's document in :func:`run_folder` of its place; pushing, reporting
and the agent find it again with :func:`document_path` (from the document itself: its A/B
side, repetition and swept value) or list every document with :func:`session_documents`.
Which of those documents are history (pushed to the datasink) is the datasink's rule
(``RunContext.is_history``), not the folder's.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from pathlib import Path

from redis_benchmarks_spec.results.document import RunResult, find_result_files, result_path

_REP = re.compile(r"^rep-(\d+)$")


@dataclass(frozen=True)
class RunPlace:
    """Where in a session one run belongs: its A/B side, repetition and swept value."""

    side: str = ""  # "baseline" | "comparison" in an A/B session
    repetition: int | None = None  # rep-NN of --repetitions (and of A/B pairs)
    sweep_param: str = ""
    sweep_value: str = ""

    @classmethod
    def of(cls, result: RunResult) -> RunPlace:
        """The place ``result`` says it has (context and sweep fields)."""
        ctx = result.context
        return cls(ctx.ab_side, ctx.repetition, result.sweep.get("param", ""),
                   result.sweep.get("value", ""))


def repetition_folder(repetition: int) -> str:
    """``rep-03``."""
    return f"rep-{repetition:02d}"


def sweep_folder(param: str, value: int | str) -> str:
    """``clients-64``."""
    return f"{param}-{value}"


def run_folder(session: Path, place: RunPlace) -> Path:
    """The folder the runner writes a run of ``place`` under (``<test>/<topology>/`` below)."""
    folder = session
    if place.side:
        folder = folder / place.side
    if place.repetition is not None:
        folder = folder / repetition_folder(place.repetition)
    if place.sweep_param:
        folder = folder / sweep_folder(place.sweep_param, place.sweep_value)
    return folder


def document_path(session: Path, result: RunResult) -> Path:
    """Where ``result``'s document is in ``session``, whatever the run's shape."""
    return result_path(run_folder(session, RunPlace.of(result)), result)


def repetition_of(path: Path, root: Path) -> int | None:
    """The ``rep-NN`` folder a document sits in below ``root``, if any."""
    for part in path.relative_to(root).parts:
        if m := _REP.match(part):
            return int(m[1])
    return None


def session_documents(session: Path) -> list[Path]:
    """Every result document of a session, every shape (sorted)."""
    return find_result_files(session)
