"""What a session builds once for all its tests (:class:`RunEnv`): the configuration, whole,
and the live launcher, drivers, process registry and CPU allocator made from it."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.loadgen.base import ClientDriver
from redis_benchmarks_spec.results.document import RunContext
from redis_benchmarks_spec.runner import dataset as dataset_mod
from redis_benchmarks_spec.runner.client_tools import ClientTiming
from redis_benchmarks_spec.runner.config import SessionConfig
from redis_benchmarks_spec.runner.cpus import CpuAllocator
from redis_benchmarks_spec.runner.launcher import ServerLauncher


@dataclass
class RunEnv:
    """What a session built once for all its tests: the configuration (whole, not copied),
    and the live things made from it."""

    config: SessionConfig
    redis_server: str
    drivers: dict[str, ClientDriver]
    launcher: ServerLauncher
    registry: ProcessRegistry
    allocator: CpuAllocator
    context: RunContext  # the configuration's, with the launcher kind
    dataset_cache: Path = field(default_factory=dataset_mod.default_cache_dir)
    timeout_buffer_s: float = 60.0

    @property
    def timing(self) -> ClientTiming:
        return ClientTiming(self.config.test_time, self.timeout_buffer_s)
