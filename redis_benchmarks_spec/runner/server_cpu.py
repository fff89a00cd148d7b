"""Server CPU time per command: a second A/B metric that preemption does not move.

On a shared machine most of the run-to-run noise of ops/sec is time the server or the client
spent *not running* (another tenant on the core, a burst of interrupts). The kernel charges a
process only for the time it runs, so ``(used_cpu_user + used_cpu_sys) / commands`` from the
server's own INFO (getrusage, microsecond resolution) over the measured window stays put
while throughput dips. It also sees a slower server when the client is the bottleneck
(redis-benchmark without pipelining saturates its core here before redis-server does), where
ops/sec barely moves. It does move with batching (fewer requests per event-loop wake-up cost
more system time each), so it is not noise-free; ``docs/statistics.md`` has the measured
spread of both metrics.

Primaries only (the clients' work; replicas' replication work is theirs), and every command
the server processed in the window, which includes the handful of INFO/CONFIG calls of the
snapshots around it.
"""

from __future__ import annotations

from redis_benchmarks_spec.common.metrics import SERVER_CPU_METRIC  # its kind: declared there
from redis_benchmarks_spec.results.stages import DerivedMetrics

#: below this many commands the ratio is dominated by the snapshots' own commands
MIN_COMMANDS = 1000


def cpu_usec_per_op(info_delta: dict[str, float]) -> float | None:
    """Server CPU microseconds per processed command, or None when it cannot be measured."""
    commands = info_delta.get("total_commands_processed", 0.0)
    user, system = info_delta.get("used_cpu_user"), info_delta.get("used_cpu_sys")
    if user is None or system is None or commands < MIN_COMMANDS:
        return None
    cpu_s = user + system
    return cpu_s * 1e6 / commands if cpu_s > 0 else None


def server_cpu(info_delta: dict[str, float]) -> DerivedMetrics:
    """:data:`SERVER_CPU_METRIC` of the primaries' ``info_delta``, when the window allows it."""
    value = cpu_usec_per_op(info_delta)
    return DerivedMetrics({SERVER_CPU_METRIC: value} if value is not None else {})
