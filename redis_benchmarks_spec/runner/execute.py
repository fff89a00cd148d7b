"""One test run, top to bottom: server up, dataset, client(s) with telemetry, result, clean up."""

from __future__ import annotations

import logging
import math
import shutil
import tempfile
import time
from collections.abc import Callable
from dataclasses import replace
from functools import partial
from pathlib import Path

import redis

from redis_benchmarks_spec.common.credentials import redact_argv
from redis_benchmarks_spec.common.errors import TestRunError
from redis_benchmarks_spec.common.process import tail
from redis_benchmarks_spec.loadgen import pacing
from redis_benchmarks_spec.loadgen.base import ClientDriver, ClientTarget, Invocation
from redis_benchmarks_spec.loadgen.fixed_requests import with_request_count
from redis_benchmarks_spec.loadgen.result import ServerErrorReplies
from redis_benchmarks_spec.results import stages
from redis_benchmarks_spec.results.assembly import RunRecords, assemble
from redis_benchmarks_spec.results.document import (
    STATUS_FAILED,
    STATUS_OK,
    RunResult,
    result_path,
    run_dir,
)
from redis_benchmarks_spec.results.stages import Outcome
from redis_benchmarks_spec.results.tool_result import ToolResult
from redis_benchmarks_spec.runner import dataset as dataset_mod
from redis_benchmarks_spec.runner import (
    deployment_data,
    node_stats,
    preload_snapshot,
    run_records,
    run_user,
    seeds,
)
from redis_benchmarks_spec.runner.client_host import LOOPBACK
from redis_benchmarks_spec.runner.client_side import ClientSide, open_client_side
from redis_benchmarks_spec.runner.client_tools import (
    RunFailure,
    check_error_replies,
    parse_all,
    tool_version,
    wait_client,
)
from redis_benchmarks_spec.runner.cpus import CpuPlan
from redis_benchmarks_spec.runner.deployment import Deployment, DeploymentSpec
from redis_benchmarks_spec.runner.error_hints import server_counts_errors, weigh_tool_notes
from redis_benchmarks_spec.runner.floor import below_floor
from redis_benchmarks_spec.runner.launcher import ServerHandle
from redis_benchmarks_spec.runner.node import Node
from redis_benchmarks_spec.runner.persistence import PersistenceChecks
from redis_benchmarks_spec.runner.preload import PreloadContext, prepare_dataset
from redis_benchmarks_spec.runner.run_env import RunEnv
from redis_benchmarks_spec.runner.server_cpu import server_cpu
from redis_benchmarks_spec.suites.auth import Credentials
from redis_benchmarks_spec.suites.suite import Suite, ToolConfig
from redis_benchmarks_spec.suites.topology import Topology
from redis_benchmarks_spec.telemetry.cpu import CpuSampler
from redis_benchmarks_spec.telemetry.window import MeasuredWindow

log = logging.getLogger(__name__)

def _target(host: str, port: int, auth: Credentials | None,
            cluster: bool = False) -> ClientTarget:
    """Where a client tool connects, as whom (the suite's declared credentials)."""
    return ClientTarget(host, port, password=auth.password if auth else None,
                        user=auth.user if auth else None, cluster=cluster)


def run_test(suite: Suite, topology: Topology, env: RunEnv) -> RunResult:
    """Run one suite on one topology; never raises for a test failure, it records it."""
    return SuiteRun(suite, topology, env).run()


class SuiteRun:
    """One suite on one topology, owned from plan to written result.

    Everything the run starts is recorded on this object so clean-up knows what to stop; each
    step's frozen record is filed in ``self.records`` (results/assembly.py), from which ``run``
    assembles the result document once and writes ``result.json``, even when the test or its
    clean-up fails: a measurement that was taken is never lost because a container would not
    stop or a log would not copy.
    """

    def __init__(self, suite: Suite, topology: Topology, env: RunEnv) -> None:
        if single_command(suite) and env.config.test_time is not None:
            # one SAVE / DEBUG RELOAD / BGSAVE: a duration override would repeat it
            env = replace(env, config=replace(env.config, test_time=None))
        self.suite, self.topology, self.env = suite, topology, env
        self.records = RunRecords(run_records.run_start(suite, topology, env))
        self.out_dir = run_dir(env.config.results_dir, suite.name, topology.name)
        self.deployment: Deployment | None = None
        self.server: ServerHandle | None = None  # the entry node (first primary)
        self.server_dir: Path | None = None
        self.clients: ClientSide | None = None  # where the tools run (client_side.py)
        self.client_cpus: list[int] = []  # on the host the tools run on
        self.window = MeasuredWindow(env.config.window, self.out_dir, env.registry, env.config.launcher)
        self.run_user: run_user.RunUser | None = None  # the tools' throwaway ACL user
        # a counted run's dataset, loaded from its preload's snapshot (preload_snapshot.py)
        self.loaded: dataset_mod.CachedDataset | None = None
        # a counted run's pair draws the seeds its other side draws (runner/seeds.py)
        self.seed_library = seeds.shim_library() if self.window.fixed_requests() and \
            env.context.deployment_type == "process" else None

    def run(self) -> RunResult:
        outcome = Outcome(STATUS_FAILED, "interrupted before the test finished")
        try:
            self.out_dir.mkdir(parents=True, exist_ok=True)
            self._execute()
            outcome = Outcome(STATUS_OK)
        except RunFailure as exc:
            outcome = Outcome(STATUS_FAILED, str(exc), exc.log_tail)
        except ServerErrorReplies as exc:
            outputs = self.records.clients.paths if self.records.clients else {}
            outcome = Outcome(STATUS_FAILED, str(exc), "\n".join(
                tail(Path(p), 5) for k, p in outputs.items() if k.startswith("client_")))
        except TestRunError as exc:  # any of the test's own reasons (common/errors.py)
            outcome = Outcome(STATUS_FAILED, str(exc))
        except (redis.RedisError, OSError) as exc:
            outcome = Outcome(STATUS_FAILED, f"{type(exc).__name__}: {exc}")
        # anything else (Ctrl-C / SIGTERM / a bug): the result is written, then it re-raises
        finally:
            self._cleanup_step("summarize telemetry and profiles", self._finish_window)
            self._cleanup(outcome.status == STATUS_OK)
            result = assemble(self.records, outcome, int(time.time() * 1000))
            self._write(result)
        return result

    def _finish_window(self) -> None:
        stats = self.records.server_stats
        self.records.window = self.window.finish(stats.commandstats_delta if stats else {},
                                                 self.suite.tested_commands)

    # -- the test, top to bottom ----------------------------------------------------------

    def _execute(self) -> None:
        suite, env, records = self.suite, self.env, self.records
        drivers = [] if env.config.memory_only else [env.drivers[c.tool] for c in suite.clientconfigs]
        # parallel clients asking 0.5 CPU each share one core
        client_cpus = max(1, math.ceil(sum(c.cpus or 1.0 for c in suite.clientconfigs) - 1e-9))
        topo = self.topology
        # a client on another host takes none of this host's CPUs
        plan = env.allocator.plan_nodes([topo.cpus_per_node] * topo.node_count,
                                        0 if env.config.client_host else client_cpus)
        # a client host that cannot be reached fails the test before any server starts
        self.clients = open_client_side(env.config.client_host, env.registry, self.out_dir)
        self.client_cpus = self.clients.cpus(client_cpus, plan.client)
        records.placement = run_records.placement(suite.name, plan, self.client_cpus,
                                                  env.allocator.placement.why, records.findings)
        deployment = self._start_deployment(plan)
        server = deployment.entry.handle
        target = _target(server.host, server.port, suite.dbconfig.auth, topo.is_cluster)
        records.network = self.clients.network(server.host, server.port)
        records.preload_duration_s = self._prepare_deployment(plan)
        # a run that fails later keeps it
        records.memory = stages.MemoryRecord(node_stats.memory_snapshot(deployment))
        if env.config.memory_only:
            records.identity = run_records.identity(node_stats.snapshot(deployment))
            return
        # the tools take a password only in argv: a throwaway user's (runner/run_user.py)
        target, self.run_user, records.client_credential = run_user.for_tools(
            [n.client() for n in deployment.primaries], target)
        persistence = PersistenceChecks(server.client(), suite.dbconfig,
                                        topo.node_count == 1 and not topo.is_cluster)
        persistence.before_run()
        rates = self._warm_up(drivers, target, plan)
        before = node_stats.snapshot(deployment)
        records.identity = run_records.identity(before)
        tool_result = self._measure(drivers, target, plan, rates, before)
        after = self._after_run(before)
        totals = node_stats.replication_metrics(deployment, before, after)
        # every measurement is stored before a check may fail the test
        self._add_measurements(tool_result, totals, persistence.metrics(), after)
        persistence.verify()
        server_errors, _ = node_stats.error_replies(before, after)
        records.findings.append(weigh_tool_notes(
            tool_result, server_counts_errors(after.by_node), server_errors))
        check_error_replies(before, after)
        floor = below_floor(suite.dbconfig, tool_result,
                            counted=bool(self.window.fixed_requests()))
        if floor:
            raise RunFailure(floor)

    def _measure(self, drivers: list[ClientDriver], target: ClientTarget, plan: CpuPlan,
                 rates: list[float | None], before: node_stats.NodeSnapshots) -> ToolResult:
        """The clients' run; a run the servers answered with errors keeps the servers'
        statistics and fails with their error counts."""
        assert self.deployment is not None
        try:
            return self._run_clients(drivers, target, plan, rates)
        except ServerErrorReplies as exc:
            after = node_stats.snapshot(self.deployment)
            # a failed test keeps every measurement it took
            self._server_stats(before, after)
            count, kinds = node_stats.error_replies(before, after)
            raise ServerErrorReplies(max(count, exc.count),
                                     f"{exc.detail}; server errorstats: {kinds or 'none'}"
                                     ) from exc

    def _after_run(self, before: node_stats.NodeSnapshots) -> node_stats.NodeSnapshots:
        """The servers once the replicas caught up: their statistics and memory."""
        deployment = self.deployment
        assert deployment is not None
        # replicas apply the run's writes asynchronously: their deltas count once caught up
        deployment.wait_in_sync()
        after = node_stats.snapshot(deployment)
        # a counted run's (a profiler's fixed request count, the server under callgrind):
        # one read, not settled (its after-run figures are timed, never its verdict; the
        # settling reads were 0.6 s of a 4.3 s run, docs/lab.md)
        counted = bool(self.window.fixed_requests())
        self.records.memory = replace(
            self.records.memory or stages.MemoryRecord(),
            after_run=node_stats.memory_snapshot(deployment, settle=not counted))
        self._server_stats(before, after)
        return after

    def _server_stats(self, before: node_stats.NodeSnapshots,
                      after: node_stats.NodeSnapshots) -> None:
        assert self.deployment is not None
        stats = node_stats.server_stats(self.deployment, before, after, self.records.deployment)
        self.records.server_stats, self.records.deployment = stats, stats.deployment

    def _add_measurements(self, tool_result: ToolResult, totals: dict[str, float],
                          saved: dict[str, float], after: node_stats.NodeSnapshots) -> None:
        """The exporter's metrics (on the tool's data with the deployment's and the save's
        figures beside its totals), the rate and sweep records, the derived metrics."""
        records, config = self.records, self.env.config
        records.tool = run_records.tool_outcome(self.suite, tool_result, {**totals, **saved})
        clients = records.clients
        paced = pacing.rate_record(clients.argv if clients else [], tool_result)
        records.add_rate(paced, pacing.saturation_note(paced))
        if config.point is not None:  # a point of a concurrency sweep (runner/concurrency.py)
            record, findings = config.point.finding(
                clients.paths.get("client_0_output", "") if clients else "", tool_result,
                clients.duration_s if clients else None, records.deployment)
            records.concurrency = record
            records.findings.append(findings)
        stats = records.server_stats
        records.derived += [deployment_data.totals_metrics(totals),
                            server_cpu(stats.info_delta if stats else {}),
                            stages.DerivedMetrics(node_stats.persistence_metrics(after))]

    def _start_deployment(self, plan: CpuPlan) -> Deployment:
        """Every node of the topology up (a cluster formed, replicas not linked yet)."""
        env = self.env
        self.server_dir = Path(tempfile.mkdtemp(prefix=f"rbs-{self.suite.name[:40]}-"))
        args = self.suite.dbconfig.server_args() + self.topology.server_args() + env.config.server_args
        spec = DeploymentSpec(self.topology, env.redis_server, args, plan, self.server_dir,
                              env.context.deployment_type,
                              wrapper=self.window.server_wrapper(self.server_dir),
                              auth=self.suite.dbconfig.auth_at_start,
                              bind=env.config.client_host.server_address if env.config.client_host
                              else LOOPBACK,
                              seeded=partial(self._seeded, "node") if self.seed_library else None)
        # recorded before the dataset is fetched: a run whose dataset fails says which
        self.records.setup = stages.ServerSetup(list(args), run_records.dataset_record(self.suite))
        self.records.setup = run_records.with_dataset(self.records.setup, self.suite,
                                                      self.topology, spec, env.dataset_cache)
        self.deployment = Deployment(spec, env.launcher)
        try:
            self.loaded = self._loaded_dataset(spec, plan)
            self.deployment.start()
        finally:
            self.records.deployment = self.deployment.record()
        self.server = self.deployment.entry.handle
        self.records.server_log = str(self.server.log_path)
        return self.deployment

    def _loaded_dataset(self, spec: DeploymentSpec,
                        plan: CpuPlan) -> dataset_mod.CachedDataset | None:
        """A counted run under valgrind: its preload's snapshot (made now on the scratch node
        when this build has none) put in the primary's dir; None where the run writes it."""
        env, db = self.env, self.suite.dbconfig
        if not (self.window.fixed_requests() and spec.wrapper) or \
                env.config.window.profilers.write_preloads:
            return None
        driver = env.drivers.get(db.preload_tool.tool) if db.preload_tool else None
        request = preload_snapshot.SnapshotRequest(
            spec.binary, list(spec.args), db, tool_version(driver) if driver else "")
        deployment = self.deployment
        assert deployment is not None

        def write(scratch: Node) -> float | None:
            return self._prepare(_target(scratch.host, scratch.port, None), scratch.client(), plan)

        store = preload_snapshot.store_for(env.dataset_cache)
        found = preload_snapshot.find_or_make(
            self.suite.name, request, self.topology, spec.launcher_name, store,
            lambda store, key: preload_snapshot.make(deployment, plan.server, write, store, key))
        if found is None or self.records.setup is None:  # setup: recorded just before
            return None
        spec.prepare_primary_dir = partial(dataset_mod.place, found)
        spec.start_timeout = dataset_mod.load_timeout_s(found, spec.start_timeout)
        self.records.setup = run_records.with_snapshot(self.records.setup, found)
        return found

    def _prepare_deployment(self, plan: CpuPlan) -> float | None:
        """The dataset on every node (``deployment_data``: replicas linked before or after
        the preload, a cluster's dataset prepared on a scratch node and copied by slot)."""
        assert self.deployment is not None

        auth = self.suite.dbconfig.auth

        def on_node(node: Node) -> float | None:
            if self.loaded is not None:  # the snapshot holds the dataset
                preload_snapshot.prepare_loaded(node.client(), self.suite.dbconfig)
                return None
            # the preload runs after the init commands: with the credentials they leave
            duration = self._prepare(_target(node.host, node.port, auth), node.client(), plan)
            node.handle.auth = auth
            return duration

        duration = deployment_data.prepare(self.deployment, self.suite.dbconfig, on_node,
                                           _here(plan))
        self.records.deployment = self.deployment.record()
        return duration

    def _prepare(self, target: ClientTarget, client: redis.Redis, plan: CpuPlan) -> float | None:
        env = self.env
        preload = self.suite.dbconfig.preload_tool
        driver = env.drivers.get(preload.tool) if preload else None
        ctx = PreloadContext(client, target, env.registry, self.out_dir, env.config.preload_timeout_s,
                             driver, _here(plan))
        return prepare_dataset(ctx, self.suite.dbconfig)

    def _warm_up(self, drivers: list[ClientDriver], target: ClientTarget,
                 plan: CpuPlan) -> list[float | None]:
        """Rates measured by each driver's warm-up (None where a driver needs none)."""
        env, clients = self.env, self.clients
        assert clients is not None
        rates: list[float | None] = []
        for i, (driver, cfg) in enumerate(zip(drivers, self._client_configs())):
            inv = driver.warmup(cfg, target, self.out_dir / f"client-{i}", self._test_time())
            if inv is None:
                rates.append(None)
                continue
            inv = self._client_seeds([inv])[0]
            proc = clients.spawn(inv, self.client_cpus, env.timing.timeout(inv))
            try:
                code = wait_client(clients, proc, inv, env.timing)
            finally:
                clients.stop(proc)
            rate = parse_all([driver], [inv], [code], rate_is_metric=False).totals.ops_per_sec
            rates.append(rate or None)
        return rates

    def _run_clients(self, drivers: list[ClientDriver], target: ClientTarget, plan: CpuPlan,
                     rates: list[float | None]) -> ToolResult:
        """Start every client config at once (``clientconfigs`` run in parallel) and wait."""
        env, clients = self.env, self.clients
        assert clients is not None
        invocations = self._client_seeds(
            [self._slowed(d.invocation(cfg, target, self.out_dir / f"client-{i}",
                                       self._test_time(), rate))
             for i, (d, cfg, rate) in enumerate(zip(drivers, self._client_configs(), rates))])
        if self.seed_library is not None:
            self.records.findings.append(stages.Findings(notes=[seeds.SEEDS_NOTE]))
        started_run = stages.ClientRun(
            [redact_argv(inv.argv) for inv in invocations],
            {f"client_{i}_output": str(inv.stdout_path) for i, inv in enumerate(invocations)},
            ",".join(sorted({f"{d.tool} {tool_version(d)}" for d in drivers})))
        self.records.clients = started_run
        sampler = CpuSampler()
        assert self.deployment is not None
        sampler.watch("server", self.deployment.pids)
        self.window.start(self.deployment.pids, self.suite.name)
        started = time.monotonic()
        procs = [clients.spawn(inv, self.client_cpus, env.timing.timeout(inv))
                 for inv in invocations]
        if not clients.remote:
            sampler.watch("client", [p.pid for p in procs])
            sampler.watch_client_cores(plan.client)
        # the foreign load is measured on this host's pinned CPUs (no client's, when the
        # client runs on another host)
        sampler.watch_cpus([*plan.client, *plan.server])
        sampler.start()
        try:
            codes = [wait_client(clients, p, inv, env.timing) for p, inv in zip(procs, invocations)]
        finally:
            sampler.stop()
            self.window.stop()
            for p in procs:
                clients.stop(p)
        cpu, findings = run_records.saturation(sampler, plan, env.config.thresholds,
                                    clients.usage(procs, len(self.client_cpus)))
        self.records.clients = replace(started_run, duration_s=time.monotonic() - started,
                                       cpu=cpu)
        self.records.findings.append(findings)
        # a counted run (a profiler's fixed request count) measures its counts, not its rate:
        # a memtier SET side of a few hundred requests at 1:10 can print 0 ops/sec (the
        # #11779 lab replay failed a test so, once in 8 runs)
        return parse_all(drivers, invocations, codes,
                          rate_is_metric=not (self.suite.dbconfig.wait_for_bgsave
                                              or self.window.fixed_requests()))

    def _client_configs(self) -> list[ToolConfig]:
        """The suite's client configs, with a fixed request count when a profiler needs one."""
        count = self.window.fixed_requests()
        configs = self.suite.clientconfigs
        return [with_request_count(c, count) for c in configs] if count else list(configs)

    def _test_time(self) -> int | None:
        return None if self.window.fixed_requests() else self.env.config.test_time

    def _seeded(self, who: str, index: int) -> list[str]:
        """The argv prefix that pins node ``index``'s seeds to this pair's (runner/seeds.py)."""
        assert self.seed_library is not None
        return seeds.env_prefix(self.seed_library, self._seed(who, index))

    def _seed(self, who: str, index: int) -> str:
        return f"pair{self.env.context.repetition or 0}/{who}{index}"

    def _client_seeds(self, invocations: list[Invocation]) -> list[Invocation]:
        """The local clients of a pinned run draw this pair's seeds (a client host's tools
        run as that host starts them)."""
        if self.seed_library is None or self.clients is None or self.clients.remote:
            return invocations
        return [replace(inv, env={**inv.env, **seeds.seed_env(self.seed_library,
                                                              self._seed("client", i))})
                for i, inv in enumerate(invocations)]

    def _slowed(self, inv: Invocation) -> Invocation:
        """A server under callgrind is much slower: give the client time accordingly."""
        factor = self.window.slowdown
        return inv if factor == 1.0 else replace(
            inv, expected_duration_s=inv.expected_duration_s * factor)

    # -- the end: clean-up never loses the result -----------------------------------------

    def _cleanup(self, ok: bool) -> None:
        """Stop what this run started; a failing step is recorded and the others still run.
        ``ok``: the test passed (a failed one keeps its server log's tail)."""
        if self.clients is not None:
            self._cleanup_step("close the client side", self.clients.close)
        if self.run_user is not None:  # before the servers stop: a failure is recorded
            self._cleanup_step("delete the run's ACL user", self.run_user.delete)
        if self.deployment is not None:
            # each node by its own id; one that will not stop is recorded, the others still are
            for what, error in self.deployment.stop():
                log.warning("%s: could not %s: %s", self.suite.name, what, error)
                self.records.cleanup_errors.append(f"{what}: {error}")
        self._cleanup_step("keep the server log", partial(self._keep_server_log, ok))
        if self.server_dir is not None:
            shutil.rmtree(self.server_dir, ignore_errors=True)

    def _cleanup_step(self, what: str, step: Callable[[], None]) -> None:
        try:
            step()
        except (OSError, RuntimeError, redis.RedisError) as exc:
            log.warning("%s: could not %s: %s", self.suite.name, what, exc)
            self.records.cleanup_errors.append(f"{what}: {type(exc).__name__}: {exc}")

    def _keep_server_log(self, ok: bool) -> None:
        """The entry node's log as redis-server.log; other nodes' logs beside it."""
        if self.deployment is None or not self.deployment.nodes:
            return
        paths: dict[str, str] = {}
        for node in self.deployment.nodes[1:]:
            kept_node = self.out_dir / f"redis-server-{node.role}-{node.index}.log"
            shutil.copyfile(node.handle.log_path, kept_node)
            paths[f"server_log_{node.index}"] = str(kept_node)
        kept = self.out_dir / "redis-server.log"
        shutil.copyfile(self.deployment.entry.handle.log_path, kept)
        paths["server_log"] = str(kept)
        self.records.logs = stages.KeptLogs(paths, "" if ok else tail(kept))

    def _write(self, result: RunResult) -> None:
        path = result_path(self.env.config.results_dir, result)
        path.parent.mkdir(parents=True, exist_ok=True)
        result.write(path)


def single_command(suite: Suite) -> bool:
    """Suites that measure one save or load: the command must run exactly once."""
    return suite.dbconfig.rdb_checks is not None or suite.dbconfig.wait_for_bgsave


def _here(plan: CpuPlan) -> list[int]:
    """Where preloads run on this host: the client's CPUs, or the servers' when the client
    is on another host (a preload is not measured)."""
    return plan.client or plan.server
