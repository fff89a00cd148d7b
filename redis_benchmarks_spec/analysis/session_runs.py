"""The runs of a comparison and the one rule that turns them into evidence.

Every surface (the A/B table, ``--format json|markdown``, ``rbs compare`` of folders,
``rbs report``/HTML, the PR comment, the agent's A/B, bisect) hands its runs to
:mod:`analysis.engine`, which pairs and filters them here. There is no other pairing.

* A run is usable for a metric when it is ok and has the metric.
* **Deterministic metrics** (instruction counts, ``instructions_*``) never lose a run to
  foreign load: other processes slow the server, they do not change what it executes.
* **Time metrics** (throughput, latency, CPU time per op) lose a *pair* when either of its
  runs was disturbed (``telemetry.cpu``: other processes used 10 % of a core or more of the
  test's CPUs over the run's whole window, a rule that is the same for both sides and for
  any run length). The pair is counted as disturbed, so a verdict can say ``BUSY: 5 of 6
  pairs disturbed`` instead of deciding on what is left or printing nothing.
* **Counts of a deployment that moves them** (io-threads above 1, replicas, a cluster: the
  rule is :func:`count_moves_with_host`, the judgment ``common.metrics.host_dependent``)
  are not deterministic: :func:`host_dependent_tests` names those tests for the engine.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from redis_benchmarks_spec.common.metrics import COUNT, INSTRUCTIONS_METRIC
from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys
from redis_benchmarks_spec.results.document import DISTURBED, RunResult
from redis_benchmarks_spec.results.profile import under_profiler

if TYPE_CHECKING:
    from redis_benchmarks_spec.suites.topology import Topology

BASELINE = "baseline"
COMPARISON = "comparison"
#: the flag of a baseline run that is the base commit's push run standing in a pair
#: (``runner.ab_stored``): the engine counts its own spread (``engine.stored_base_spreads``)
STORED_BASE = "stored-base"
SIDES = (BASELINE, COMPARISON)


@dataclass
class ABRun:
    """One side's result of one test in one repetition (None: not part of a pairing, as
    runs of two unrelated folders)."""

    side: str
    repetition: int | None
    result: RunResult


def deterministic(metric: str) -> bool:
    """Instruction counts and the memory a preloaded dataset takes (``memory``: all of those
    figures): foreign load on the host does not move them (``common.metrics``)."""
    return catalogued(metric).deterministic


_THREADS = re.compile(r"(\d+)-io-threads")


def _io_threads(doc: RunResult) -> int:
    """The I/O threads the run's server had: its deployment's, its arguments', its name's."""
    if doc.deployment is not None and doc.deployment.io_threads:
        return doc.deployment.io_threads
    args = doc.server_args
    for i, arg in enumerate(args[:-1]):
        if arg == "--io-threads" and args[i + 1].isdigit():
            return int(args[i + 1])
    found = _THREADS.search(doc.context.topology)
    return int(found.group(1)) if found else 1


def command_path_counted(doc: RunResult) -> bool:
    """The run's instruction count is the command path's (``telemetry.profilers
    .command_path``), not the whole process's (a binary without symbols, ``perf stat``)."""
    found = doc.profiles.get("instructions")
    scope = found.data.get("scope", "") if found is not None else ""
    return isinstance(scope, str) and scope.startswith("command path")


def count_moves_with_host(doc: RunResult, metric: str = "") -> str:
    """Why this run's instruction counts move with the host ('' when they do not): I/O
    threads spin (their count is the waiting) unless the count is ``metric``'s command path,
    which the I/O threads never run (SET's pairs spread 0.0x % with 2 and 4 io-threads as
    alone, docs/statistics.md); replicas and a cluster exchange traffic timed by the host,
    and their command paths spread 0.4-0.9 % (``common.metrics``, the module doc)."""
    deployment, topology = doc.deployment, doc.context.topology
    threads_moved = not (metric == INSTRUCTIONS_METRIC and command_path_counted(doc))
    if _io_threads(doc) > 1 and threads_moved:
        return f"{_io_threads(doc)} io-threads"
    if (deployment.replicas if deployment is not None else "replica" in topology):
        return "replicas"
    cluster = doc.context.topology_type == "oss-cluster" or "cluster" in topology or \
        (deployment is not None and (deployment.primaries > 1 or "cluster" in deployment.type))
    return "a cluster" if cluster else ""


def topology_moves_counts(topology: Topology | None, metric: str = "") -> str:
    """Why instruction counts in ``topology`` move with the host ('' when they do not),
    known before a run (:func:`count_moves_with_host` says it of a run's document; before
    the run, ``metric``'s command path is assumed counted: the lab's builds have symbols)."""
    if topology is None:
        return ""
    args = topology.server_args()
    threads = next((int(args[i + 1]) for i, arg in enumerate(args[:-1])
                    if arg == "--io-threads" and args[i + 1].isdigit()), 1)
    if threads > 1 and metric != INSTRUCTIONS_METRIC:
        return f"{threads} io-threads"
    if topology.replicas:
        return "replicas"
    return "a cluster" if topology.is_cluster or topology.primaries > 1 else ""


def host_dependent_tests(runs: Iterable[ABRun], metric: str,
                         keys: ComparisonKeys | None = None) -> dict[str, str]:
    """Per test whose ``metric`` is a count its deployment moves (either side's run), why:
    those tests are judged as host-dependent (``common.metrics.host_dependent``)."""
    runs = list(runs)
    if catalogued(metric).kind != COUNT:
        return {}
    keys = keys or keys_of(runs)
    out: dict[str, str] = {}
    for run in runs:
        why = count_moves_with_host(run.result, metric)
        if why:
            out.setdefault(keys(run.result), why)
    return out


def disturbed(doc: RunResult) -> bool:
    return DISTURBED in doc.flags


def usable(doc: RunResult, metric: str) -> bool:
    """An ok run that has ``metric``, unless it is a timed figure taken under a profiler
    (``results.profile.under_profiler``): that is not the server's speed."""
    return doc.ok and metric in doc.metrics and not under_profiler(doc.flags, metric)


def only_under_profiler(runs: Iterable[ABRun], metric: str) -> bool:
    """The runs measured ``metric`` only while a profiler slowed the server."""
    runs = list(runs)
    return any(r.result.ok and metric in r.result.metrics for r in runs) and \
        not any(usable(r.result, metric) for r in runs)


@dataclass
class PairSet:
    """One test's complete pairs of a metric, in repetition order, and how many complete
    pairs were left out because a run of theirs was disturbed."""

    pairs: list[tuple[float, float]] = field(default_factory=list)
    repetitions: list[int] = field(default_factory=list)
    disturbed: int = 0

    @property
    def complete(self) -> int:
        return len(self.pairs) + self.disturbed


def keys_of(runs: Iterable[ABRun]) -> ComparisonKeys:
    return ComparisonKeys.of(r.result for r in runs)


def pair_runs(runs: list[ABRun], metric: str, keys: ComparisonKeys | None = None,
              tests: Iterable[str] = (), keep_disturbed: bool = False) -> dict[str, PairSet]:
    """Per test (a suite in one topology, labelled by ``keys``), the (baseline, comparison)
    values of ``metric`` of every repetition where both sides have a usable run; ``tests``
    are present even without a pair (so their rows say why). ``keep_disturbed`` keeps the
    disturbed pairs of a timed metric too (a calibration measures the host as it is)."""
    keys = keys or keys_of(runs)
    found: dict[tuple[str, int, str], RunResult] = {}
    for run in runs:
        if run.repetition is not None and usable(run.result, metric):
            found[(keys(run.result), run.repetition, run.side)] = run.result
    out: dict[str, PairSet] = {t: PairSet() for t in tests}
    for test in sorted({k[0] for k in found}):
        out.setdefault(test, PairSet())
    for (test, rep, side), doc in sorted(found.items(), key=lambda kv: kv[0][1]):
        other = found.get((test, rep, COMPARISON))
        if side != BASELINE or other is None:
            continue
        if not keep_disturbed and not deterministic(metric) and \
                (disturbed(doc) or disturbed(other)):
            out[test].disturbed += 1
            continue
        out[test].pairs.append((doc.metrics[metric], other.metrics[metric]))
        out[test].repetitions.append(rep)
    return out


@dataclass
class SampleSet:
    """One test's values of a metric per side (unpaired), and the disturbed runs left out."""

    baseline: list[float] = field(default_factory=list)
    comparison: list[float] = field(default_factory=list)
    disturbed: int = 0
    # the sides with a usable run, disturbed or not: a side missing here has no run at all
    sides: set[str] = field(default_factory=set)


def sample_runs(runs: list[ABRun], metric: str,
                keys: ComparisonKeys | None = None) -> dict[str, SampleSet]:
    """Per test, every usable run's value of ``metric`` on each side (unpaired); a disturbed
    run of a time metric is left out and counted."""
    keys = keys or keys_of(runs)
    out: dict[str, SampleSet] = {}
    for run in runs:
        if not usable(run.result, metric):
            continue
        entry = out.setdefault(keys(run.result), SampleSet())
        entry.sides.add(run.side)
        if not deterministic(metric) and disturbed(run.result):
            entry.disturbed += 1
            continue
        side = entry.baseline if run.side == BASELINE else entry.comparison
        side.append(run.result.metrics[metric])
    return dict(sorted(out.items()))


def metrics_present(runs: Iterable[ABRun]) -> set[str]:
    """Every metric some ok run has."""
    return {m for r in runs if r.result.ok for m in r.result.metrics}
