"""The Docker launcher against the real Docker engine (started by scripts/ensure-docker.sh)."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import STATUS_FAILED, STATUS_OK
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.cli import write_suite

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module", autouse=True)
def docker_engine() -> None:
    subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, timeout=120)


def our_containers() -> set[str]:
    """Containers a launcher started (they carry their starter as ``rbs.owner``); a build
    sandbox's containers inherit ``rbs.managed`` from their image, but have no owner label."""
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", "label=rbs.managed=1",
                          "--filter", "label=rbs.owner"],
                         capture_output=True, text=True, timeout=60, check=True)
    return set(out.stdout.split())


def test_suite_runs_in_a_container_and_the_container_is_removed(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", """
name: docker-set
dbconfig:
  configuration-parameters:
    maxmemory-policy: noeviction
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 20000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
""")
    write_suite(suites, "bad", """
name: docker-bad
dbconfig:
  configuration-parameters:
    no-such-option: 1
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -n 100 -t set
""")
    before = our_containers()
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out", launcher="docker")
    results = {r.test_name: r for r in run_suites(config, load_catalog(suites).suites)}
    ok = results["docker-set"]
    assert ok.status == STATUS_OK, ok.reason
    assert ok.context.deployment_type == "docker"
    assert ok.commandstats_delta["set"]["calls"] == 20000
    assert ok.cpu["server"].samples > 0  # the container's redis-server was sampled
    assert "Ready to accept connections" in Path(ok.paths["server_log"]).read_text()
    bad = results["docker-bad"]
    assert bad.status == STATUS_FAILED and "no-such-option" in bad.reason
    assert not our_containers() - before  # ours are gone (orphans of a dead run may be reaped too)
