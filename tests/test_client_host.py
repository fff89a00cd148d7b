"""The client host's supervisor (common/supervisor.py), run exactly as ssh runs it there
(``python3 -c <its source> <lease>``), with real child processes: whatever way its runner
goes away, nothing it started is left. And the ``client_host`` settings, checked."""

from __future__ import annotations

import json
import os
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.agent.platform_config import PlatformConfigError, load
from redis_benchmarks_spec.common import supervisor
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.runner.client_host import ClientHostConfig
from redis_benchmarks_spec.runner.config import SessionConfig
from tests.twohost_net import wait_gone


class Sup:
    """A supervisor on pipes, as the runner's ssh would hold it."""

    def __init__(self, lease_s: float = 30) -> None:
        source = Path(supervisor.__file__).read_text()
        self.proc = subprocess.Popen([sys.executable, "-c", source, str(lease_s)],
                                     stdin=subprocess.PIPE, stdout=subprocess.PIPE)
        self.hello = self.read()
        self.req = 0

    def read(self) -> dict[str, Any]:
        assert self.proc.stdout is not None
        line = self.proc.stdout.readline()
        assert line, "the supervisor ended"
        return dict(json.loads(line))

    def call(self, op: str, **args: Any) -> dict[str, Any]:
        assert self.proc.stdin is not None
        self.req += 1
        self.proc.stdin.write((json.dumps({"req": self.req, "op": op, **args}) + "\n").encode())
        self.proc.stdin.flush()
        while True:
            msg = self.read()
            if msg.get("req") == self.req:
                return msg

    def sleeper(self, deadline_s: float = 120) -> int:
        reply = self.call("spawn", id="1", argv=["sleep", "60"], cpus=[], stdout="s.out",
                          deadline_s=deadline_s)
        return int(reply["pid"])

    def kill(self) -> None:
        """End it as the runner does (EOF), and remove what a kill -9 in a test left."""
        if self.proc.poll() is None:
            assert self.proc.stdin is not None
            self.proc.stdin.close()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(timeout=10)
        shutil.rmtree(self.hello["workdir"], ignore_errors=True)


def test_hello_names_the_host_and_the_protocol() -> None:
    sup = Sup()
    try:
        assert sup.hello["event"] == "hello" and sup.hello["protocol"] == supervisor.PROTOCOL
        assert sup.hello["cpus"] == sorted(os.sched_getaffinity(0))
        assert Path(sup.hello["workdir"]).is_dir()
    finally:
        sup.kill()


def test_eof_on_stdin_kills_the_tools_and_removes_the_work_directory() -> None:
    sup = Sup()
    try:
        pid = sup.sleeper()
        assert sup.proc.stdin is not None
        sup.proc.stdin.close()  # what the runner's death (or a closed connection) looks like
        assert sup.proc.wait(timeout=10) == 0
        assert wait_gone({pid}, 5) == set()
        assert not Path(sup.hello["workdir"]).exists()
    finally:
        sup.kill()


def test_a_silent_runner_loses_its_lease() -> None:
    sup = Sup(lease_s=1.5)
    try:
        pid = sup.sleeper()
        started = time.monotonic()
        sup.proc.wait(timeout=15)  # no ping: the lease runs out
        assert 1.0 <= time.monotonic() - started < 10
        assert wait_gone({pid}, 5) == set()
    finally:
        sup.kill()


def test_kill_9_of_the_supervisor_takes_its_tools_with_it() -> None:
    sup = Sup()
    try:
        pid = sup.sleeper()
        os.kill(sup.proc.pid, signal.SIGKILL)
        sup.proc.wait(timeout=10)
        assert wait_gone({pid}, 5) == set()  # PR_SET_PDEATHSIG
        assert Path(sup.hello["workdir"]).is_dir()  # what a kill -9 leaves (outputs only)
    finally:
        sup.kill()


def test_a_tool_past_its_deadline_is_killed_and_says_so() -> None:
    sup = Sup()
    try:
        sup.sleeper(deadline_s=0.5)
        exited = sup.read()
        assert exited["event"] == "exited" and exited["timed_out"] is True
        assert exited["code"] == -signal.SIGKILL
    finally:
        sup.kill()


def test_a_tool_gets_the_open_file_limit_it_asks_for() -> None:
    sup = Sup()
    try:
        sup.call("spawn", id="1", argv=["sh", "-c", "ulimit -n"], cpus=[], stdout="n.out",
                 deadline_s=30, nofile=2345)
        assert sup.read()["code"] == 0
        fetched = sup.call("fetch", names=["n.out"])["files"]["n.out"]
        assert __import__("base64").b64decode(fetched).decode().strip() == "2345"
    finally:
        sup.kill()


def test_stop_fetch_and_refused_names() -> None:
    sup = Sup()
    try:
        reply = sup.call("spawn", id="1", argv=["sh", "-c", "echo hello; exec sleep 60"],
                         cpus=[0], stdout="o.out", deadline_s=60)
        time.sleep(0.3)
        stopped = sup.call("stop", id="1")["exit"]
        assert stopped["code"] == -signal.SIGTERM and wait_gone({reply["pid"]}, 2) == set()
        fetched = sup.call("fetch", names=["o.out", "absent.json"])
        assert fetched["missing"] == ["absent.json"]
        assert "hello" in __import__("base64").b64decode(fetched["files"]["o.out"]).decode()
        for bad in ("../etc/passwd", "/etc/passwd", ".."):
            assert "not a plain file name" in sup.call("fetch", names=[bad])["error"]
        assert "not a plain file name" in sup.call(
            "spawn", id="2", argv=["true"], cpus=[], stdout="../x", deadline_s=5)["error"]
        assert "unknown op" in sup.call("rm", path="/")["error"]
    finally:
        sup.kill()


def _write(tmp_path: Path, text: str) -> Path:
    path = tmp_path / "platform.yml"
    path.write_text(text)
    return path


def test_platform_config_reads_a_client_host(tmp_path: Path) -> None:
    config = load(_write(tmp_path, "client_host:\n  ssh: bench@loadgen-1\n"
                                   "  server_address: 10.0.0.11\n"
                                   "  ssh_config: /etc/rbs/ssh_config\n"
                                   "  tools: {memtier_benchmark: /opt/mt/memtier_benchmark}\n"
                                   "  cpus: [2, 3]\n"))
    assert config.client_host == ClientHostConfig(
        ssh="bench@loadgen-1", server_address="10.0.0.11",
        ssh_config=Path("/etc/rbs/ssh_config"),
        tools={"memtier_benchmark": "/opt/mt/memtier_benchmark"}, cpus=(2, 3))
    assert load(_write(tmp_path, "")).client_host is None


@pytest.mark.parametrize(("text", "named"), [
    ("client_host:\n  ssh: -oProxyCommand=sh\n  server_address: 10.0.0.1\n",
     "client_host.ssh: '-oProxyCommand=sh' is not an ssh destination"),
    ("client_host:\n  ssh: 'a b'\n  server_address: 10.0.0.1\n", "client_host.ssh"),
    ("client_host:\n  ssh: h\n  server_address: 127.0.0.1\n",
     "client_host.server_address: '127.0.0.1' cannot be reached from another host"),
    ("client_host:\n  ssh: h\n  server_address: lab\n", "is not an IP address"),
    ("client_host:\n  ssh: h\n", "client_host.server_address: required"),
    ("client_host:\n  ssh: h\n  server_address: 10.0.0.1\n  tools: {iperf: /bin/x}\n",
     "client_host.tools: unknown tool 'iperf'"),
    ("client_host:\n  ssh: h\n  server_address: 10.0.0.1\n  python: 'python3; rm'\n",
     "client_host.python"),
    ("client_host:\n  ssh: h\n  server_address: 10.0.0.1\n  cpus: [-1]\n",
     "client_host.cpus"),
    ("client_host:\n  ssh: h\n  server_address: 10.0.0.1\n  lease_s: 1\n",
     "client_host.lease_s"),
    ("client_host:\n  ssh: h\n  server_address: 10.0.0.1\n  port: 22\n",
     "client_host: unknown key 'port'"),
])
def test_platform_config_refuses_a_bad_client_host_naming_the_key(
        tmp_path: Path, text: str, named: str) -> None:
    path = _write(tmp_path, text)
    with pytest.raises(PlatformConfigError) as caught:
        load(path)
    assert str(caught.value).startswith(f"{path}: ") and named in str(caught.value)


@pytest.mark.parametrize(("flags", "line"), [
    (["--server-address", "10.0.0.1"], ("--server-address: only means something with "
                                       "--client-host")),
    (["--client-host", "h"], "--client-host: needs --server-address"),
    (["--client-host=-oProxyCommand=x", "--server-address", "10.0.0.1"],
     "--client-host -oProxyCommand=x: '-oProxyCommand=x' is not an ssh destination"),
    (["--client-host", "h", "--server-address", "::1"], ("--server-address ::1: '::1' cannot "
                                                        "be reached from another host")),
    (["--client-host", "h", "--server-address", "10.0.0.1", "--client-cpus", "1-3"],
     "--client-cpus 1-3: not a comma-separated list"),
])
def test_rbs_run_client_host_flags_are_checked_in_one_line(tmp_path: Path, flags: list[str],
                                                           line: str) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "redis_benchmarks_spec.cli.main", "run", "--no-datasink",
         "--results-dir", str(tmp_path), "--test", "redis-benchmark-1Kkeys-string-get-100B",
         *flags], capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 2, done.stderr
    errors = [x for x in done.stderr.splitlines() if "error" in x]
    assert len(errors) == 1 and line in errors[0], done.stderr


def test_the_agent_runs_its_platform_file_client_host(redis_server, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    """``client_host`` of the platform file reaches every session the agent runs."""
    from redis_benchmarks_spec.cli.daemons import _agent_config
    from redis_benchmarks_spec.cli.main import build_parser
    from redis_benchmarks_spec.events.names import StreamNames
    from tests.pipeline_fixtures import publish_event
    from tests.test_agent import make_agent, run_in_thread, wait_until

    platform = load(_write(tmp_path, "client_host:\n  ssh: loadgen\n"
                                     "  server_address: 10.0.0.11\n"))
    args = build_parser().parse_args(["agent", "--platform", "p1", "--platform-config",
                                      str(tmp_path / "platform.yml")])
    assert _agent_config(args, b"k" * 32, platform).session.client_host == platform.client_host
    seen: list[ClientHostConfig | None] = []

    def runner(config, suites):  # type: ignore[no-untyped-def]
        seen.append(config.client_host)
        return []

    names = StreamNames.with_prefix(f"ch{os.getpid()}")
    agent = make_agent(redis_server, names, tmp_path, "p1", "p1-a", lambda results: None,
                       runner=runner, run=SessionConfig(tools=ToolPaths(),
                                                        results_dir=tmp_path / "r",
                                                        client_host=platform.client_host))
    publish_event(redis_server.client(), names, "1" * 40)
    thread = run_in_thread(agent)
    try:
        wait_until(lambda: bool(seen), timeout=60)
    finally:
        agent.stop()
        thread.join(timeout=60)
    assert seen[0] == ClientHostConfig(ssh="loadgen", server_address="10.0.0.11")


def test_rbs_agent_says_at_start_when_its_client_host_does_not_answer(  # type: ignore[no-untyped-def]
        redis_server, tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text("Host nowhere\n  HostName 127.0.0.1\n  Port 9\n")
    path = _write(tmp_path, f"client_host:\n  ssh: nowhere\n  server_address: 10.0.0.11\n"
                            f"  ssh_config: {tmp_path / 'ssh_config'}\n")
    done = subprocess.run(
        [sys.executable, "-m", "redis_benchmarks_spec.cli.main", "agent", "--platform", "p1",
         "--platform-config", str(path), "--broker", redis_server.url,
         "--datasink", "redis://127.0.0.1:9"],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    warned = [x for x in done.stderr.splitlines() if "client_host" in x]
    assert len(warned) == 1, done.stderr
    assert "client host nowhere: no answer from the supervisor over ssh" in warned[0]
    assert "Connection refused" in warned[0] and "Traceback" not in done.stderr
