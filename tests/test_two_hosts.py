"""Client on one host, server on another, for real: two network namespaces joined by a veth
pair (tests/twohost_net.py), a real sshd on the client side, `rbs run --client-host` on the
server side driving real memtier_benchmark and redis-benchmark over the link, and tc netem
adding a delay the measured latency must show. kill -9 of either side leaves nothing behind.

About 60 s in all: each run opens real SSH connections and each kill waits for the other
side to notice (that is what is tested).
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import psutil
import pytest

from redis_benchmarks_spec.common.process import wait_for
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from tests.cli import write_suite
from tests.twohost_net import CLIENT_ADDR, SERVER_ADDR, TwoHosts, ns_pids, wait_gone

DELAY_MS = 10
MEMTIER_SUITE = """\
version: 0.4
name: memtier-twohost-get
description: 'memtier GET of 100 B values over 1K keys, for the two-host tests'
dbconfig:
  configuration-parameters:
    save: '""'
  check:
    keyspacelen: 1000
  preload_tool:
    run_image: redis:7.0.15
    tool: redis-cli
    arguments: 'EVAL "for i=1,1000 do redis.call(''SET'', ''memtier-'' .. i, string.rep(''x'', 100)) end return 1" 0'
tested-groups: [string]
tested-commands: [get]
redis-topologies: [oss-standalone]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
clientconfig:
  run_image: redislabs/memtier_benchmark:edge
  tool: memtier_benchmark
  arguments: '--data-size 100 --ratio 0:1 --key-prefix memtier- --key-minimum 1 --key-maximum 1000 -c 2 -t 1 --hide-histogram --test-time 2'
  resources: {requests: {cpus: '1'}}
priority: 1
"""
REDIS_BENCHMARK_SUITE = """\
version: 0.4
name: redis-benchmark-twohost-get
description: 'redis-benchmark GET over 1K keys, for the two-host tests'
dbconfig:
  configuration-parameters:
    save: '""'
  check:
    keyspacelen: 1000
  preload_tool:
    run_image: redis:7.0.15
    tool: redis-cli
    arguments: 'EVAL "for i=0,999 do redis.call(''SET'', string.format(''key:%012d'', i), string.rep(''x'', 100)) end return 1" 0'
tested-groups: [string]
tested-commands: [get]
redis-topologies: [oss-standalone]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
clientconfig:
  run_image: redis:7.0.15
  tool: redis-benchmark
  arguments: '-c 4 -n 200000 -r 1000 GET key:__rand_int__'
  resources: {requests: {cpus: '1'}}
priority: 1
"""


@pytest.fixture
def hosts(tmp_path: Path) -> Iterator[TwoHosts]:
    net = TwoHosts(tmp_path)
    try:
        yield net.up()
    finally:
        net.down()
    listed = subprocess.run(["ip", "netns", "list"], capture_output=True, text=True,
                            timeout=30, check=True).stdout
    assert net.server_ns not in listed and net.client_ns not in listed


@pytest.fixture
def suites(tmp_path: Path) -> Path:
    folder = tmp_path / "suites"
    write_suite(folder, "memtier-twohost-get", MEMTIER_SUITE)
    write_suite(folder, "redis-benchmark-twohost-get", REDIS_BENCHMARK_SUITE)
    return folder


def rbs_argv(net: TwoHosts, suites: Path, results: Path, *extra: str) -> list[str]:
    assert net.ssh_config is not None
    return net.server_argv([
        sys.executable, "-m", "redis_benchmarks_spec.cli.main", "run",
        "--suites-dir", str(suites), "--no-datasink", "--results-dir", str(results),
        "--client-host", "loadgen", "--server-address", SERVER_ADDR,
        "--client-ssh-config", str(net.ssh_config), "--cpus", "0", "--client-cpus", "1",
        *extra])


def run_rbs(net: TwoHosts, suites: Path, results: Path,
            *extra: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.run(rbs_argv(net, suites, results, *extra), capture_output=True,
                          text=True, timeout=180, env=env, check=False)


def results_by_test(results: Path) -> dict[str, RunResult]:
    return {r.test_name: r for r in map(RunResult.read, find_result_files(results))}


def p50_ms(result: RunResult) -> float:
    assert result.result is not None
    p50 = result.result.totals.latency.percentiles_ms.get("p50.00")
    assert p50 is not None, result.result.totals.latency
    return float(p50)


def names_in(ns: str) -> list[str]:
    out = []
    for pid in ns_pids(ns):
        try:
            out.append(psutil.Process(pid).name())
        except psutil.NoSuchProcess:
            continue
    return out


def test_two_namespace_run_names_both_hosts_and_latency_rises_by_the_netem_delay(
        hosts: TwoHosts, suites: Path, tmp_path: Path) -> None:
    plain = run_rbs(hosts, suites, tmp_path / "plain", "--tests-regexp", "twohost",
                    "--test-time", "2")
    assert plain.returncode == 0, plain.stdout + plain.stderr
    assert f"client {hosts.client_hostname} ({CLIENT_ADDR}, {hosts.client_if}) -> server " \
        f"{hosts.server_hostname} ({SERVER_ADDR}, {hosts.server_if}): RTT median " \
        in plain.stderr
    assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}
    before = results_by_test(tmp_path / "plain")
    assert set(before) == {"memtier-twohost-get", "redis-benchmark-twohost-get"}
    for result in before.values():
        assert result.ok, result.reason
        net = result.network
        assert net["mode"] == "two-host" and net["transport"] == "ssh"
        assert net["server"] == {"host": hosts.server_hostname, "address": SERVER_ADDR,
                                 "interface": hosts.server_if}
        client = net["client"]
        assert (client["host"], client["address"], client["interface"], client["ssh"]) == \
            (hosts.client_hostname, CLIENT_ADDR, hosts.client_if, "loadgen")
        assert (client["kernel"], client["cpu_count"]) == (os.uname().release, os.cpu_count())
        # the client's CPUs are the client host's; this host gives all of its to the server
        assert result.cpus == {"server": [0], "client": [1]}
        assert "shared-cores" not in result.flags
        assert result.cpu["client"].samples == 1 and result.cpu["client"].mean_pct > 0
        assert result.result is not None and result.result.totals.ops_per_sec > 0
        assert result.deployment is not None
        assert result.deployment.nodes[0].host == SERVER_ADDR
    assert before["memtier-twohost-get"].network["client"]["tools"]["memtier_benchmark"]

    hosts.add_delay(DELAY_MS)  # tc netem, or a netfilter queue where the kernel has no netem
    slow = run_rbs(hosts, suites, tmp_path / "delayed", "--test", "memtier-twohost-get",
                   "--test-time", "2")
    assert slow.returncode == 0, slow.stdout + slow.stderr
    after = results_by_test(tmp_path / "delayed")["memtier-twohost-get"]
    moved = p50_ms(after) - p50_ms(before["memtier-twohost-get"])
    assert DELAY_MS * 0.9 <= moved <= DELAY_MS * 1.5, (moved, p50_ms(after))
    rtt_moved = after.network["rtt_ms"]["median"] - \
        before["memtier-twohost-get"].network["rtt_ms"]["median"]
    assert DELAY_MS * 0.9 <= rtt_moved <= DELAY_MS * 1.5, after.network["rtt_ms"]
    assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}


def start_long_run(net: TwoHosts, suites: Path, results: Path,
                   log: Path) -> subprocess.Popen[bytes]:
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])}
    return subprocess.Popen(
        rbs_argv(net, suites, results, "--test", "memtier-twohost-get", "--test-time", "60"),
        stdout=log.open("wb"), stderr=subprocess.STDOUT, env=env)


def wait_for_tool(net: TwoHosts, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if "memtier_benchmark" in names_in(net.client_ns) and \
                "redis-server" in names_in(net.server_ns):
            return
        time.sleep(0.1)
    raise AssertionError(f"memtier never ran: {names_in(net.client_ns)} / "
                         f"{names_in(net.server_ns)}")


def test_kill_9_of_the_server_side_leaves_no_tool_on_the_client_host(
        hosts: TwoHosts, suites: Path, tmp_path: Path) -> None:
    proc = start_long_run(hosts, suites, tmp_path / "r", tmp_path / "rbs.log")
    try:
        wait_for_tool(hosts)
        # ip netns exec, unshare and sh exec in place: this pid is the rbs process itself
        assert psutil.Process(proc.pid).name().startswith("python")
        seen = set().union(*hosts.leftovers().values())
        os.kill(proc.pid, signal.SIGKILL)
        proc.wait(timeout=10)
        # the tool, the supervisor and the server all go: no lease to wait out, the
        # connection's end is the signal (and the server's PR_SET_PDEATHSIG)
        assert wait_gone(seen, 15) == set(), [psutil.Process(p).cmdline()[:2]
                                              for p in wait_gone(seen, 0)]
        assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)


def supervisor_pid(net: TwoHosts) -> int:
    for pid in ns_pids(net.client_ns):
        try:
            argv = psutil.Process(pid).cmdline()
        except psutil.NoSuchProcess:
            continue
        if len(argv) > 2 and argv[1] == "-c" and "PR_SET_PDEATHSIG" in argv[2]:
            return pid
    raise AssertionError("no supervisor on the client host")


def test_kill_9_of_the_client_side_leaves_no_server_and_fails_the_test_in_one_line(
        hosts: TwoHosts, suites: Path, tmp_path: Path) -> None:
    proc = start_long_run(hosts, suites, tmp_path / "r", tmp_path / "rbs.log")
    try:
        wait_for_tool(hosts)
        (tool,) = [p for p in map(psutil.Process, ns_pids(hosts.client_ns))
                   if p.name() == "memtier_benchmark"]
        workdir = Path(tool.cwd())  # the supervisor's: its tools run there
        os.kill(supervisor_pid(hosts), signal.SIGKILL)
        assert proc.wait(timeout=60) == 1  # the test failed; rbs itself carried on
        assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    # a kill -9 leaves the supervisor's work directory (outputs only): the test made it
    assert workdir.name.startswith("rbs-client-") and workdir.is_dir()
    shutil.rmtree(workdir)
    (result,) = results_by_test(tmp_path / "r").values()
    assert not result.ok
    assert result.reason.startswith("client host loadgen: connection lost"), result.reason
    assert "\n" not in result.reason
    assert result.network["client"]["host"] == hosts.client_hostname
    output = (tmp_path / "rbs.log").read_text()
    assert "Traceback" not in output


def test_an_unreachable_client_host_is_one_line_before_anything_starts(
        tmp_path: Path, suites: Path) -> None:
    config = tmp_path / "ssh_config"
    config.write_text("Host nowhere\n  HostName 127.0.0.1\n  Port 9\n  ConnectTimeout 3\n")
    out = subprocess.run(
        [sys.executable, "-m", "redis_benchmarks_spec.cli.main", "run", "--suites-dir",
         str(suites), "--no-datasink", "--results-dir", str(tmp_path / "r"),
         "--test", "memtier-twohost-get", "--client-host", "nowhere",
         "--server-address", "10.211.0.1", "--client-ssh-config", str(config)],
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert out.returncode == 2, out.stderr
    lines = [line for line in out.stderr.splitlines() if "error" in line]
    assert len(lines) == 1 and "--client-host: client host nowhere: no answer" in lines[0], \
        out.stderr
    assert "Traceback" not in out.stderr
    assert not list((tmp_path / "r").rglob("result.json"))


def test_the_loopback_run_stays_the_default_and_unchanged(tmp_path: Path,
                                                         suites: Path) -> None:
    done = subprocess.run(
        [sys.executable, "-m", "redis_benchmarks_spec.cli.main", "run", "--suites-dir",
         str(suites), "--no-datasink", "--results-dir", str(tmp_path / "r"),
         # 3 s, not 1: the sampler's thread must get a tick while the client lives (ci10,
         # 2026-12-03, parallel phase: 144 % foreign load, one tick in the 0.95 s run, at
         # the stop, after the client had exited: 0 client samples)
         "--test", "redis-benchmark-twohost-get", "--test-time", "3"],
        capture_output=True, text=True, timeout=120, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.returncode == 0, done.stderr
    (result,) = results_by_test(tmp_path / "r").values()
    assert result.ok and result.network == {}
    assert result.deployment is not None and result.deployment.nodes[0].host == "127.0.0.1"
    assert result.argv[0][result.argv[0].index("-h") + 1] == "127.0.0.1"
    assert result.cpu["client"].samples >= 1  # sampled here, as always


def wait_for_tool_output(net: TwoHosts, timeout: float = 60) -> None:
    """Until the client host's memtier_benchmark has written to its output file. Seen
    running is not enough: a SIGTERM the moment it appeared (ci24) came before the runner
    had the supervisor's answer to its spawn, so there was nothing of it to fetch back."""
    def written() -> bool:
        for pid in ns_pids(net.client_ns):
            try:
                if psutil.Process(pid).name() != "memtier_benchmark":
                    continue
                out = os.readlink(f"/proc/{pid}/fd/1")
                return out.startswith("/") and os.path.getsize(out) > 0
            except (psutil.NoSuchProcess, OSError):
                continue
        return False
    assert wait_for(written, timeout=timeout, interval=0.1), names_in(net.client_ns)


def test_sigterm_of_the_server_side_stops_both_sides_and_exits_130(
        hosts: TwoHosts, suites: Path, tmp_path: Path) -> None:
    proc = start_long_run(hosts, suites, tmp_path / "r", tmp_path / "rbs.log")
    try:
        wait_for_tool(hosts)
        wait_for_tool_output(hosts)
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(timeout=60) == 130
        assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait(timeout=10)
    (result,) = results_by_test(tmp_path / "r").values()
    assert not result.ok and result.network["client"]["host"] == hosts.client_hostname
    # what the tool printed before it was stopped came back from the client host
    (out,) = (tmp_path / "r").glob("*/memtier-twohost-get/oss-standalone/client-0.out")
    assert out.stat().st_size > 0


TIMEOUT_PROBE = """
import subprocess, sys
from pathlib import Path
from redis_benchmarks_spec.common.process import ProcessRegistry
from redis_benchmarks_spec.loadgen.base import Invocation
from redis_benchmarks_spec.runner.client_host import ClientHostConfig
from redis_benchmarks_spec.runner.client_side import open_client_side

out = Path(sys.argv[1])
config = ClientHostConfig(ssh="loadgen", server_address="10.211.0.1",
                          ssh_config=Path(sys.argv[2]))
clients = open_client_side(config, ProcessRegistry(), out)
# the tool's own output file is named by its path here: it is written there, fetched back
inv = Invocation(["sh", "-c", f"echo started; echo 42 > {out}/t.json; exec sleep 60"],
                 out / "t.out", out / "t.json", 1.0)
proc = clients.spawn(inv, [1], 1.0)
try:
    clients.wait(proc, 1.0)
    print("no timeout")
except subprocess.TimeoutExpired:
    print("timed out", proc.exit["code"], (out / "t.out").read_text().strip(),
          (out / "t.json").read_text().strip())
finally:
    clients.close()
"""


def test_a_remote_tool_past_its_wait_is_stopped_there_and_its_output_kept(
        hosts: TwoHosts, tmp_path: Path) -> None:
    assert hosts.ssh_config is not None
    (tmp_path / "out").mkdir()
    done = subprocess.run(
        hosts.server_argv([sys.executable, "-c", TIMEOUT_PROBE, str(tmp_path / "out"),
                           str(hosts.ssh_config)]),
        capture_output=True, text=True, timeout=60, check=False,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parents[1])})
    assert done.stdout.strip() == f"timed out {-signal.SIGTERM} started 42", done.stderr
    assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}


def test_replicas_and_a_cluster_are_reached_from_the_client_host(
        hosts: TwoHosts, suites: Path, tmp_path: Path) -> None:
    """Every node listens on the server address: a replica's primary and a cluster's slot
    map (what memtier --cluster-mode follows) name it, not loopback."""
    write_suite(suites, "memtier-twohost-get", MEMTIER_SUITE.replace(
        "redis-topologies: [oss-standalone]",
        "redis-topologies: [oss-cluster-3-primaries, oss-standalone-01-replicas]"))
    done = run_rbs(hosts, suites, tmp_path / "r", "--test", "memtier-twohost-get",
                   "--all-topologies", "--test-time", "1")
    assert done.returncode == 0, done.stdout + done.stderr
    results = [RunResult.read(p) for p in find_result_files(tmp_path / "r")]
    assert sorted(r.context.topology for r in results) == \
        ["oss-cluster-3-primaries", "oss-standalone-01-replicas"]
    for result in results:
        assert result.ok, result.reason
        assert result.deployment is not None
        assert {n.host for n in result.deployment.nodes} == {SERVER_ADDR}
        assert result.network["client"]["host"] == hosts.client_hostname
        assert result.result is not None and result.result.totals.ops_per_sec > 0
    assert hosts.leftovers() == {hosts.server_ns: set(), hosts.client_ns: set()}
