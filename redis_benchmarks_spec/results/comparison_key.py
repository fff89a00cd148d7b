"""What one test of a comparison is: a suite in one topology.

A suite runs in each topology it lists, and the result documents of every topology carry the
suite's name. Grouped by name alone, a comparison would mix them: an A/B pair whose baseline
ran in one topology and comparison in another, or a sample holding both. So a comparison's
test is (test name, topology). Its label is the name alone when the name occurs in one
topology among the documents compared (the common case, and what reports, PR comments and
``sequential.json`` files written before this said), else ``name @ topology``.
"""

from __future__ import annotations

from collections.abc import Iterable

from redis_benchmarks_spec.results.document import DISTURBED, STATUS_SKIPPED, RunResult

SEPARATOR = " @ "


def label(name: str, topology: str, several: bool) -> str:
    return f"{name}{SEPARATOR}{topology}" if several else name


def pairable(doc: RunResult) -> bool:
    """An ok run that other processes did not disturb (``telemetry.cpu``): a disturbed run
    leaves its A/B pair out, since the burst that hit it need not have hit the other side."""
    return doc.ok and DISTURBED not in doc.flags


def with_topology(doc: RunResult) -> str:
    """``name @ topology`` of one document, for messages about that run."""
    return label(doc.test_name, doc.context.topology, True)


def split(key: str) -> tuple[str, str | None]:
    """(test name, topology) of a label; the topology is None for a bare name."""
    name, sep, topology = key.rpartition(SEPARATOR)
    return (name, topology) if sep else (key, None)


class ComparisonKeys:
    """Labels for a set of (name, topology) tests: ``name @ topology`` only where a name
    occurs in more than one topology."""

    def __init__(self, tests: Iterable[tuple[str, str]]) -> None:
        self._topologies: dict[str, set[str]] = {}
        for name, topology in tests:
            self._topologies.setdefault(name, set()).add(topology)

    @classmethod
    def of(cls, docs: Iterable[RunResult]) -> ComparisonKeys:
        """Labels for these documents. Skipped tests do not count: the runner keeps their
        documents in memory but never writes them, and a report read back from disk must
        label its rows as the run did."""
        return cls((d.test_name, d.context.topology) for d in docs
                   if d.status != STATUS_SKIPPED)

    def key(self, name: str, topology: str) -> str:
        return label(name, topology, len(self._topologies.get(name, ())) > 1)

    def __call__(self, doc: RunResult) -> str:
        return self.key(doc.test_name, doc.context.topology)
