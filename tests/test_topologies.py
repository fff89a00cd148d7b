"""Topologies for real: io-threads, replicas and an OSS cluster started by the process and the
Docker launcher, a short redis-benchmark suite against each, and nothing of ours left after."""

from __future__ import annotations

import subprocess
from pathlib import Path

import psutil
import pytest
import redis

from benchmarks.redis_history import cache_root, locked
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.document import STATUS_FAILED, STATUS_OK, RunResult
from redis_benchmarks_spec.runner.cluster import SLOTS, slot_ranges
from redis_benchmarks_spec.runner.cpus import CpuAllocator, CpuShortage, placement
from redis_benchmarks_spec.runner.session import SessionConfig, plan_tests, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.suites.topology import load_topologies
from tests.cli import write_suite
from tests.procs import communicate_or_stacks, descendants

REPO = Path(__file__).resolve().parents[1]

# HSET over exactly 1,000 preloaded hashes ({tag}: redis-benchmark --cluster routes by slot;
# standalone keeps the literal tag). The EVAL preload writes keys of every slot range.
SUITE = """
version: 0.4
name: {name}
dbconfig:
{before}  configuration-parameters:
    save: '""'
    repl-diskless-sync-delay: 0
  check:
    keyspacelen: 1000
  preload_tool:
    tool: redis-cli
    arguments: EVAL "for i=0,999 do redis.call('HSET', string.format('hash:%012d', i), 'f', 'v') end return 1" 0
  init_commands:
    - CONFIG SET maxmemory-policy noeviction
tested-groups: [hash]
tested-commands: [hset]
redis-topologies: [{topologies}]
clientconfig:
  tool: redis-benchmark
  arguments: -c 5 -n {n} HSET hash:{{tag}}:__rand_int__ f v
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
      - $."ALL STATS".Totals.ReplicationFullSyncSecondsV2
"""
TOPOLOGIES = ["oss-cluster-3-primaries", "oss-standalone-01-replicas",
              "oss-standalone-02-io-threads", "oss-standalone-04-io-threads"]


def topology_suite(folder: Path, name: str, topologies: list[str], n: int = 3000,
                   before: bool = False) -> None:
    extra = "  preload_before_replica: true\n" if before else ""
    write_suite(folder, name, SUITE.format(name=name, topologies=", ".join(topologies),
                                           n=n, before=extra))


def our_servers(suite: str) -> list[int]:
    """redis-server processes of this test's runs: each node runs in its own directory under
    rbs-<suite>-... (redis-server rewrites its command line, so the directory is the mark)."""
    marker = f"rbs-{suite}-"
    found = []
    for proc in psutil.process_iter(["name"]):
        if proc.info["name"] != "redis-server":
            continue
        try:
            if marker in proc.cwd():
                found.append(proc.pid)
        except (psutil.AccessDenied, psutil.NoSuchProcess):
            continue  # not ours, or gone
    return found


def our_containers() -> set[str]:
    """Containers a launcher started (they carry their starter as ``rbs.owner``); a build
    sandbox's containers inherit ``rbs.managed`` from their image, but have no owner label."""
    out = subprocess.run(["docker", "ps", "-a", "-q", "--filter", "label=rbs.managed=1",
                          "--filter", "label=rbs.owner"],
                         capture_output=True, text=True, timeout=60, check=True)
    return set(out.stdout.split())


def check_result(r: RunResult) -> None:
    """What every family must show: its nodes, the dataset on them, the clients' calls."""
    assert r.status == STATUS_OK, (r.context.topology, r.reason, r.log_tail)
    topo = load_topologies()[r.context.topology]
    d = r.deployment
    assert d is not None and d.name == topo.name and d.type == topo.type
    assert len(d.nodes) == topo.node_count
    assert len({n.port for n in d.nodes}) == len(d.nodes)
    assert all(n.cpus and (n.pids or n.container_id) for n in d.nodes)
    assert [n.role for n in d.nodes] == ["primary"] * topo.primaries + ["replica"] * topo.replicas
    primaries = [n for n in d.nodes if n.role == "primary"]
    # the client's HSETs, summed over primaries, and also visible per node
    assert r.commandstats_delta["hset"]["calls"] == 3000
    assert sum(n.commandstats_delta.get("hset", {}).get("calls", 0) for n in primaries) == 3000
    assert r.metrics["ALL_STATS.Totals.Ops/sec"] > 0
    if topo.io_threads:
        assert len(d.nodes[0].cpus) == min(topo.io_threads + 1, len(CpuAllocator().cpus))
        assert d.io_threads == topo.io_threads
    if topo.is_cluster:
        # every primary got an even share of the slots, and keys of its own
        assert [tuple(n.slots or ()) for n in primaries] == slot_ranges(3)
        assert all(n.commandstats_delta.get("hset", {}).get("calls", 0) > 0 for n in primaries)
        assert any("--cluster" in argv for argv in r.argv)
        assert d.setup_s is not None and d.setup_s < 30
    if topo.replicas:
        assert len(d.full_sync_s) == topo.replicas
        assert r.metrics["ALL_STATS.Totals.ReplicationFullSyncSecondsV2"] == max(d.full_sync_s)
        assert r.metrics["ALL_STATS.Totals.ReplicationFullSyncCountDuringBench"] == 0
        # the replica applied the primary's writes (its own commandstats show them)
        assert d.nodes[1].commandstats_delta["hset"]["calls"] == 3000


@pytest.mark.slow
def test_every_family_with_processes_and_nothing_survives(tmp_path: Path) -> None:
    topology_suite(tmp_path / "suites", "topo-hset", TOPOLOGIES, n=3000)
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    results = run_suites(config, load_catalog(tmp_path / "suites").suites)
    assert sorted(r.context.topology for r in results) == sorted(TOPOLOGIES)
    for r in results:
        check_result(r)
        stored = RunResult.read(tmp_path / "out" / "topo-hset" / r.context.topology /
                                "result.json")
        assert stored.deployment == r.deployment
    recorded = [pid for r in results if r.deployment for n in r.deployment.nodes
                for pid in n.pids]
    assert len(recorded) == 3 + 2 + 1 + 1
    assert not [p for p in recorded if psutil.pid_exists(p)
                and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert our_servers("topo-hset") == []  # every node and the cluster's scratch node stopped


@pytest.mark.slow
def test_cluster_and_replicas_in_containers_and_nothing_survives(tmp_path: Path) -> None:
    subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, timeout=120)
    topology_suite(tmp_path / "suites", "topo-hset", TOPOLOGIES, n=3000)
    containers = our_containers()
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out", launcher="docker")
    results = run_suites(config, load_catalog(tmp_path / "suites").suites)
    assert sorted(r.context.topology for r in results) == sorted(TOPOLOGIES)
    for r in results:
        check_result(r)
        assert r.deployment is not None and r.deployment.launcher == "docker"
        assert all(len(n.container_id) == 64 for n in r.deployment.nodes)
    # nodes and the scratch container, by their ids (a launcher may also reap orphans of
    # an earlier, killed run: the set can shrink, never grow)
    assert not our_containers() - containers


def test_preload_before_replica_syncs_the_dataset_and_checks_the_replica(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-before", ["oss-standalone-01-replicas"], n=3000, before=True)
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    [r] = run_suites(config, load_catalog(suites).suites)
    check_result(r)
    # the full sync carried the 1,000 preloaded hashes (the replica loaded them from the
    # primary's RDB, not from the replication stream), and its keyspace check passed
    log = Path(r.paths["server_log_1"]).read_text()
    assert "MASTER <-> REPLICA sync: Finished with success" in log
    assert "keys loaded: 1000," in log


def test_a_failing_node_fails_the_test_and_stops_the_others(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-bad", ["oss-cluster-3-primaries"])
    # a directive redis-server refuses: every node fails to start; the first one's error
    text = (suites / "topo-bad.yml").read_text().replace("save: '\"\"'", "no-such-directive: 1")
    write_suite(suites, "topo-bad", text)
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    [r] = run_suites(config, load_catalog(suites).suites)
    assert r.status == STATUS_FAILED and "no-such-directive" in r.reason
    assert our_servers("topo-bad") == []


def test_catalogue_matches_the_issue_and_unstartable_entries_skip(tmp_path: Path) -> None:
    catalogue = load_topologies()
    wanted = (["oss-standalone"]
              + [f"oss-standalone-{n:02d}-io-threads" for n in (2, 4, 8, 12, 16, 32, 64)]
              + ["oss-standalone-01-replicas", "oss-standalone-02-replicas",
                 "oss-standalone-01-replicas-rdb", "oss-standalone-01-replicas-aof-everysec"]
              + [f"oss-standalone-01-replicas-{n:02d}-io-threads" for n in (2, 4, 8, 16)]
              + [f"oss-cluster-{n}-primaries" for n in (3, 5, 9, 15, 30)])
    assert set(wanted) <= set(catalogue)
    assert all(not catalogue[name].unsupported_reason() for name in wanted)
    assert catalogue["oss-standalone-01-replicas-04-io-threads"].server_cpus == 10
    assert catalogue["oss-cluster-9-primaries"].cpus_per_node == 1
    assert "oss-cluster-03-primaries" not in catalogue
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-skip", ["dragonfly-04-proactor-threads",
                                         "oss-standalone-with-redisearch", "no-such-topology"])
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    reasons = [t.skip_reason for t in plan_tests(config, load_catalog(suites).suites)]
    assert "dragonfly" in reasons[0] and "redis-server only" in reasons[0]
    assert "redisearch.so" in reasons[1] and "does not ship" in reasons[1]
    assert "not in the topologies catalogue" in reasons[2]


def test_cpu_plan_per_node_shares_with_a_warning_or_refuses_when_strict(tmp_path: Path) -> None:
    cpus = list(range(8))
    quiet = placement(cpus, {}, {c: ("0", str(c)) for c in cpus})
    plan = CpuAllocator(cpus, where=quiet).plan_nodes([1, 1, 1], 2)
    assert plan.nodes == [[1], [2], [3]] and plan.client == [4, 5] and plan.disjoint
    small = CpuAllocator([0, 1]).plan_nodes([1, 1, 1], 1)
    assert "share cores" in small.warning and {c for n in small.nodes for c in n} == {0, 1}
    with pytest.raises(CpuShortage, match="strict-cpus"):
        CpuAllocator([0, 1], strict=True).plan_nodes([3], 1)
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-strict", ["oss-standalone", "oss-standalone-04-io-threads"])
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out", cpus=[0, 1],
                           strict_cpus=True)
    planned = plan_tests(config, load_catalog(suites).suites)
    assert planned[0].skip_reason == ""
    assert "needs 6 CPUs" in planned[1].skip_reason and "gives 2" in planned[1].skip_reason


def test_slot_ranges_cover_every_slot_once() -> None:
    for n in (3, 5, 9, 15, 30):
        ranges = slot_ranges(n)
        covered = [s for first, last in ranges for s in range(first, last + 1)]
        assert covered == list(range(SLOTS))
        sizes = [last - first + 1 for first, last in ranges]
        assert max(sizes) - min(sizes) <= 1


def test_persistence_entries_reach_primary_and_replica(tmp_path: Path) -> None:
    from redis_benchmarks_spec.common.process import ProcessRegistry
    from redis_benchmarks_spec.runner.deployment import Deployment, DeploymentSpec
    from redis_benchmarks_spec.runner.launcher import ProcessLauncher
    from tests.conftest import redis_server_bin

    registry = ProcessRegistry()
    topo = load_topologies()["oss-standalone-01-replicas-aof-everysec"]
    plan = CpuAllocator().plan_nodes([1, 1], 1)
    args = ["--repl-diskless-sync-delay", "0", *topo.server_args()]  # no 5 s wait to sync
    deployment = Deployment(DeploymentSpec(topo, redis_server_bin(), args, plan, tmp_path),
                            ProcessLauncher(registry))
    try:
        deployment.start()
        deployment.link_replicas()
        for node in deployment.nodes:
            with node.client() as client:
                assert client.config_get("appendonly")["appendonly"] == "yes"
                assert client.config_get("appendfsync")["appendfsync"] == "everysec"
        deployment.entry.client().set("k", "v")
        deployment.wait_in_sync()
        assert deployment.replicas[0].client().get("k") == "v"
    finally:
        errors = deployment.stop()
        registry.stop_all()
    assert errors == []
    assert not registry.running
    with pytest.raises(redis.ConnectionError):
        deployment.entry.client(timeout=1).ping()


class _FailThirdStart:
    """The real process launcher, except that the third node refuses to start."""

    def __init__(self, inner) -> None:  # type: ignore[no-untyped-def]
        self.inner, self.started, self.pids = inner, 0, []  # type: ignore[var-annotated]

    def start(self, spec):  # type: ignore[no-untyped-def]
        self.started += 1
        if self.started == 3:
            from redis_benchmarks_spec.runner.launcher import ServerStartError
            raise ServerStartError("third node refused")
        handle = self.inner.start(spec)
        self.pids += handle.pids
        return handle

    def stop(self, handle) -> None:  # type: ignore[no-untyped-def]
        self.inner.stop(handle)


def test_nodes_started_before_a_failure_are_stopped(tmp_path: Path) -> None:
    from redis_benchmarks_spec.common.process import ProcessRegistry
    from redis_benchmarks_spec.runner.execute import run_test
    from redis_benchmarks_spec.runner.session import make_env

    suites = tmp_path / "suites"
    topology_suite(suites, "topo-half", ["oss-cluster-3-primaries"])
    registry = ProcessRegistry()
    env = make_env(SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out"), registry)
    env.launcher = failing = _FailThirdStart(env.launcher)
    try:
        r = run_test(load_catalog(suites).suites[0], load_topologies()["oss-cluster-3-primaries"],
                     env)
        assert not registry.running  # stopped by the run itself, before the session's sweep
    finally:
        registry.stop_all()
    assert r.status == STATUS_FAILED and r.reason == "third node refused"
    assert len(failing.pids) == 2 and r.deployment is not None
    assert [n.pids[0] for n in r.deployment.nodes] == failing.pids
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in failing.pids)


def test_cluster_forms_with_a_short_timeout_and_gets_its_own_back(tmp_path: Path) -> None:
    from redis_benchmarks_spec.common.process import ProcessRegistry
    from redis_benchmarks_spec.runner.deployment import Deployment, DeploymentSpec
    from redis_benchmarks_spec.runner.launcher import ProcessLauncher
    from tests.conftest import redis_server_bin

    registry = ProcessRegistry()
    topo = load_topologies()["oss-cluster-5-primaries"]
    plan = CpuAllocator().plan_nodes([1] * 5, 1)
    args = ["--cluster-node-timeout", "12345"]  # as a suite's configuration would set it
    deployment = Deployment(DeploymentSpec(topo, redis_server_bin(), args, plan, tmp_path),
                            ProcessLauncher(registry))
    try:
        deployment.start()
        for node in deployment.nodes:
            with node.client() as client:
                assert client.config_get("cluster-node-timeout") == {
                    "cluster-node-timeout": "12345"}
                info = client.execute_command("CLUSTER", "INFO")
                assert "cluster_state:ok" in info and "cluster_known_nodes:5" in info
                assert client.execute_command("CLUSTER", "COUNTKEYSINSLOT", 0) == 0
    finally:
        assert deployment.stop() == []
        registry.stop_all()


def test_skipped_results_name_their_topology(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-skipped", ["dragonfly-02-proactor-threads", "no-such-topology"])
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    results = run_suites(config, load_catalog(suites).suites)
    assert [(r.status, r.context.topology) for r in results] == [
        ("skipped", "dragonfly-02-proactor-threads"), ("skipped", "no-such-topology")]
    assert results[0].context.topology_type == "oss-standalone"


@pytest.mark.parametrize("launcher", ["process", "docker"])
def test_interrupt_mid_cluster_run_stops_every_node(tmp_path: Path, launcher: str) -> None:
    import signal
    import time

    if launcher == "docker":
        subprocess.run([str(REPO / "scripts" / "ensure-docker.sh")], check=True, timeout=120)
    suites = tmp_path / "suites"
    topology_suite(suites, "topo-interrupt", ["oss-cluster-3-primaries"], n=50_000_000)
    containers = our_containers() if launcher == "docker" else set()
    proc = subprocess.Popen([str(REPO / ".venv" / "bin" / "rbs"), "run", "--suites-dir",
                             str(suites), "--results-dir", str(tmp_path / "out"),
                             "--no-datasink", "--launcher", launcher],
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline and not _benchmark_running(proc.pid):
            time.sleep(0.2)
        assert _benchmark_running(proc.pid), "redis-benchmark never started"
        if launcher == "process":
            assert len(our_servers("topo-interrupt")) == 3  # the scratch node is gone already
        else:
            assert len(our_containers() - containers) == 3
        proc.send_signal(signal.SIGINT)
        out = communicate_or_stacks(proc, 120)
    finally:
        if proc.poll() is None:
            proc.kill()
    assert proc.returncode == 130, out
    assert our_servers("topo-interrupt") == []
    if launcher == "docker":
        assert not our_containers() - containers


def _benchmark_running(pid: int) -> bool:
    return any(n == "redis-benchmark" and "--cluster" in argv
               for _, n, argv in descendants(pid))


def test_clients_get_the_cluster_flag_only_for_clusters() -> None:
    from redis_benchmarks_spec.loadgen.base import ClientTarget
    from redis_benchmarks_spec.loadgen.drivers import RedisBenchmarkDriver
    from redis_benchmarks_spec.loadgen.memtier_driver import MemtierDriver
    from redis_benchmarks_spec.suites.suite import ToolConfig

    rb = RedisBenchmarkDriver("redis-benchmark")
    cfg = ToolConfig("redis-benchmark", "-c 5 -n 10 --cluster -t set")
    on = rb.invocation(cfg, ClientTarget("127.0.0.1", 7000, cluster=True), Path("/tmp/x"), None)
    off = rb.invocation(cfg, ClientTarget("127.0.0.1", 7000), Path("/tmp/x"), None)
    assert on.argv.count("--cluster") == 1 and "--cluster" not in off.argv
    mt = MemtierDriver("memtier_benchmark")
    mcfg = ToolConfig("memtier_benchmark", "--cluster-mode --ratio 1:0 -n 10")
    mon = mt.invocation(mcfg, ClientTarget("127.0.0.1", 7000, cluster=True), Path("/tmp/x"), 1)
    moff = mt.invocation(mcfg, ClientTarget("127.0.0.1", 7000), Path("/tmp/x"), 1)
    assert mon.argv.count("--cluster-mode") == 1 and "--cluster-mode" not in moff.argv


CORPUS = "redis-benchmarks-specification==0.3.47"


def corpus_suites(tmp_path: Path) -> Path:
    """The performance team's 551 suites (downloaded once into .cache/, unpacked here)."""
    import sys
    import zipfile

    cache = cache_root() / "corpus"
    with locked(cache / "wheel.lock"):
        wheels = sorted(cache.glob("redis_benchmarks_specification-0.3.47-*.whl"))
        if not wheels:
            subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", CORPUS, "-d",
                            str(cache)], check=True, timeout=300, capture_output=True)
            wheels = sorted(cache.glob("redis_benchmarks_specification-0.3.47-*.whl"))
    with zipfile.ZipFile(wheels[0]) as wheel:
        members = [m for m in wheel.namelist() if "/test-suites/" in m]
        wheel.extractall(tmp_path, members)
    return tmp_path / "redis_benchmarks_specification" / "test-suites"


def test_the_teams_corpus_plans_with_no_topology_skip(tmp_path: Path) -> None:
    import shutil

    import yaml

    catalogue = load_topologies()
    files = sorted(corpus_suites(tmp_path / "corpus").glob("*.yml"))
    assert len(files) > 500
    named: dict[Path, list[str]] = {}
    for path in files:  # C YAML here: our loader takes ~0.15 s a file on this machine
        raw = yaml.load(path.read_text(), Loader=yaml.CSafeLoader)
        named[path] = list(raw.get("redis-topologies") or [])
    pairs = [(p, t) for p, names in named.items() for t in names]
    assert {t for _, t in pairs} <= set(catalogue)
    others = [(p, t) for p, t in pairs if t != "oss-standalone"]
    assert len(others) >= 140  # io-threads, replica and cluster pairs (the issue counted 84+)
    assert all(not catalogue[t].unsupported_reason() for _, t in others)
    # the real path for the suites that name a cluster: loaded, planned, no topology skip
    chosen = tmp_path / "chosen"
    chosen.mkdir()
    for path in {p for p, t in others if catalogue[t].is_cluster}:
        shutil.copy(path, chosen / path.name)
    planned = plan_tests(SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out"),
                         load_catalog(chosen).suites)
    assert len([t for t in planned if t.topology_name.startswith("oss-cluster")]) >= 6
    assert [t.skip_reason for t in planned if "topolog" in t.skip_reason] == []


def test_cluster_dataset_copied_by_slot_and_keyless_init_on_every_primary(
        tmp_path: Path) -> None:
    from redis.crc import key_slot

    from redis_benchmarks_spec.common.process import ProcessRegistry
    from redis_benchmarks_spec.runner import cluster
    from redis_benchmarks_spec.runner.deployment import Deployment, DeploymentSpec
    from redis_benchmarks_spec.runner.launcher import ProcessLauncher
    from tests.conftest import redis_server_bin

    registry = ProcessRegistry()
    topo = load_topologies()["oss-cluster-3-primaries"]
    plan = CpuAllocator().plan_nodes([1] * 3, 1)
    deployment = Deployment(DeploymentSpec(topo, redis_server_bin(), [], plan, tmp_path),
                            ProcessLauncher(registry))
    init = [["CONFIG", "SET", "maxmemory-policy", "allkeys-lru"], ["SET", "init:key", "v"]]
    try:
        deployment.start()
        scratch = deployment.start_scratch(plan.client)
        with scratch.client() as c:
            for argv in init:
                c.execute_command(*argv)
            c.eval("for i=0,1999 do redis.call('SET', 'k:'..i, i) end "
                   "redis.call('PEXPIRE', 'k:7', 600000) return 1", 0)
        assert cluster.load_from_scratch(scratch, deployment.primaries, init) == 2001
        deployment.stop_scratch()
        assert cluster.keyspace_sum(deployment.primaries) == 2001
        for node in deployment.primaries:
            assert node.slots is not None
            with node.client() as c:
                assert c.config_get("maxmemory-policy")["maxmemory-policy"] == "allkeys-lru"
                keys_here = c.keys("*")
                assert keys_here and all(node.slots[0] <= key_slot(k.encode()) <= node.slots[1]
                                         for k in keys_here)
        owner = cluster.owner(key_slot(b"k:7"), deployment.primaries)
        with owner.client() as c:
            assert c.get("k:7") == "7" and 0 < c.pttl("k:7") <= 600000
    finally:
        assert deployment.stop() == []
        registry.stop_all()
