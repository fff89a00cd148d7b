"""Concurrency sweeps to the limits of a host: open-file limits and maxclients raised for the
processes we start (read back from /proc/PID/limits and CONFIG GET), the minimum rule per
point, the latency surface in the HTML report (headless Chromium), and the what-if knobs
(io-threads and server cores for real; the governor where this host cannot change it).
Real memtier_benchmark, redis-benchmark and redis-server throughout."""

from __future__ import annotations

import dataclasses
import json
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import psutil
import pytest

from redis_benchmarks_spec.common.limits import grant_nofile, process_nofile
from redis_benchmarks_spec.datasink import run_reader
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import RunResult, find_result_files
from redis_benchmarks_spec.runner.concurrency import PointLimits, PointRule
from redis_benchmarks_spec.runner.knobs import governor_unavailable
from tests.browser import Plots, render
from tests.cli import RBS, rbs, write_suite
from tests.datasink_fixtures import client_fixture, datasink_fixture  # noqa: F401

ROOT = Path(__file__).resolve().parents[1]
# the test's rbs starts with this soft open-file limit (the hard one kept), so a point must
# raise it; this sandbox has no CAP_SYS_RESOURCE, so a soft limit is what may be raised
LOW_LIMIT = 1024
MEMTIER_SUITE = """
name: conc-memtier-get
tested-commands: [get]
redis-topologies: [oss-standalone]
clientconfig:
  tool: memtier_benchmark
  arguments: --ratio 0:1 --key-pattern R:R --key-maximum 1000 -d 32 -t 2 -c 10 --test-time 1
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
RB_SUITE = """
name: conc-rb-get
tested-commands: [get]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -c 20 -n 20000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _suites(tmp: Path, text: str) -> Path:
    folder = tmp / "suites"
    folder.mkdir(exist_ok=True)
    write_suite(folder, "s", text)
    return folder


def _watched_rbs(args: list[str], prefix: list[str],
                 watch: list[dict[str, int]]) -> subprocess.CompletedProcess[str]:
    """``prefix rbs args``, watched while it runs (so not tests.cli's ``rbs``): ``watch``
    collects the open-file limit of every memtier_benchmark and redis-server it starts,
    read from /proc while they run."""
    proc = subprocess.Popen([*prefix, RBS, *args], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, text=True)
    done = threading.Event()
    threading.Thread(target=_watch, args=(proc.pid, watch, done), daemon=True).start()
    try:
        out, err = proc.communicate(timeout=300)
    finally:
        done.set()
    return subprocess.CompletedProcess(proc.args, proc.returncode, out, err)


def _watch(pid: int, seen: list[dict[str, int]], done: threading.Event) -> None:
    while not done.is_set():
        try:
            kids = psutil.Process(pid).children(recursive=True)
        except psutil.NoSuchProcess:
            return
        for kid in kids:
            try:
                name = kid.name()
            except psutil.NoSuchProcess:
                continue
            limit = process_nofile(kid.pid)
            if name in ("memtier_benchmark", "redis-server") and limit is not None:
                seen.append({"pid": kid.pid, "name": name, "nofile": limit})  # type: ignore[dict-item]
        time.sleep(0.2)


def _docs(out: Path) -> list[RunResult]:
    return sorted((RunResult.read(p) for p in find_result_files(out)),
                  key=lambda d: int(d.sweep["value"]) if d.sweep["value"].isdigit() else 0)


@pytest.fixture(scope="module")
def memtier_sweep(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, list]:
    """One real sweep to 3,000 connections, started under a 1,024 open-file limit."""
    tmp = tmp_path_factory.mktemp("conc")
    seen: list[dict[str, int]] = []
    run = _watched_rbs(["run", "--suites-dir", str(_suites(tmp, MEMTIER_SUITE)),
                        "--results-dir", str(tmp / "out"), "--no-datasink",
                        "--sweep", "connections=100,1000,3000",
                        "--min-requests-per-connection", "30", "--warmup-seconds", "1",
                        "--test-time", "1"],
                       prefix=["prlimit", f"--nofile={LOW_LIMIT}:", "--"], watch=seen)
    assert run.returncode == 0, run.stdout + run.stderr
    return tmp / "out", run.stdout, seen


def test_points_raise_the_limits_of_the_processes_they_start(memtier_sweep) -> None:
    out, stdout, seen = memtier_sweep
    docs = _docs(out)
    assert [d.concurrency["connections"] for d in docs] == [100, 1000, 3000]
    top = docs[-1]
    # memtier -t x -c = 3,000, the suite's 2 threads kept
    argv = top.argv[0]
    assert argv[argv.index("-t") + 1] == "2" and argv[argv.index("-c") + 1] == "1500"
    limits = top.concurrency["limits"]
    assert limits["maxclients"] == 3000 + 64
    assert limits["server_took"]["maxclients"] == 3064  # CONFIG GET on the running server
    server_grant, client_grant = limits["server_nofile"], limits["client_nofile"]
    assert server_grant["inherited_soft"] == LOW_LIMIT
    assert server_grant["granted"] >= 3064 + 32 and client_grant["granted"] >= 3000
    assert limits["server_took"]["nofile"] == server_grant["granted"]  # /proc/PID/limits
    # the started processes themselves, seen in /proc while they ran
    tools = {s["nofile"] for s in seen if s["name"] == "memtier_benchmark"}
    servers = {s["nofile"] for s in seen if s["name"] == "redis-server"}
    assert client_grant["granted"] in tools and server_grant["granted"] in servers, seen
    assert min(tools | servers) >= LOW_LIMIT
    # what was raised is printed
    text = " ".join(stdout.split())
    assert f"raised {LOW_LIMIT:,} -> {server_grant['granted']:,}" in text
    assert "connections=3000: server maxclients 3,064 (it took 3,064)" in text


def test_every_point_meets_the_minimum_after_a_warm_up(memtier_sweep) -> None:
    out, stdout, _ = memtier_sweep
    for doc in _docs(out):
        conc = doc.concurrency
        assert conc["rule"] == {"min_requests_per_connection": 30, "warmup_s": 1,
                                "max_point_s": 600}
        assert conc["meets_minimum"] and conc["requests_per_connection"] >= 30, conc
        assert conc["requests"] == doc.result.totals.latency.count
        assert conc["warmup_rate"] and conc["warmup_rate"] > 0
        assert conc["planned_requests_per_connection"] >= 30  # sent by count: memtier -n
        argv = doc.argv[0]
        assert argv[argv.index("--requests") + 1] == str(conc["planned_requests_per_connection"])
        assert "--test-time" not in argv
        warmup = Path(doc.paths["client_0_output"]).with_name("client-0.warmup.json")
        assert warmup.exists()  # the warm-up ran at the point's own connection count
        ran = json.loads(warmup.read_text())["configuration"]
        assert int(ran["clients"]) * int(ran["threads"]) == conc["connections"]
        assert "below-minimum" not in doc.flags
    assert "req/conn" in stdout


def test_the_points_go_to_history_as_a_curve(memtier_sweep, client) -> None:
    """Each point is a series of its own (``<test>.connections-N``, labelled ``sweep_of``)
    and its stored document keeps the point's record."""
    out, _, _ = memtier_sweep
    docs = _docs(out)
    assert not push_results(client, docs).failed
    found = client.execute_command("TS.QUERYINDEX", "sweep_of=conc-memtier-get",
                                   "sweep_param=connections")
    values = {k.decode().split("/")[5] for k in found}
    assert values == {f"conc-memtier-get.connections-{n}" for n in (100, 1000, 3000)}
    stored = run_reader.run_document(client, docs[-1].run_id)
    assert stored.concurrency["connections"] == 3000 and stored.concurrency["meets_minimum"]


def test_redis_benchmark_points_send_the_minimum_per_connection(tmp_path: Path) -> None:
    """redis-benchmark's connections share ``-n``: a point sends N x connections, after a
    warm-up at its own client count; its duration is its requests over its own rate."""
    run = rbs("run", "--suites-dir", str(_suites(tmp_path, RB_SUITE)), "--results-dir",
              str(tmp_path / "out"), "--no-datasink", "--sweep", "clients=10,1000",
              "--min-requests-per-connection", "40", "--warmup-seconds", "1",
              "--test-time", "1")
    assert run.returncode == 0, run.stdout + run.stderr
    for doc in _docs(tmp_path / "out"):
        conc, argv = doc.concurrency, doc.argv[0]
        per_conn = conc["planned_requests_per_connection"]
        assert per_conn >= 40 and conc["meets_minimum"]
        assert int(argv[argv.index("-n") + 1]) == per_conn * conc["connections"]
        assert argv[argv.index("-c") + 1] == doc.sweep["value"]
        assert conc["requests_per_connection"] == per_conn
        assert 0 < conc["duration_s"] <= conc["wall_s"]
        warmup = Path(doc.paths["client_0_output"]).with_name("client-0.warmup.out")
        assert warmup.exists()


def test_a_point_too_short_for_the_minimum_is_flagged(tmp_path: Path) -> None:
    run = rbs("run", "--suites-dir", str(_suites(tmp_path, MEMTIER_SUITE)),
              "--results-dir", str(tmp_path / "out"), "--no-datasink",
              "--sweep", "connections=20,200", "--min-requests-per-connection", "10000000",
              # 2 s: memtier's 1-second runs sometimes report 0 ops/sec (its per-second
              # totals miss the one second), which the runner rightly fails as too short
              "--max-point-seconds", "2", "--warmup-seconds", "1", "--test-time", "2")
    assert run.returncode == 0, run.stdout + run.stderr
    for doc in _docs(tmp_path / "out"):
        conc = doc.concurrency
        assert not conc["meets_minimum"] and conc["planned_s"] <= 2.0
        assert conc["planned_requests_per_connection"] < 10_000_000
        assert "below-minimum" in doc.flags
        assert any("the rule asks 10,000,000" in n for n in doc.notes)
    assert "below minimum" in run.stdout


def test_the_report_draws_the_latency_surface(memtier_sweep, tmp_path: Path) -> None:
    out, _, _ = memtier_sweep
    session = tmp_path / "session"
    shutil.copytree(next(out.rglob("sweep.json")).parent, session)
    # a point that failed has no place on the curve: the section says so
    failed = RunResult.read(next((session / "connections-3000").rglob("result.json")))
    failed = dataclasses.replace(failed, run_id=failed.run_id + "-failed", status="failed",
                                 reason="client timed out after 240s",
                                 sweep={"param": "connections", "value": "6000"})
    failed.write(session / "failed-point.json")
    page = tmp_path / "r.html"
    rep = rbs("report", str(session), "--output", str(page))
    assert rep.returncode == 0, rep.stdout + rep.stderr
    text = page.read_text()
    # a row of the surface per percentile, a column per point
    assert 'data-percentiles="p50.00,p90.00,p95.00,p99.00,p99.90,p99.99"' in text
    assert 'data-points="100,1000,3000"' in text
    assert 'class="sweep-points"' in text and "3,064" in text
    assert "connections=6000: failed: client timed out after 240s" in text
    shown = render(page, tmp_path / "shot.png")
    assert shown.console == []
    plots = Plots()
    plots.feed(shown.dom)
    kinds = {kind: paths for kind, _, paths in plots.found}
    assert kinds.get("sweep", 0) > 5 and kinds.get("sweep-surface", 0) > 5, plots.found
    assert not plots.external


def test_points_a_tool_or_host_cannot_reach_are_refused_before_running(tmp_path: Path) -> None:
    rb = rbs("run", "--suites-dir", str(_suites(tmp_path, RB_SUITE)), "--no-datasink",
             "--results-dir", str(tmp_path / "o"), "--sweep", "connections=100,12000")
    assert rb.returncode == 2
    assert "redis-benchmark opens at most 10,000 connections" in rb.stderr
    assert "memtier_benchmark" in rb.stderr and "Traceback" not in rb.stderr
    write_suite(tmp_path / "suites", "s", MEMTIER_SUITE)
    ports = rbs("run", "--suites-dir", str(tmp_path / "suites"), "--no-datasink",
                "--results-dir", str(tmp_path / "o"), "--sweep", "connections=100,900000")
    assert ports.returncode == 2 and "ip_local_port_range" in ports.stderr
    assert not (tmp_path / "o").exists() or not list(find_result_files(tmp_path / "o"))


def test_without_privilege_the_hard_limit_is_the_ceiling() -> None:
    """Without CAP_SYS_RESOURCE (setpriv drops it) the grant stops at the hard limit and
    says why."""
    code = ("from redis_benchmarks_spec.common.limits import grant_nofile as g; "
            "r = g(50000); print(r.granted, '|', r.how)")
    out = subprocess.run(
        ["setpriv", "--bounding-set=-sys_resource", "--inh-caps=-sys_resource", "prlimit", "--nofile=2048:4096", "--", sys.executable, "-c",
         code], capture_output=True, text=True, timeout=60, check=False,
        env={"PYTHONPATH": str(ROOT), "PATH": "/usr/bin:/bin"})
    assert out.returncode == 0, out.stderr
    granted, how = out.stdout.split("|")
    assert int(granted) == 4096
    assert "hard limit" in how and "CAP_SYS_RESOURCE" in how
    assert grant_nofile(100).how.startswith("inherited limit")


def test_minimum_rule_sizes_the_run_from_the_warm_up_rate() -> None:
    rule = PointRule(min_requests_per_connection=100, warmup_s=2, max_point_s=60)
    # 5 s at 100,000/s over 1,000 connections is 500 each: more than the minimum
    assert rule.per_connection(5, 100_000.0, 1000) == (500, 5.0)
    # 1 s would give 4 each: the minimum wins, 1,000,000 requests take 25 s
    assert rule.per_connection(1, 40_000.0, 10_000) == (100, 25.0)
    # the minimum would take 1,000 s: cut to 60 s (flagged below-minimum after the run)
    assert rule.per_connection(1, 1_000.0, 10_000) == (6, 60.0)
    assert rule.per_connection(3, None, 10_000) == (100, None)


def test_a_cluster_client_needs_descriptors_for_every_primary() -> None:
    limits = PointLimits.for_connections(3000, nodes=3)
    assert limits.maxclients == 3064  # each node sees 3,000
    assert limits.client_nofile.needed == 3 * 3000 + 64  # the client opens 9,000


def test_io_threads_and_server_cores_are_swept_for_real(tmp_path: Path) -> None:
    # few requests: with more I/O threads than cores they spin, ~700 ops/sec here
    suites = _suites(tmp_path, RB_SUITE.replace("-c 20 -n 20000", "-c 10 -n 2000"))
    threads = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "t"),
                  "--no-datasink", "--sweep", "io-threads=1,3")
    assert threads.returncode == 0, threads.stdout + threads.stderr
    one, three = _docs(tmp_path / "t")
    for doc, count in ((one, 0), (three, 2)):
        io = [t for s in doc.telemetry.servers for t in s.threads if t.kind == "io"]
        assert len(io) == count, doc.telemetry  # Redis's io_thd_N threads, from /proc
    assert three.server_args[-4:] == ["--io-threads", "3", "--io-threads-do-reads", "yes"]
    assert len(three.cpus["server"]) == 4 or "shared-cores" in three.flags
    assert "io-threads=3: --io-threads 3 --io-threads-do-reads yes on 4 core(s)" in \
        " ".join(threads.stdout.split())
    cores = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "c"),
                "--no-datasink", "--sweep", "server-cpus=1,2")
    assert cores.returncode == 0, cores.stdout + cores.stderr
    c1, c2 = _docs(tmp_path / "c")
    assert len(c1.cpus["server"]) == 1 and len(c2.cpus["server"]) == 2
    pinned = c2.deployment.nodes[0]
    assert len(pinned.cpus) == 2


def test_the_governor_is_not_available_where_the_host_cannot_change_it(tmp_path: Path) -> None:
    reason = governor_unavailable("performance")
    run = rbs("run", "--suites-dir", str(_suites(tmp_path, RB_SUITE)), "--no-datasink",
              "--results-dir", str(tmp_path / "o"), "--sweep", "governor=performance,powersave",
              "--dry-run")
    if reason:  # this VM: no cpufreq in sysfs
        assert run.returncode == 2
        line = run.stderr.strip().splitlines()[-1]
        assert "governor=performance is not available on this host" in line
        assert reason in line and "Traceback" not in run.stderr
    else:  # a lab host whose governor is writable: the sweep is accepted
        assert run.returncode == 0, run.stderr


def test_a_redis_benchmark_warm_up_is_sized_by_count_not_an_assumed_rate() -> None:
    """redis-benchmark has no duration flag: a point's warm-up sends the minimum for every
    connection or the tool's usual 20,000-request warm-up, whichever is more. Sized from an
    assumed 100,000 ops/sec, a 1-connection "2 s" warm-up sent 200,000 requests (16 s)."""
    from redis_benchmarks_spec.loadgen.base import ClientTarget
    from redis_benchmarks_spec.loadgen.drivers import RedisBenchmarkDriver
    from redis_benchmarks_spec.runner.concurrency import PointDriver
    from redis_benchmarks_spec.suites.toolconfig import ToolConfig

    rule = PointRule(min_requests_per_connection=100, warmup_s=2, max_point_s=60)

    def warmup_n(arguments: str) -> int:
        limits = PointLimits.for_connections(int(arguments.split("-c ")[1].split()[0]))
        driver = PointDriver(RedisBenchmarkDriver("redis-benchmark"), rule, limits, 2)
        inv = driver.warmup(ToolConfig("redis-benchmark", arguments),
                            ClientTarget("127.0.0.1", 6379), Path("/tmp/client-0"), 2)
        assert inv is not None and inv.stdout_path.name == "client-0.warmup.out"
        return int(inv.argv[inv.argv.index("-n") + 1])

    assert warmup_n("-t get -c 1 -n 1000000 -d 100") == 20_000
    assert warmup_n("-t get -c 4096 -n 1000000 -d 100") == 409_600
    assert warmup_n("-t get -c 10 -n 500") == 1_000  # the minimum over the suite's own -n
    assert warmup_n("-t get -c 1 -n 1000000 -P 16") == 200_000  # 20,000 x min(P, 10)
