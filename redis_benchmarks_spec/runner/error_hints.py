"""Error replies: the server's counters decide, a client's hints are only recorded.

A load generator can only guess at error replies (memtier counts none; its reply-byte audit
estimates them from sizes, and misreads MULTI/EXEC, where replies are +QUEUED). The server
counts every error reply it sends (INFO ``total_error_replies`` and ``errorstat_*``, Redis
>= 6.2): when it has those counters they are the authority and a client's hints are kept as
notes only. On an older server the hints raise the ``suspected-error-replies`` flag, with
their reasoning, and never fail the test.
"""

from __future__ import annotations

from redis_benchmarks_spec.results.stages import Findings
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.telemetry.info import InfoSnapshot

SUSPECTED_ERRORS = "suspected-error-replies"


def server_counts_errors(after: list[InfoSnapshot]) -> bool:
    """Every node reports ``total_error_replies`` (Redis >= 6.2)."""
    return bool(after) and all("total_error_replies" in s.info for s in after)


def weigh_tool_notes(tool_result: ToolResult, counted: bool, server_errors: int) -> Findings:
    """The tool's hints weighed against what the server counted (``counted``: it can)."""
    if not tool_result.notes:
        return Findings()
    flags = []
    if counted:
        verdict = f"the server counted {server_errors} error replies, and its count decides"
    else:
        verdict = "this server keeps no error counters (Redis < 6.2): flagged, not failed"
        flags.append(SUSPECTED_ERRORS)
    return Findings(flags, [f"{note} [{verdict}]" for note in tool_result.notes])
