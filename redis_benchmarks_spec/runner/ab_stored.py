"""An A/B test whose baseline side was measured already: the base commit's instruction
counts from its push (``agent.base_counts`` finds them), so only the comparison side runs.

Instruction counts do not drift with host load (docs/statistics.md: CV 0.15 % for 50,000
SETs), so the base commit's counts measured on the same platform, host fingerprint, tool and
build variant are the baseline side; running the base again would measure the same numbers.
Each head run is paired with a stored base run (in turn), and the stored run keeps only its
deterministic figures: a timed figure measured at the push is not comparable with one
measured now, so timed metrics get no pair from it (they stay interleaved pairs of tests
that run both sides). A head run whose tool or tool version differs from the stored runs'
makes the test run fresh pairs from then on, and the reason is kept for the comment.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace

from redis_benchmarks_spec.analysis.session_runs import (
    BASELINE,
    COMPARISON,
    STORED_BASE,
    ABRun,
    deterministic,
)
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.results.document import PRELOAD_SNAPSHOT, RunResult
from redis_benchmarks_spec.suites.suite import Suite

COUNTED = INSTRUCTIONS_METRIC


@dataclass
class StoredBaseline:
    """Per test label, the base commit's runs standing in for the baseline side, and per
    test, why it ran fresh pairs after all (filled while the session runs)."""

    runs: dict[str, list[RunResult]] = field(default_factory=dict)
    fresh: dict[str, str] = field(default_factory=dict)

    def reused(self, test: str) -> bool:
        return bool(self.runs.get(test)) and test not in self.fresh

    @property
    def run_ids(self) -> set[str]:
        """The stored runs' ids: they are the base's push, never pushed again."""
        return {r.run_id for runs in self.runs.values() for r in runs}


def counts_only(doc: RunResult, repetition: int) -> RunResult:
    """The stored run as the baseline of one pair: its deterministic figures only, labelled
    with the pair's repetition and flagged as the stored base (the engine counts its spread)."""
    metrics = {k: v for k, v in doc.metrics.items() if deterministic(k)}
    context = replace(doc.context, ab_side=BASELINE, repetition=repetition)
    flags = [*doc.flags, STORED_BASE] if STORED_BASE not in doc.flags else list(doc.flags)
    return replace(doc, metrics=metrics, context=context, flags=flags)


def mismatch(head: RunResult, stored: list[RunResult]) -> str:
    """Why the stored runs cannot be this head run's baseline ('' when they can)."""
    if not head.ok:
        return ""  # a failed head run says nothing about the tool; its pair is missing anyway
    first = stored[0]
    if (head.tool, head.tool_version) != (first.tool, first.tool_version):
        return (f"the tool changed since the base was measured ({first.tool} "
                f"{first.tool_version or '?'} then, {head.tool} {head.tool_version or '?'} now)")
    if COUNTED in head.metrics and COUNTED not in first.metrics:
        return "the base's push did not count instructions"
    loaded = [PRELOAD_SNAPSHOT in d.dataset for d in (head, first)]
    if loaded[0] != loaded[1]:
        # a loaded dataset is not a written one to the byte (runner/preload_snapshot.py)
        return ("the base's push wrote its preload, this head loads a snapshot of it"
                if loaded[0] else "the base's push loaded a preload snapshot, this head "
                                  "writes its preload")
    return ""


RunSide = Callable[[str, int], list[RunResult]]  # (side, repetition) -> that side's results


def pair_with_stored(test: str, repetitions: Iterable[int], stored: StoredBaseline,
                     run_side: RunSide) -> list[ABRun]:
    """The pairs of ``repetitions`` of one test: the head run against a stored base run,
    or, once the stored runs do not fit (:func:`mismatch`), both sides run fresh."""
    runs: list[ABRun] = []
    base = stored.runs[test]
    for rep in repetitions:
        if not stored.reused(test):
            for side in (BASELINE, COMPARISON) if rep % 2 == 0 else (COMPARISON, BASELINE):
                runs += [ABRun(side, rep, r) for r in run_side(side, rep)]
            continue
        heads = run_side(COMPARISON, rep)
        runs += [ABRun(COMPARISON, rep, r) for r in heads]
        why = next((w for w in (mismatch(h, base) for h in heads) if w), "")
        if why:
            stored.fresh[test] = why
            runs += [ABRun(BASELINE, rep, r) for r in run_side(BASELINE, rep)]
        else:
            runs.append(ABRun(BASELINE, rep, counts_only(base[rep % len(base)], rep)))
    return runs


def registry_runner(run: Callable[[str, int, ProcessRegistry], list[RunResult]],
                    suite: Suite, on_start: Callable[[str, int, Suite], None] | None
                    ) -> RunSide:
    """A :data:`RunSide` over one registry, calling ``on_start`` before each run."""
    registry = ProcessRegistry()

    def side(name: str, rep: int) -> list[RunResult]:
        if on_start:
            on_start(name, rep, suite)
        return run(name, rep, registry)
    return side
