"""The memtier_benchmark client driver (see loadgen/drivers.py for the interface)."""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.loadgen import memtier_argv as memtier
from redis_benchmarks_spec.loadgen import memtier_audit, memtier_json
from redis_benchmarks_spec.loadgen.base import ClientTarget, Invocation, out_file
from redis_benchmarks_spec.loadgen.registry import DriverEntry
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.suites.suite import ToolConfig

# a run with neither --test-time nor -n: memtier's default is 10000 requests per client
DEFAULT_EXPECTED_S = 60.0


class MemtierDriver:
    tool = "memtier_benchmark"

    def __init__(self, binary: str) -> None:
        self.binary = binary
        self._version: str | None = None

    def warmup(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
               test_time: int | None) -> Invocation | None:
        return None  # memtier has --test-time itself

    def invocation(self, cfg: ToolConfig, target: ClientTarget, out_prefix: Path,
                   test_time: int | None, rate: float | None = None) -> Invocation:
        json_out = out_file(out_prefix, ".json")
        mt = memtier.MemtierTarget(target.host, target.port, target.password, target.user,
                                   tls=target.tls, cluster_mode=target.cluster)
        argv = memtier.memtier_argv(self.binary, cfg, mt, json_out, test_time)
        expected = memtier.expected_duration(argv) or DEFAULT_EXPECTED_S
        return Invocation(argv, out_file(out_prefix, ".out"), json_out, expected)

    def parse(self, inv: Invocation, returncode: int) -> ToolResult:
        assert inv.result_path is not None
        output = inv.stdout_path.read_text(errors="replace") if inv.stdout_path.exists() else ""
        if returncode != 0:
            raise RuntimeError(f"memtier_benchmark exited with code {returncode}")
        # read once: the error audit needs memtier's own blocks, the parse then normalises them
        data = memtier_json.load_json(inv.result_path)
        # error replies: only a hint from memtier's side, the runner asks the server
        notes = memtier_audit.audit_notes(data, output, inv.argv)
        result = memtier_json.parse_memtier_data(data, inv.result_path)
        result.notes = notes
        return result

    def version(self) -> str:
        if self._version is None:
            self._version = memtier.memtier_version(self.binary)
        return self._version


# in no registry here: scripts/setup.sh builds it from ../shared/vendor when that exists
INSTALL = ("scripts/setup.sh builds it from ../shared/vendor; else install it from Redis's APT "
           "repository, Homebrew (memtier_benchmark) or source")
DRIVER = DriverEntry("memtier_benchmark", "memtier_benchmark", "--memtier-bin", MemtierDriver,
                     INSTALL)
