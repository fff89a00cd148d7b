"""Latency at fixed offered rates: ``rbs run --rate N`` and ``--sweep rate=N1,N2,...`` or
``rate=10%,20%,...`` (of the measured maximum).

A paced suite is the suite with each memtier clientconfig given ``--rate-limiting`` for its
share of the total rate (:mod:`loadgen.pacing`: memtier's rate is per connection); the run
then records the offered and achieved rate (``RunResult.rate``). redis-benchmark cannot pace
requests, and on a cluster memtier paces each connection to each shard, so neither is
paced. A sweep in percentages first runs the selection unpaced (the point ``max``), and each
test's percentages are of the ops/sec that run achieved; a value above 100 % shows the
saturated side of the curve.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Mapping
from dataclasses import replace

from redis_benchmarks_spec.loadgen.pacing import PacingError, paced_arguments
from redis_benchmarks_spec.results.document import STATUS_SKIPPED, RunResult
from redis_benchmarks_spec.results.layout import RunPlace, run_folder
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.suite import Suite
from redis_benchmarks_spec.suites.topology import Topology, load_topologies

MAX_RATE = 100_000_000
MAX_PERCENT = 1000
MAX_POINT = "max"


def pacing_problem(suite: Suite, topologies: Mapping[str, Topology] | None = None) -> str:
    """Why ``suite`` cannot be paced, or ''."""
    tools = sorted({c.tool for c in suite.clientconfigs if c.tool != "memtier_benchmark"})
    if tools:
        return f"{suite.name}: {', '.join(tools)} cannot pace requests (memtier_benchmark can)"
    catalogue = topologies if topologies is not None else load_topologies()
    clusters = [t for t in suite.topologies if t in catalogue and catalogue[t].is_cluster]
    if clusters and len(clusters) == len(suite.topologies):
        return f"{suite.name}: runs on {clusters[0]}, where memtier paces each shard " \
               "connection on its own (no total rate to offer)"
    return ""


def paced_suite(suite: Suite, total_rps: float) -> Suite:
    """``suite`` offering ``total_rps`` in all, shared evenly by parallel clientconfigs;
    raises :class:`PacingError`."""
    share = total_rps / max(1, len(suite.clientconfigs))
    try:
        configs = [replace(c, arguments=paced_arguments(c.arguments, share))
                   for c in suite.clientconfigs]
    except PacingError as exc:
        raise PacingError(f"{suite.name}: {exc}") from None
    return replace(suite, clientconfigs=configs)


def parse_rates(words: list[str]) -> tuple[str, ...]:
    """``5000,10000`` (requests/s) or ``10%,50%,120%`` (of the measured maximum), increasing;
    raises ValueError with the reason."""
    percent = all(w.endswith("%") for w in words)
    if not percent and any(w.endswith("%") for w in words):
        raise ValueError("give all values as requests/s or all as percentages")
    numbers = [w[:-1] if percent else w for w in words]
    if not all(re.fullmatch(r"\d+(\.\d+)?", n) for n in numbers):
        raise ValueError("values are requests/s (5000) or percentages (10%)")
    values = [float(n) for n in numbers]
    high = MAX_PERCENT if percent else MAX_RATE
    if any(v <= 0 or v > high for v in values):
        raise ValueError(f"each value must be above 0 and at most {high:,}"
                         f"{'%' if percent else ' requests/s'}")
    if values != sorted(set(values)):
        raise ValueError("values must increase")
    return tuple(words)


def is_percent(value: str) -> bool:
    return str(value).endswith("%")


def _point_config(config: SessionConfig, value: str) -> SessionConfig:
    place = RunPlace(sweep_param="rate", sweep_value=value)
    return replace(config, results_dir=run_folder(config.results_dir, place),
                   sweep={"param": "rate", "value": value})


def run_percent_sweep(config: SessionConfig, suites: list[Suite], values: tuple[str, ...],
                      run: Callable[[SessionConfig, list[Suite]], list[RunResult]]
                      = run_suites) -> list[RunResult]:
    """The unpaced maximum, then each percentage of it per test (module doc)."""
    results = run(_point_config(config, MAX_POINT), suites)
    maxima = {r.test_name: r.result.totals.ops_per_sec for r in results
              if r.ok and r.result is not None}
    for value in values:
        share, cfg = float(value[:-1]) / 100, _point_config(config, value)
        paced = []
        for suite in (s for s in suites if s.name in maxima):
            try:
                paced.append(paced_suite(suite, share * maxima[suite.name]))
            except PacingError as exc:  # too few requests for its connections: said, not run
                results.append(_not_paced(cfg, suite, str(exc)))
        results += run(cfg, paced)
    return results


def _not_paced(config: SessionConfig, suite: Suite, reason: str) -> RunResult:
    now = int(time.time() * 1000)
    return RunResult(test_name=suite.name, run_id=f"{suite.name}:{now}:not-paced",
                     status=STATUS_SKIPPED, reason=reason, context=config.context,
                     suite_file=str(suite.path), tool=",".join(suite.tools),
                     start_ms=now, end_ms=now, sweep=dict(config.sweep))
