"""memtier_benchmark support, one concern per module (this module only re-exports them):

- :mod:`.memtier_argv`: the command line, run length, ``--version``;
- :mod:`.memtier_json`: ``--json-out-file`` parsed once into a result with exact numbers;
- :mod:`.memtier_audit`: error replies memtier does not count;
- :mod:`.merge`: results of parallel clients (any tool) merged with exact percentiles.
"""

from __future__ import annotations

from redis_benchmarks_spec.loadgen.memtier_argv import (
    MemtierTarget,
    expected_duration,
    memtier_argv,
    memtier_version,
)
from redis_benchmarks_spec.loadgen.memtier_audit import (
    audit_reply_bytes,
    check_error_replies,
    check_errors,
    count_error_lines,
    detect_error_replies,
)
from redis_benchmarks_spec.loadgen.memtier_json import (
    TOOL,
    load_json,
    parse_memtier_data,
    parse_memtier_json,
)
from redis_benchmarks_spec.loadgen.merge import merge_results

__all__ = [
    "TOOL",
    "MemtierTarget",
    "audit_reply_bytes",
    "check_error_replies",
    "check_errors",
    "count_error_lines",
    "detect_error_replies",
    "expected_duration",
    "load_json",
    "memtier_argv",
    "memtier_version",
    "merge_results",
    "parse_memtier_data",
    "parse_memtier_json",
]
