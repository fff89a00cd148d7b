"""A ``kill -9`` of a process that started Docker containers leaves them running (they are
not its children): the next launcher on the host removes exactly those, and nothing of a
live owner. The real Docker engine (scripts/ensure-docker.sh), the installed redis-server."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from redis_benchmarks_spec.runner.docker_launcher import DockerLauncher, docker
from redis_benchmarks_spec.runner.launcher import ServerSpec

REPO = Path(__file__).resolve().parents[1]
STARTER = """
import sys, time
from pathlib import Path
from redis_benchmarks_spec.runner.docker_launcher import DockerLauncher
from redis_benchmarks_spec.runner.launcher import ServerSpec
handle = DockerLauncher().start(ServerSpec(sys.argv[1], [], [0], Path(sys.argv[2])))
print(handle.container_id, flush=True)
time.sleep(600)
"""


@pytest.fixture(scope="module", autouse=True)
def docker_engine() -> None:
    subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, timeout=120)


def running(cid: str) -> bool:
    return docker("ps", "-a", "-q", "--no-trunc", "--filter", f"id={cid}") != ""


def test_containers_of_a_killed_agent_are_reaped_and_live_ones_kept(tmp_path: Path) -> None:
    binary = shutil.which("redis-server")
    assert binary
    mine = DockerLauncher()
    live = mine.start(ServerSpec(binary, [], [0], tmp_path / "live"))
    starter = subprocess.Popen([sys.executable, "-c", STARTER, binary, str(tmp_path / "dead")],
                               stdout=subprocess.PIPE, text=True)
    try:
        assert starter.stdout is not None
        orphan = starter.stdout.readline().strip()
        assert orphan and running(orphan)
        os.kill(starter.pid, signal.SIGKILL)
        starter.wait(timeout=10)
        assert running(orphan)  # not a child: the kill left it behind
        DockerLauncher()  # what the restarted agent's next run creates
        assert not running(orphan)
        assert running(live.container_id)  # its owner (this test) is alive
    finally:
        if starter.poll() is None:
            starter.kill()
        mine.stop(live)
    assert not running(live.container_id)
