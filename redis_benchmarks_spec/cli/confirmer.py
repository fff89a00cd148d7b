"""``rbs confirmer``: the standing confirmer of tracked-branch changes (docs/watch.md).
Parsing and wiring only: :mod:`notify.watch_service` runs it, :mod:`notify.watch_confirm`
confirms, :mod:`bisection.watch_range` bisects."""

from __future__ import annotations

import argparse
import logging
import os
import re
import socket
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import redis

from redis_benchmarks_spec.bisection.watch_range import RangeBisector, RangeSetup
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.broker_args import ENV_BROKER_PASSWORD, add_broker
from redis_benchmarks_spec.cli.daemons import ENV_DATASINK, ENV_DATASINK_PASSWORD, _on_signals
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.cli.github_args import add_github_args
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.datasink.watch_store import Branch
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.intake.trigger import RequestOptions
from redis_benchmarks_spec.lab.watch_replay import parent_of, subject_of
from redis_benchmarks_spec.notify import github_config as gh

if TYPE_CHECKING:  # the confirmer needs PyGithub (the github extra): imported when it runs
    from redis_benchmarks_spec.notify.watch_confirm import ConfirmContext

_REPO = re.compile(r"^[A-Za-z0-9._-]{1,100}/[A-Za-z0-9._-]{1,100}$")


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("confirmer", help="service: confirm, bisect and alert the changes "
                                         "agents found on tracked branches (docs/watch.md)")
    add_broker(p)
    p.add_argument("--datasink", default=os.environ.get(ENV_DATASINK), metavar="URL",
                   help=f"RedisTimeSeries URL the agents push to (default: ${ENV_DATASINK})")
    p.add_argument("--repo", default="redis/redis", metavar="ORG/NAME",
                   help="the tracked repository (default redis/redis)")
    p.add_argument("--branch", action="append", default=[], metavar="BRANCH",
                   help="a tracked branch the agents watch (repeatable; default unstable)")
    p.add_argument("--source", type=Path, default=None, metavar="GIT_DIR",
                   help="a clone of the repository: commit subjects (the PR of an alert), "
                        "parents (placing), and the commits a skipped range is bisected over; "
                        "without it an alert names the range's last commit and no PR")
    p.add_argument("--webhook-url", default=None, metavar="URL",
                   help="POST each alert here as Slack-compatible JSON")
    p.add_argument("--interval", type=float, default=5.0, help="seconds between steps")
    p.add_argument("--bisect-builds", type=int, default=12,
                   help="most commits a range bisection builds (default 12)")
    p.add_argument("--probe-timeout", type=float, default=6 * 3600.0,
                   help="seconds a bisection probe may take (default 6 h)")
    p.add_argument("--consumer", default=f"{socket.gethostname()}-{os.getpid()}",
                   help="this confirmer's name in dead letters and leases (give a stable "
                        "name under a service manager so a restart resumes its own work)")
    add_github_args(p)  # alerts as GitHub issues
    p.set_defaults(func=cmd_confirmer)


def _checked(args: argparse.Namespace) -> tuple[list[Branch], str | None]:
    """Every input checked; the branches, and the datasink URL (with its password)."""
    if not _REPO.match(args.repo):
        raise UsageError(f"--repo {args.repo}", "expected ORG/NAME")
    org, name = args.repo.split("/")
    try:
        branches = [Branch(org, name, b) for b in (args.branch or ["unstable"])]
    except ValueError as exc:
        raise UsageError("--branch", str(exc)) from None
    if args.webhook_url is not None and not re.match(r"^https?://\S+$", args.webhook_url):
        raise UsageError(f"--webhook-url {args.webhook_url}", "expected an http(s) URL")
    if args.interval <= 0 or args.bisect_builds < 1 or args.probe_timeout <= 0:
        raise UsageError("--interval/--bisect-builds/--probe-timeout", "must be positive")
    if args.source is not None:
        checks.existing_dir("--source", args.source)
    if not args.datasink:
        raise UsageError("--datasink", f"required (or ${ENV_DATASINK})")
    checks.redis_url("--datasink", args.datasink)
    checks.redis_url("--broker", args.broker)
    return branches, credentials.with_password(args.datasink, ENV_DATASINK_PASSWORD)


def _contexts(args: argparse.Namespace, branches: list[Branch], broker: redis.Redis,
              datasink: redis.Redis) -> list[ConfirmContext]:
    from redis_benchmarks_spec.notify.watch_alert import AlertTargets
    from redis_benchmarks_spec.notify.watch_confirm import BrokerReruns, ConfirmContext
    from redis_benchmarks_spec.notify.watch_service import DeadLetters
    names = names_mod.from_args(args)
    try:
        github = gh.load_config(args.github_api_url, args.github_token_file)
    except gh.GitHubConfigError as exc:
        raise UsageError("--github-token-file", str(exc)) from None
    targets = AlertTargets(github, args.webhook_url)
    out = []
    for where in branches:
        bisector = None
        if args.source is not None:
            setup = RangeSetup(broker, names, args.source, RequestOptions(
                org=where.org, repo_name=where.repo, triggering_env="bisect"))
            setup.budget.max_builds, setup.probe_timeout_s = args.bisect_builds, args.probe_timeout
            bisector = RangeBisector(setup, logging.getLogger("rbs.confirmer").info)
        out.append(ConfirmContext(
            datasink, where, targets, BrokerReruns(broker, names),
            subject_of(args.source) if args.source else (lambda _s: ""),
            parent_of(args.source) if args.source else (lambda _s: None), bisector,
            DeadLetters(broker, names, args.consumer, datasink, where), args.consumer))
    return out


def cmd_confirmer(args: argparse.Namespace) -> int:
    """Run the confirmer until SIGTERM."""
    refusal = credentials.argv_refusal("confirmer", sys.orig_argv[1:])
    if refusal is not None:
        print(refusal, file=sys.stderr)
        return 2
    branches, sink_url = _checked(args)
    broker = checks.broker("--broker", credentials.with_password(args.broker,
                                                                 ENV_BROKER_PASSWORD))
    datasink = redis.Redis.from_url(sink_url or "", socket_timeout=60,
                                    socket_connect_timeout=10)
    shown = checks.display_url(args.datasink)
    checks.reachable("--datasink", shown, datasink)
    checks.has_timeseries("--datasink", shown, datasink)
    from redis_benchmarks_spec.notify.watch_service import Confirmer, ServiceConfig
    service = Confirmer(_contexts(args, branches, broker, datasink),
                        ServiceConfig(args.consumer, args.interval))
    _on_signals(service.stop)
    logging.getLogger(__name__).info("confirmer %s: watching %s", args.consumer,
                                     ", ".join(f"{b.org}/{b.repo} {b.branch}" for b in branches))
    service.run()
    return 0
