"""One error root (issue 32): every failure that belongs to one test is a TestRunError, so
the session records that test as failed and runs the next one. Real redis-server and
redis-benchmark; the first suite's server refuses its configuration."""

from __future__ import annotations

import shutil
from pathlib import Path

from redis_benchmarks_spec.common.errors import RbsError, TestRunError
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies
from redis_benchmarks_spec.runner.client_tools import RunFailure
from redis_benchmarks_spec.runner.cluster import ClusterError
from redis_benchmarks_spec.runner.cpus import CpuShortage
from redis_benchmarks_spec.runner.dataset import DatasetError
from redis_benchmarks_spec.runner.docker_launcher import DockerError
from redis_benchmarks_spec.runner.launcher import ServerStartError
from redis_benchmarks_spec.runner.persistence import PersistenceCheckFailed
from redis_benchmarks_spec.runner.preload import PreloadError
from redis_benchmarks_spec.runner.remote_client import RemoteClientError
from redis_benchmarks_spec.runner.replication import ReplicationError
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import write_suite

SUITE = """
version: 0.4
name: {name}
tested-commands: [set]
redis-topologies: [oss-standalone]
dbconfig:
  configuration-parameters:
    {param}
clientconfig:
  tool: redis-benchmark
  arguments: -c 2 -n 2000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def test_every_per_test_failure_derives_from_the_one_root() -> None:
    for cls in (ServerStartError, DockerError, PreloadError, ClusterError, ReplicationError,
                CpuShortage, DatasetError, PersistenceCheckFailed, RemoteClientError,
                RunFailure, ServerErrorReplies):
        assert issubclass(cls, TestRunError) and issubclass(cls, RbsError), cls
        assert issubclass(cls, RuntimeError), cls  # callers that caught RuntimeError still do


def test_a_test_that_fails_for_its_own_reason_does_not_end_the_session(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "a-broken", SUITE.format(name="a-broken",
                                                 param="maxmemory-policy: not-a-policy"))
    write_suite(suites, "b-fine", SUITE.format(name="b-fine", param="appendonly: 'no'"))
    config = SessionConfig(tools=ToolPaths(redis_server=shutil.which("redis-server") or ""),
                           results_dir=tmp_path / "out", test_time=1)
    results = {r.test_name: r for r in run_suites(config, load_catalog(suites).suites)}
    assert not results["a-broken"].ok and "not-a-policy" in results["a-broken"].reason + \
        results["a-broken"].log_tail
    assert results["b-fine"].ok, results["b-fine"].reason
