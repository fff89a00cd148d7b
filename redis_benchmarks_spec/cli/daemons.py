"""``rbs builder`` and ``rbs agent``: the daemons of the pipeline (parsing and wiring only)."""

from __future__ import annotations

import argparse
import logging
import os
import signal
import socket
import sys
import tempfile
from collections.abc import Callable
from pathlib import Path
from types import FrameType

import redis

from redis_benchmarks_spec.agent import platform_config
from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.agent.code_selection import SelectionPolicy
from redis_benchmarks_spec.agent.host_record import NoiseOptions, record_host
from redis_benchmarks_spec.agent.platform_config import PlatformConfig
from redis_benchmarks_spec.agent.push import DatasinkPusher
from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig, WatchingPusher
from redis_benchmarks_spec.builder import signing
from redis_benchmarks_spec.builder.artifacts import S3Target
from redis_benchmarks_spec.builder.daemon import Builder, BuilderConfig
from redis_benchmarks_spec.builder.sandbox import ENGINES, Sandbox
from redis_benchmarks_spec.builder.source import GitOptions
from redis_benchmarks_spec.builder.variants import default_variants_dir, load_variants
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.broker_args import ENV_BROKER_PASSWORD, add_broker
from redis_benchmarks_spec.cli.client_host_args import probe_client_host, ssh_hint
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.cli.github_args import add_github_args, notifier_from_args
from redis_benchmarks_spec.cli.platform import add_noise_args, noise_seconds
from redis_benchmarks_spec.cli.profiling import add_profiling_args, window_options
from redis_benchmarks_spec.cli.run_checks import parse_cpus
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.common.paths import absolute_location, absolute_program
from redis_benchmarks_spec.datasink import suspect_marks
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.notify.github_config import GitHubConfigError
from redis_benchmarks_spec.runner.client_host import ClientHostConfig
from redis_benchmarks_spec.runner.config import SessionConfig
from redis_benchmarks_spec.suites.catalog import SuiteFilter, default_suites_dir

ENV_DATASINK = "RBS_DATASINK"
ENV_DATASINK_PASSWORD = "RBS_DATASINK_PASSWORD"  # or RBS_DATASINK_PASSWORD_FILE
# a password given in one of these URLs on the command line is moved to the environment


def _common(p: argparse.ArgumentParser) -> None:
    add_broker(p)
    p.add_argument("--consumer", default=f"{socket.gethostname()}-{os.getpid()}",
                   help="consumer name in the group (default: hostname-pid); give a stable "
                        "name under a service manager so a restart resumes its own backlog")
    p.add_argument("--block-ms", type=int, default=5000, help="blocking read timeout")
    p.add_argument("--idle-claim-ms", type=int, default=300_000,
                   help="claim entries a dead consumer held longer than this")
    p.add_argument("--heartbeat-ttl", type=int, default=60, help="heartbeat key TTL, seconds")
    p.add_argument("--max-deliveries", type=int, default=5,
                   help="dead-letter an entry delivered more often than this, counting claims "
                        "and this consumer's own restarts (a poison entry never loops)")
    p.add_argument("--work-dir", type=Path, default=Path(tempfile.gettempdir()) / "rbs-work")
    p.add_argument("--artifact-key-file", type=Path, default=None, metavar="FILE",
                   help="artifact MAC key shared by builders and agents (default: "
                        f"${signing.ENV_KEY_FILE}, ${signing.ENV_KEY}, else a per-host key "
                        "file created on first use; see docs/security.md)")


def _register_builder(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("builder", help="build daemon: build requests -> artifacts + build events")
    _common(b)
    b.add_argument("--build-variants-dir", type=Path, default=default_variants_dir())
    b.add_argument("--build-variants", default="",
                   help="comma-separated default variants (default: every variant file)")
    b.add_argument("--cache-dir", type=Path, default=None, help="local artifact cache")
    b.add_argument("--build-timeout", type=float, default=1800.0, help="seconds per make")
    b.add_argument("--build-sandbox", choices=ENGINES, default="auto",
                   help="where pull-request code is compiled: docker (the variant's "
                        "build_image), bwrap (bubblewrap), or auto: docker when the engine "
                        "has the image, else bwrap (see docs/security.md)")
    b.add_argument("--git-remote", default=None, type=absolute_location,
                   help="fetch every git source from this URL instead of the request's")
    b.add_argument("--git-mirror", type=Path, default=None, metavar="DIR",
                   help="keep local bare mirrors of git remotes here")
    b.add_argument("--keep-trees", type=Path, default=None, metavar="DIR",
                   help="keep one source tree per build variant here and build each commit "
                        "over the last one (incremental make); for a lab of trusted pull "
                        "requests only: a build's output is the next one's input")
    b.add_argument("--check-incremental-every", type=int, default=0, metavar="N",
                   help="with --keep-trees: check one incremental build in N against a clean "
                        "build of its commit, function by function (a mismatch drops the "
                        "tree and publishes the clean build); 0 (default): never")
    b.add_argument("--artifacts-s3", default=None, metavar="s3://BUCKET/PREFIX",
                   help="store artifacts in S3 (needs boto3) instead of Redis chunks")
    b.add_argument("--datasink", default=None, metavar="URL",
                   help="with --check-incremental-every: mark there the points measured on "
                        "artifacts a check found built from a bad kept tree (suspect, never "
                        "judged, until re-measured) and note them on the branch's watch log")
    add_github_args(b)  # a failed or dead-lettered build ends the pull-request comment
    b.set_defaults(func=cmd_builder)


def _register_agent(sub: argparse._SubParsersAction) -> None:
    a = sub.add_parser("agent", help="lab-host daemon: build events -> suites -> datasink")
    _common(a)
    a.add_argument("--platform", required=True, help="this host's platform (consumer group)")
    add_profiling_args(a)  # a platform's agents run with its profilers (e.g. instructions)
    a.add_argument("--suites-dir", type=Path, default=None)
    a.add_argument("--results-dir", type=Path, default=Path("results") / "agent")
    a.add_argument("--tests-regexp", default=".*")
    a.add_argument("--groups-regexp", default=".*")
    a.add_argument("--commands-regexp", default=".*")
    a.add_argument("--priority-min", type=int, default=None)
    a.add_argument("--priority-max", type=int, default=None)
    a.add_argument("--topology", default=None, help="run only this topology of each suite")
    a.add_argument("--test-time", type=int, default=None)
    a.add_argument("--cpus", default=None, help="comma-separated CPU ids to use")
    a.add_argument("--launcher", choices=["process", "docker"], default="process")
    a.add_argument("--strict-cpus", action="store_true",
                   help="skip tests whose topology and client need more CPUs than this host "
                        "has, instead of sharing cores (results flagged shared-cores)")
    a.add_argument("--datasink", default=os.environ.get(ENV_DATASINK), metavar="URL",
                   help=f"RedisTimeSeries URL (default: ${ENV_DATASINK}, else the embedded "
                        "datasink)")
    a.add_argument("--memtier-bin", default=None, type=absolute_program)
    a.add_argument("--redis-benchmark-bin", default=None, type=absolute_program)
    a.add_argument("--capability", action="append", default=[], metavar="NAME",
                   help="a capability the operator qualified this host for (repeatable, e.g. "
                        "local-disk); suites whose required-runner-capabilities it lacks are "
                        "not run here")
    a.add_argument("--platform-config", type=Path, default=None, metavar="FILE",
                   help="this platform's settings (YAML): an until_decided budget lets "
                        "pull-request events run as interleaved base/PR pairs until decided "
                        "(docs/pr-comments.md)")
    a.add_argument("--watch-branch", action="append", default=[], metavar="BRANCH",
                   help="judge each pushed point of this tracked branch on arrival and store "
                        "change candidates for confirmation (repeatable; docs/watch.md)")
    add_github_args(a, agent=True)
    add_noise_args(a)  # the host's intrinsic latency, measured at startup
    a.set_defaults(func=cmd_agent)


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rbs builder`` and ``rbs agent``."""
    _register_builder(sub)
    _register_agent(sub)


def _broker(args: argparse.Namespace) -> redis.Redis:
    # socket timeout well above the blocking read, so a BLOCK never looks like a dead link
    url = credentials.with_password(args.broker, ENV_BROKER_PASSWORD)
    return redis.Redis.from_url(url, socket_timeout=args.block_ms / 1000 + 30,
                                socket_connect_timeout=10, health_check_interval=30)


def _secure_start(args: argparse.Namespace, role: str) -> bytes | None:
    """No password in argv, the artifact key loaded; None (after printing one line) when
    argv holds a password (the console script refuses it first; this covers other ways of
    starting main) or the key cannot be had."""
    refusal = credentials.argv_refusal(role, sys.orig_argv[1:])
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return None
    try:
        return signing.load_key(args.artifact_key_file)
    except signing.ArtifactKeyError as exc:
        print(f"rbs {role}: {exc}", file=sys.stderr)
        return None


def _on_signals(stop: Callable[[], None]) -> None:
    """SIGTERM/SIGINT: finish the current unit of work, then exit cleanly."""
    def handler(signum: int, frame: FrameType | None) -> None:
        logging.getLogger(__name__).info("signal %d: finishing the current work", signum)
        stop()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def _check_broker(args: argparse.Namespace) -> None:
    """The broker URL is one and the broker answers (one line and exit 2 if not)."""
    checks.redis_url("--broker", args.broker)
    checks.reachable("--broker", checks.display_url(args.broker), _broker(args))


def _check_agent_args(args: argparse.Namespace) -> None:
    """Every agent input checked before it joins its group."""
    _check_broker(args)
    for flag in ("tests_regexp", "groups_regexp", "commands_regexp"):
        checks.regexp("--" + flag.replace("_", "-"), getattr(args, flag))
    if args.suites_dir is not None:
        checks.existing_dir("--suites-dir", args.suites_dir)
    for flag, attr in (("--memtier-bin", "memtier_bin"),
                       ("--redis-benchmark-bin", "redis_benchmark_bin")):
        if getattr(args, attr):
            setattr(args, attr, checks.executable(flag, getattr(args, attr)))
    if args.datasink:
        checks.redis_url("--datasink", args.datasink)
    parse_cpus(args.cpus)
    checks.writable_dir("--results-dir", args.results_dir, create=True)


def cmd_builder(args: argparse.Namespace) -> int:
    """Run the build daemon until SIGTERM."""
    key = _secure_start(args, "builder")
    if key is None:
        return 2
    _check_broker(args)
    checks.existing_dir("--build-variants-dir", args.build_variants_dir)
    config = BuilderConfig(
        names=names_mod.from_args(args), consumer=args.consumer,
        variants=load_variants(args.build_variants_dir),
        default_variants=[v for v in args.build_variants.split(",") if v],
        work_dir=args.work_dir, block_ms=args.block_ms, idle_claim_ms=args.idle_claim_ms,
        build_timeout_s=args.build_timeout, cache_dir=args.cache_dir,
        git=GitOptions(remote=args.git_remote, mirror_dir=args.git_mirror),
        s3=S3Target.parse(args.artifacts_s3) if args.artifacts_s3 else None,
        heartbeat_ttl_s=args.heartbeat_ttl, artifact_key=key,
        sandbox=Sandbox(engine=args.build_sandbox), max_deliveries=args.max_deliveries,
        keep_trees=args.keep_trees, check_every=args.check_incremental_every)
    broker = _broker(args)
    try:
        notifier = notifier_from_args(args, broker, config.names)
    except GitHubConfigError as exc:
        print(f"rbs builder: {exc}", file=sys.stderr)
        return 2
    marker = None
    if args.datasink:
        checks.redis_url("--datasink", args.datasink)
        marker = suspect_marks.marker(redis.Redis.from_url(
            credentials.with_password(args.datasink, ENV_DATASINK_PASSWORD),
            socket_timeout=60, socket_connect_timeout=10))
    builder = Builder(broker, config, on_build_ended=notifier.build_ended if notifier else None,
                      on_mismatch=marker)
    _on_signals(builder.stop)
    builder.run()
    return 0


def _agent_config(args: argparse.Namespace, key: bytes,
                  platform: PlatformConfig | None = None) -> AgentConfig:
    return AgentConfig(
        names=names_mod.from_args(args), platform=args.platform, consumer=args.consumer,
        suites_dir=args.suites_dir or default_suites_dir(), work_dir=args.work_dir,
        results_dir=args.results_dir,
        suite_filter=SuiteFilter(tests_regexp=args.tests_regexp,
                                 groups_regexp=args.groups_regexp,
                                 commands_regexp=args.commands_regexp,
                                 priority_min=args.priority_min,
                                 priority_max=args.priority_max, topology=args.topology,
                                 capabilities=frozenset(args.capability)),
        run=SessionConfig(
            tools=ToolPaths(redis_benchmark=args.redis_benchmark_bin, memtier=args.memtier_bin),
            results_dir=args.results_dir, test_time=args.test_time, window=window_options(args),
            cpus=[int(c) for c in args.cpus.split(",")] if args.cpus else None,
            launcher=args.launcher, strict_cpus=args.strict_cpus,
            client_host=platform.client_host if platform else None),
        block_ms=args.block_ms,
        idle_claim_ms=args.idle_claim_ms,
        heartbeat_ttl_s=args.heartbeat_ttl, artifact_key=key,
        max_deliveries=args.max_deliveries,
        until_decided=platform.until_decided if platform else None,
        calibration=platform.calibration if platform else None,
        selection=SelectionPolicy(platform.max_suites, platform.sentinels) if platform
        else SelectionPolicy())


def _say_client_host(config: ClientHostConfig) -> None:
    """A daemon keeps going when its client host does not answer yet (its tests fail,
    each with the reason, until it does); the operator sees why at once."""
    problem = probe_client_host(config)
    if problem:
        logging.getLogger(__name__).warning("--platform-config client_host: %s; its tests "
                                            "will fail until it answers (hint: %s)",
                                            problem, ssh_hint(config))


def cmd_agent(args: argparse.Namespace) -> int:
    """Run the lab agent until SIGTERM."""
    key = _secure_start(args, "agent")
    if key is None:
        return 2
    if args.test_time is not None and args.test_time <= 0:
        print(f"rbs agent: --test-time {args.test_time}: must be a positive number of seconds",
              file=sys.stderr)
        return 2
    try:
        platform = platform_config.load(args.platform_config) if args.platform_config else None
    except platform_config.PlatformConfigError as exc:
        print(f"rbs agent: --platform-config {exc}", file=sys.stderr)
        return 2
    _check_agent_args(args)
    if platform is not None and platform.client_host is not None:
        _say_client_host(platform.client_host)
    seconds = noise_seconds(args)
    url: str = args.datasink or EmbeddedDatasink().up().url or ""
    url = credentials.with_password(url, ENV_DATASINK_PASSWORD)
    datasink = redis.Redis.from_url(url, socket_timeout=60, socket_connect_timeout=10)
    shown = checks.display_url(args.datasink or url)
    checks.reachable("--datasink", shown, datasink)
    try:
        checks.has_timeseries("--datasink", shown, datasink)
    except UsageError as exc:
        # a daemon keeps going: results stay in its ledger until the datasink is fixed
        logging.getLogger(__name__).warning("%s; results will not be pushed", exc.line())
    pusher = DatasinkPusher(datasink)
    try:
        push = pusher if not args.watch_branch else WatchingPusher(pusher, BranchWatch(
            datasink, WatchConfig(branches=tuple(args.watch_branch))))
    except ValueError as exc:
        print(f"rbs agent: {exc}", file=sys.stderr)
        return 2
    broker, config = _broker(args), _agent_config(args, key, platform)
    # measured where the first server runs (the CPU allocator hands out server cores first)
    cpu = args.noise_cpu if args.noise_cpu is not None else \
        (config.session.cpus[0] if config.session.cpus else None)
    record_host(datasink, args.platform, NoiseOptions(seconds, cpu))
    try:
        notifier = notifier_from_args(args, broker, config.names, datasink)
    except GitHubConfigError as exc:
        print(f"rbs agent: {exc}", file=sys.stderr)
        return 2
    agent = Agent(broker, config, push,
                  on_event_done=notifier.platform_done if notifier else None,
                  datasink=datasink, on_selected=notifier.selected if notifier else None)

    def stop() -> None:
        pusher.stop.set()
        agent.stop()

    _on_signals(stop)
    agent.run()
    return 0
