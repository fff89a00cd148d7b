"""``--metric auto``: decide an A/B on what limited the runs, and say which and why.

Without pipelining, redis-benchmark saturates its own core before redis-server does (here:
client 90-98 % of its core, server 69-89 % of one). Ops/sec then measures the client: a server
made 3 % slower per command moved it by -0.4 % [-4.3, +2.1] in 40 pairs, while the server's
own CPU time per command (:mod:`runner.server_cpu`) moved +2.9 % and decided in 18
(``docs/statistics.md``). So ``auto`` looks at the first round: when the client was the
bottleneck in most of the runs of every test on each side (:func:`choose_metric` says how
each side is judged), the server's CPU time per command decides; otherwise (a saturated server, or a server that waits off-CPU, as under
``appendfsync always``, where CPU per command would miss the slowdown) Ops/sec decides. The choice is made once per session,
from the first round only, so later rounds cannot steer it, and it is printed and recorded.
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

from redis_benchmarks_spec.common.metrics import THROUGHPUT_METRIC
from redis_benchmarks_spec.results.comparison_key import ComparisonKeys, pairable
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.ab import BASELINE, ABRun
from redis_benchmarks_spec.runner.server_cpu import SERVER_CPU_METRIC
from redis_benchmarks_spec.telemetry.cpu import SaturationThresholds

AUTO = "auto"
#: a server below this % of each of its cores had headroom the client did not use
SERVER_HEADROOM_PCT = 90.0


def _shares(result: RunResult) -> tuple[float, float] | None:
    """(client % of its cores, server % of each of its cores), or None without samples."""
    client, server = result.cpu.get("client"), result.cpu.get("server")
    if client is None or server is None or client.samples == 0 or server.samples == 0:
        return None
    if client.cores_given <= 0:
        return None
    return client.mean_pct / client.cores_given, server.mean_pct / max(server.cores_given, 1)


def client_saturated(result: RunResult, thresholds: SaturationThresholds) -> bool:
    """The client used at least ``thresholds.client_pct_of_given`` % of its cores."""
    shares = _shares(result)
    return shares is not None and shares[0] >= thresholds.client_pct_of_given


def client_limited(result: RunResult, thresholds: SaturationThresholds) -> bool:
    """The client saturated its cores while the server stayed below
    :data:`SERVER_HEADROOM_PCT` % of each of its own."""
    shares = _shares(result)
    return shares is not None and shares[0] >= thresholds.client_pct_of_given and \
        shares[1] < SERVER_HEADROOM_PCT


def choose_metric(runs: list[ABRun], thresholds: SaturationThresholds,
                  keys: ComparisonKeys | None = None) -> tuple[str, str]:
    """(metric, why) for ``auto`` from a first round of runs: the server's CPU time per
    command only when, for *every* test (a suite in one topology, labelled by ``keys``), the
    client was the bottleneck in most ok baseline runs and still saturated its cores in most
    ok comparison runs. The server's headroom is judged on the baseline only: a slower
    comparison server uses more of its core, and that must not steer the choice away from
    the metric that sees it. A comparison slowed off-CPU (fsync, a lock) stops saturating the
    client, which keeps the whole session on Ops/sec, the metric that sees that slowdown."""
    keys = keys or ComparisonKeys.of(r.result for r in runs)
    groups: dict[tuple[str, str], list[RunResult]] = {}
    for run in runs:
        if pairable(run.result):
            groups.setdefault((keys(run.result), run.side), []).append(run.result)
    if not groups:
        return THROUGHPUT_METRIC, "auto: no run succeeded, so Ops/sec decides"
    criterion = (f"client >= {thresholds.client_pct_of_given:.0f} % of its cores; on the "
                 f"baseline also server < {SERVER_HEADROOM_PCT:.0f} % of its own")
    for (test, side), results in sorted(groups.items()):
        check = client_limited if side == BASELINE else client_saturated
        limited = sum(check(r, thresholds) for r in results)
        if 2 * limited <= len(results):
            return THROUGHPUT_METRIC, (f"auto: the client was the bottleneck in only {limited} "
                                       f"of {len(results)} {side} runs of {test}"
                                       f"{_left_out(runs, keys, (test, side))} "
                                       f"({criterion}), so Ops/sec decides")
    ok = [r for results in groups.values() for r in results]
    counted = (f"the client was the bottleneck in most runs of every test on each side "
               f"({len(ok)} runs; {criterion})")
    if not all(SERVER_CPU_METRIC in r.metrics for r in ok):
        return THROUGHPUT_METRIC, (f"auto: {counted}, but some runs have no "
                                   f"{SERVER_CPU_METRIC} (too few commands), so Ops/sec "
                                   "decides")
    return SERVER_CPU_METRIC, (f"auto: {counted}, so Ops/sec measured the client; the "
                               "server's CPU time per command decides")


def _left_out(runs: list[ABRun], keys: ComparisonKeys, group: tuple[str, str]) -> str:
    """`` (and N more left out: ...)`` for the runs of ``group`` (test label, side) that
    were not counted, so "1 of 1" is not read as "1 run was made"."""
    reasons = Counter("disturbed by other processes" if r.result.ok else r.result.status
                      for r in runs
                      if (keys(r.result), r.side) == group and not pairable(r.result))
    if not reasons:
        return ""
    why = ", ".join(f"{n} {reason}" for reason, n in sorted(reasons.items()))
    return f" (and {sum(reasons.values())} more left out: {why})"


@dataclass
class MetricChoice:
    """The metric an A/B session decides on: the one asked for, or ``auto``'s pick made
    from the first runs it is shown (:meth:`resolve`)."""

    requested: str
    thresholds: SaturationThresholds = field(default_factory=SaturationThresholds)
    metric: str | None = None
    why: str = ""

    def __post_init__(self) -> None:
        if self.requested != AUTO:
            self.metric = self.requested

    def resolve(self, runs: list[ABRun], keys: ComparisonKeys | None = None) -> str:
        if self.metric is None:
            self.metric, self.why = choose_metric(runs, self.thresholds, keys)
        return self.metric
