"""``rbs lab up`` restarts a service that died, with a limit, and ``rbs lab status`` says
what restarted and when; the broker keeps what it accepted across its restart; ``rbs lab
down`` stops what the keeper restarted too. A real lab (tiny repository, one platform)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

import psutil
import redis

from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.lab.keeper import MAX_RESTARTS
from tests.cli import rbs
from tests.pipeline_fixtures import tiny_redis_repo


def _services(lab: Path) -> dict[str, int]:
    return {s["name"]: s["pid"] for s in json.loads((lab / "lab.json").read_text())["services"]}


def _live(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _restarted(lab: Path, name: str, old: int, timeout: float = 60) -> int:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid = _services(lab)[name]
        if pid != old and _live(pid):
            return pid
        time.sleep(0.2)
    raise AssertionError(f"{name} was not restarted: {(lab / 'logs' / 'keeper.log').read_text()}")


def test_a_dead_service_is_restarted_within_a_limit_and_status_says_so(tmp_path: Path) -> None:
    lab = tmp_path / "lab"
    up = rbs("lab", "up", "--dir", str(lab), "--source", str(tiny_redis_repo(tmp_path / "r")),
             "--platforms", "p1", "--agent-args", "--noise-seconds 0", timeout=180)
    pids: set[int] = set()
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        state = json.loads((lab / "lab.json").read_text())
        broker = redis.Redis.from_url(state["broker_url"], socket_timeout=10)
        broker.xadd("accepted", {"k": "v"})
        first = _services(lab)
        pids |= set(first.values())
        for name in ("builder", "agent-p1"):
            os.kill(first[name], signal.SIGKILL)
        server_pid = EmbeddedDatasink(lab / "broker").status().pid
        assert server_pid
        os.kill(server_pid, signal.SIGKILL)
        for name in ("builder", "agent-p1"):
            pids.add(_restarted(lab, name, first[name]))
        deadline = time.monotonic() + 60
        while True:  # the broker again, on its port, with what it had accepted
            try:
                if broker.xlen("accepted") == 1:
                    break
            except redis.ConnectionError:
                pass
            assert time.monotonic() < deadline, (lab / "logs" / "keeper.log").read_text()
            time.sleep(0.3)
        status = rbs("lab", "status", "--dir", str(lab))
        assert status.returncode == 0, status.stdout + status.stderr
        assert "builder: restarted 1 time(s), at " in status.stdout, status.stdout
        assert "agent-p1: restarted 1 time(s)" in status.stdout
        assert "broker: restarted 1 time(s)" in status.stdout
        pid = _services(lab)["builder"]
        for _ in range(MAX_RESTARTS - 1):  # to the limit: restarted each time
            os.kill(pid, signal.SIGKILL)
            pid = _restarted(lab, "builder", pid)
            pids.add(pid)
        os.kill(pid, signal.SIGKILL)  # one more: the keeper gives up, as systemd would
        deadline = time.monotonic() + 30
        while "gave up" not in (lab / "restarts.jsonl").read_text():
            assert time.monotonic() < deadline
            time.sleep(0.2)
        status = rbs("lab", "status", "--dir", str(lab))
        assert status.returncode == 1 and "builder: NOT RUNNING" in status.stdout
        assert f"builder: restarted {MAX_RESTARTS} time(s)" in status.stdout
        assert "gave up" in status.stdout
        pids |= set(_services(lab).values())
    finally:
        down = rbs("lab", "down", "--dir", str(lab), timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert down.stdout.splitlines()[0].startswith("keeper: stopped"), down.stdout
    assert not [p for p in pids if _live(p)]
