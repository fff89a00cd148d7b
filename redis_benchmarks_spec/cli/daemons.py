"""``rbs builder`` and ``rbs agent``: the daemons of the pipeline."""

from __future__ import annotations

import argparse
import os
import signal
import socket
import tempfile
from pathlib import Path
from types import FrameType

import redis

from redis_benchmarks_spec.agent.agent import Agent, AgentConfig
from redis_benchmarks_spec.agent.push import DatasinkPusher
from redis_benchmarks_spec.build.builder import Builder, BuilderConfig
from redis_benchmarks_spec.build.variants import default_variants_dir, load_variants
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.spec.catalog import SuiteFilter, default_suites_dir

ENV_BROKER = "RBS_BROKER"
DEFAULT_BROKER = "redis://127.0.0.1:6379"


def _common(p: argparse.ArgumentParser) -> None:
    p.add_argument("--broker", default=os.environ.get(ENV_BROKER, DEFAULT_BROKER),
                   help=f"Redis URL of the broker (default: ${ENV_BROKER} or {DEFAULT_BROKER})")
    names_mod.add_arguments(p)
    p.add_argument("--consumer", default=f"{socket.gethostname()}-{os.getpid()}",
                   help="consumer name in the group (default: hostname-pid)")
    p.add_argument("--block-ms", type=int, default=5000, help="blocking read timeout")
    p.add_argument("--idle-claim-ms", type=int, default=300_000,
                   help="claim entries a dead consumer held longer than this")
    p.add_argument("--work-dir", type=Path,
                   default=Path(tempfile.gettempdir()) / "rbs-work")


def register(sub: argparse._SubParsersAction) -> None:
    b = sub.add_parser("builder", help="build daemon: build requests -> artifacts + build events")
    _common(b)
    b.add_argument("--build-variants-dir", type=Path, default=default_variants_dir())
    b.add_argument("--build-variants", default="",
                   help="comma-separated default variants (default: every variant file)")
    b.add_argument("--cache-dir", type=Path, default=None, help="local artifact cache")
    b.add_argument("--build-timeout", type=float, default=1800.0)
    b.set_defaults(func=cmd_builder)
    a = sub.add_parser("agent", help="lab-host daemon: build events -> suites -> datasink")
    _common(a)
    a.add_argument("--platform", required=True, help="this host's platform (consumer group)")
    a.add_argument("--suites-dir", type=Path, default=None)
    a.add_argument("--results-dir", type=Path, default=Path("results") / "agent")
    a.add_argument("--tests-regexp", default=".*")
    a.add_argument("--groups-regexp", default=".*")
    a.add_argument("--commands-regexp", default=".*")
    a.add_argument("--priority-max", type=int, default=None)
    a.add_argument("--test-time", type=int, default=None)
    a.add_argument("--cpus", default=None, help="comma-separated CPU ids to use")
    a.add_argument("--launcher", choices=["process", "docker"], default="process")
    a.add_argument("--datasink", default=None, metavar="URL",
                   help="RedisTimeSeries URL (default: the embedded datasink)")
    a.add_argument("--memtier-bin", default=None)
    a.add_argument("--redis-benchmark-bin", default=None)
    a.set_defaults(func=cmd_agent)


def _broker(args: argparse.Namespace) -> redis.Redis:
    # socket timeout well above the blocking read, so a BLOCK never looks like a dead link
    return redis.Redis.from_url(args.broker, socket_timeout=args.block_ms / 1000 + 30,
                                socket_connect_timeout=10, health_check_interval=30)


def _on_sigterm(stop) -> None:  # type: ignore[no-untyped-def]
    def handler(signum: int, frame: FrameType | None) -> None:
        stop()
    signal.signal(signal.SIGTERM, handler)
    signal.signal(signal.SIGINT, handler)


def cmd_builder(args: argparse.Namespace) -> int:
    import threading
    variants = load_variants(args.build_variants_dir)
    config = BuilderConfig(
        names=names_mod.from_args(args), consumer=args.consumer, variants=variants,
        default_variants=[v for v in args.build_variants.split(",") if v],
        work_dir=args.work_dir, block_ms=args.block_ms, idle_claim_ms=args.idle_claim_ms,
        build_timeout_s=args.build_timeout, cache_dir=args.cache_dir)
    builder = Builder(_broker(args), config)
    stop = threading.Event()
    _on_sigterm(lambda: (stop.set(), builder.consumer.stop()))
    builder.run(stop)
    return 0


def cmd_agent(args: argparse.Namespace) -> int:
    url = args.datasink or EmbeddedDatasink().up().url
    datasink = redis.Redis.from_url(url, socket_timeout=60, socket_connect_timeout=10)
    config = AgentConfig(
        names=names_mod.from_args(args), platform=args.platform, consumer=args.consumer,
        suites_dir=args.suites_dir or default_suites_dir(), work_dir=args.work_dir,
        results_dir=args.results_dir,
        suite_filter=SuiteFilter(tests_regexp=args.tests_regexp,
                                 groups_regexp=args.groups_regexp,
                                 commands_regexp=args.commands_regexp,
                                 priority_max=args.priority_max),
        tools=ToolPaths(redis_benchmark=args.redis_benchmark_bin, memtier=args.memtier_bin),
        test_time=args.test_time,
        cpus=[int(c) for c in args.cpus.split(",")] if args.cpus else None,
        launcher=args.launcher, block_ms=args.block_ms, idle_claim_ms=args.idle_claim_ms)
    pusher = DatasinkPusher(datasink)
    agent = Agent(_broker(args), config, pusher)
    _on_sigterm(lambda: (pusher.stop.set(), agent.stop()))
    agent.run()
    return 0
