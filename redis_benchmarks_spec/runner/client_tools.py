"""The client tools of one run: how long one may take, waiting for it, reading and merging
what each wrote, and the servers' own count of error replies. Nothing here writes a result
field: :mod:`.execute` files the records the document is assembled from."""

from __future__ import annotations

import logging
import subprocess
from dataclasses import dataclass

from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import tail
from redis_benchmarks_spec.loadgen.base import ClientDriver, Invocation
from redis_benchmarks_spec.loadgen.merge import merge_results
from redis_benchmarks_spec.loadgen.result import (
    ServerErrorReplies,
    check_measurable,
    drop_unmeasured_rates,
)
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.runner import node_stats
from redis_benchmarks_spec.runner.client_side import ClientSide

log = logging.getLogger(__name__)


class RunFailure(TestRunError):
    """A test failed for a reason worth showing; ``log_tail`` holds the evidence."""

    def __init__(self, reason: str, log_tail: str = "") -> None:
        super().__init__(reason)
        self.log_tail = log_tail


def tool_version(driver: ClientDriver) -> str:
    """A tool that cannot tell its version does not fail the run."""
    try:
        return driver.version()
    except (OSError, RuntimeError, ValueError, subprocess.SubprocessError) as exc:
        log.warning("%s --version failed: %s", driver.tool, exc)
        return "unknown"


@dataclass(frozen=True)
class ClientTiming:
    """How long a session's client tools may run: its test time and the slack beyond it."""

    test_time: int | None
    buffer_s: float

    def timeout(self, inv: Invocation) -> float:
        """How long ``inv`` may run before it is stopped as hung."""
        # a profiled run (server under callgrind) may be far slower than its test time
        expected = max(float(self.test_time or 0), inv.expected_duration_s)
        return expected * 3 + self.buffer_s


def wait_client(clients: ClientSide, proc: object, inv: Invocation,
                timing: ClientTiming) -> int:
    """The client's exit code; past its timeout it is stopped and the run fails with its
    output's tail."""
    timeout = timing.timeout(inv)
    try:
        return clients.wait(proc, timeout)
    except subprocess.TimeoutExpired as exc:
        raise RunFailure(f"client {inv.argv[0]} timed out after {timeout:.0f}s",
                          tail(inv.stdout_path)) from exc


def parse_all(drivers: list[ClientDriver], invocations: list[Invocation],
               codes: list[int], rate_is_metric: bool = True) -> ToolResult:
    """Each client's result, merged. A rate too short to measure fails the test when the rate
    is the measurement; otherwise (warm-ups, wait_for_bgsave) it is dropped with a note."""
    parsed = []
    for driver, inv, code in zip(drivers, invocations, codes):
        try:
            one = driver.parse(inv, code)
            source = str(inv.result_path or inv.stdout_path)
            parsed.append(check_measurable(one, source) if rate_is_metric
                          else drop_unmeasured_rates(one))
        except ServerErrorReplies:
            raise
        except (RuntimeError, ValueError) as exc:
            raise RunFailure(f"{driver.tool}: {exc}", tail(inv.stdout_path)) from exc
    if len(parsed) == 1:
        return parsed[0]
    return merge_results(parsed)


def check_error_replies(before: node_stats.NodeSnapshots,
                        after: node_stats.NodeSnapshots) -> None:
    """Fail the run when the servers counted error replies during it."""
    count, kinds = node_stats.error_replies(before, after)
    if count > 0:
        raise ServerErrorReplies(count, f"server INFO errorstats: {kinds or 'unknown kinds'}")
