"""``rbs trigger`` and ``rbs api``: parsing and printing only (``rbs admin``: :mod:`.admin`)."""

from __future__ import annotations

import argparse
import os
import sys
from pathlib import Path
from typing import Any

import redis
from rich.live import Live
from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli import datasink as datasink_cli
from redis_benchmarks_spec.cli.broker_args import ENV_BROKER_PASSWORD, add_broker, broker_client
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.cli.github_args import (
    add_github_args,
    notifier_from_args,
    reply_hook,
    webhook_hook,
)
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.common.paths import absolute_location
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.events.errors import MessageError
from redis_benchmarks_spec.events.follow import (
    Follower,
    PlatformProgress,
    RequestProgress,
    wait,
)
from redis_benchmarks_spec.events.messages import DEAD_LETTERED, SuiteFilters
from redis_benchmarks_spec.intake import gitsource
from redis_benchmarks_spec.intake.trigger import (
    DEFAULT_SOURCE_TTL_S,
    RedisSourceStore,
    RequestOptions,
    S3SourceStore,
    Selection,
    SourceStore,
    TriggerError,
    trigger,
)
from redis_benchmarks_spec.notify.github_config import GitHubConfigError
from redis_benchmarks_spec.suites.catalog import SuiteFilter, default_suites_dir
from redis_benchmarks_spec.suites.validate import validate_catalog

ENV_SECRET = "RBS_WEBHOOK_SECRET"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rbs trigger`` and ``rbs api``."""
    _register_trigger(sub)
    _register_api(sub)


def _csv(text: str) -> tuple[str, ...]:
    return tuple(p.strip() for p in text.split(",") if p.strip())


def _check_repo(location: str) -> None:
    """``--repo``: a remote URL, or a local directory that is a git repository."""
    if gitsource.is_remote(location):
        return
    path = Path(location).expanduser()
    checks.existing_dir("--repo", path)
    if not (path / ".git").exists() and not (path / "HEAD").is_file():
        raise UsageError(f"--repo {location}", "not a git repository",
                         "give the top directory of a clone, or a remote URL")


# --------------------------------------------------------------------------- trigger


def _register_trigger(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("trigger", help="queue build requests for commits of a git repository")
    p.add_argument("--repo", required=True, type=absolute_location, help="local repository path or git remote URL")
    what = p.add_mutually_exclusive_group()
    what.add_argument("--commit", help="one commit (sha or any commit-ish)")
    what.add_argument("--tag", help="a tag (sets the request's tag and version)")
    p.add_argument("--branch", help="a branch: its head, or its last N commits with --last; "
                                    "with --commit, the branch name recorded")
    p.add_argument("--last", type=int, default=1, help="with --branch: the last N commits")
    p.add_argument("--org", help="GitHub org (default: from the origin remote)")
    p.add_argument("--repo-name", help="GitHub repository name (default: from origin)")
    p.add_argument("--pr", type=int, help="pull request number")
    p.add_argument("--tests-regexp", default=".*")
    p.add_argument("--groups-regexp", default=".*")
    p.add_argument("--commands-regexp", default=".*")
    p.add_argument("--priority-min", type=int)
    p.add_argument("--priority-max", type=int)
    p.add_argument("--suites-dir", type=Path, default=None,
                   help="suites the agents run, checked before queueing (default: the suites "
                        "shipped with rbs): selected files the validator rejects are named, "
                        "and a selection of only those is refused")
    p.add_argument("--platforms", type=_csv, default=(), help="comma list (default: all)")
    p.add_argument("--build-variants", type=_csv, default=(),
                   help="comma list of build variant ids (default: the builders' defaults)")
    p.add_argument("--triggering-env", default="ci")
    p.add_argument("--source-ttl", type=int, default=DEFAULT_SOURCE_TTL_S,
                   help="seconds the source archive stays in Redis")
    p.add_argument("--s3-bucket", help="store source archives in this S3 bucket (boto3)")
    p.add_argument("--wait", action="store_true", help="follow the requests to their results")
    p.add_argument("--timeout", type=float, default=6 * 3600, help="--wait limit in seconds")
    add_broker(p)
    p.set_defaults(func=cmd_trigger)


def cmd_trigger(args: argparse.Namespace) -> int:
    """Queue the requests; with --wait follow them until done or timeout."""
    _check_repo(args.repo)
    checks.ref("--branch", args.branch)
    checks.ref("--tag", args.tag)
    for flag in ("tests_regexp", "groups_regexp", "commands_regexp"):
        checks.regexp("--" + flag.replace("_", "-"), getattr(args, flag))
    _check_suites(args)
    client = broker_client(args)
    names = names_mod.from_args(args)
    store: SourceStore = (S3SourceStore(args.s3_bucket) if args.s3_bucket
                          else RedisSourceStore(args.source_ttl))
    selection = Selection(commit=args.commit, branch=args.branch, tag=args.tag, last=args.last)
    options = RequestOptions(
        org=args.org, repo_name=args.repo_name, pr=args.pr, platforms=args.platforms,
        build_variants=args.build_variants, triggering_env=args.triggering_env,
        filters=SuiteFilters(args.tests_regexp, args.groups_regexp, args.commands_regexp,
                            args.priority_min, args.priority_max),
    )
    try:
        done = trigger(client, names, args.repo, selection, options, store)
    except (TriggerError, gitsource.GitError, MessageError) as exc:
        # MessageError: a value git gave (a branch name) that a request may not carry
        raise UsageError(f"--repo {args.repo}", str(exc).splitlines()[0] if str(exc)
                         else type(exc).__name__) from None
    console = make_console()
    for t in done:
        console.print(f"queued request [bold]{t.request.id}[/] for {t.request.org}/"
                      f"{t.request.repo} {t.request.sha[:12]} ({t.archive_bytes} bytes of "
                      f"source at {t.request.source.location}) entry {t.entry_id}",
                      highlight=False)
    if not args.wait:
        return 0
    follower = Follower(client, names, [(t.request, t.entry_id) for t in done])
    with Live(console=console, refresh_per_second=2) as live:
        ok = wait(follower, args.timeout, interval_s=2.0,
                  on_update=lambda progress: live.update(_progress_table(
                      progress, follower.expected_platforms)))
    for line in _end_lines(follower):  # how each build and platform ended badly
        console.print(line, highlight=False, markup=False)
    for line in _outcome_lines(follower):  # the numbers, and where the results are
        console.print(line, highlight=False, soft_wrap=True)
    if not ok:
        make_console(stderr=True).print(f"[red]timed out after {args.timeout}s[/]")
        return 2
    return 1 if _any_failure(follower) else 0


def _outcome_lines(follower: Follower) -> list[str]:
    """What ``--wait`` saw, in numbers, and where the results are (markup-escaped)."""
    lines = []
    for prog in follower.progress.values():
        req = prog.request  # build failures: _end_lines
        for (event_id, platform), pp in sorted(prog.platforms.items()):
            variant = prog.events[event_id].build_variant if event_id in prog.events else "?"
            lines.append(escape(
                f"{req.sha[:12]} {variant} on {platform}: {pp.counts['completed']} test(s) "
                f"completed, {pp.counts['failed']} failed"
                f"{'' if pp.done else ', not finished'}; result documents in each agent's "
                f"--results-dir under {event_id.replace(':', '_')}/"))
    shas = [p.request.sha for p in follower.progress.values() if p.events]  # queue order
    if shas:
        lines.append(escape(f"results: in the agents' datasink by commit, e.g. `rbs compare "
                            f"--datasink URL --baseline-hash SHA --comparison-hash {shas[-1]}`"
                            f" or `rbs history --datasink URL --test T`"))
    return lines


def _check_suites(args: argparse.Namespace) -> None:
    """The suites the selection picks, through the validator the agents use: each rejected
    file is named with its reason; a selection that picks only rejected files is refused
    (one that picks nothing here may match other suites on the agents, and is queued)."""
    directory = args.suites_dir or default_suites_dir()
    if args.suites_dir is not None:
        checks.existing_dir("--suites-dir", directory)
    catalog = validate_catalog(directory)
    flt = SuiteFilter(tests_regexp=args.tests_regexp, groups_regexp=args.groups_regexp,
                      commands_regexp=args.commands_regexp, priority_min=args.priority_min,
                      priority_max=args.priority_max)
    rejected = catalog.rejected_matching(flt)
    err = make_console(stderr=True)
    for r in rejected:
        err.print(f"[yellow]{escape(r.line())}[/]", highlight=False, soft_wrap=True)
    if rejected and not flt.select(catalog.suites):
        raise UsageError("selection", f"every suite it picks in {directory} is invalid "
                         f"({len(rejected)}, named above): agents would run nothing",
                         f"`rbs suites lint {directory}` shows every problem")


def _any_failure(follower: Follower) -> bool:
    return any(p.failures or p.dead_letter is not None or
               any(pp.counts["failed"] or pp.counts[DEAD_LETTERED] or
                   pp.state in ("failed", DEAD_LETTERED) for pp in p.platforms.values())
               for p in follower.progress.values())


def _end_lines(follower: Follower) -> list[str]:
    """One plain line per build variant and platform that ended badly, per dead letter."""
    lines = []
    for prog in follower.progress.values():
        rid = prog.request.id
        if prog.dead_letter is not None:
            lines.append(f"request {rid}: dead-lettered by the builder: {prog.dead_letter}")
        for failure in prog.failures:
            lines.append(f"request {rid} {failure.build_variant}: build failed: "
                         f"{failure.reason}")
        for (event_id, platform), pp in sorted(prog.platforms.items()):
            if pp.state in ("failed", DEAD_LETTERED):
                lines.append(f"event {event_id} on {platform}: {pp.state}: {pp.reason}")
    return lines


def _platform_state(pp: PlatformProgress | None, cancelled: bool) -> str:
    if cancelled:
        return "cancelled"
    if pp is None:
        return "waiting for an agent"
    if not pp.done:
        return "running"
    if pp.state == "completed":
        return "[green]done[/]"
    return f"[red]{pp.state}: {escape(pp.reason)}[/]"


def _progress_table(progress: list[RequestProgress], platforms: list[str]) -> Table:
    table = Table(title=f"requests (platforms: {', '.join(platforms) or 'none yet'})")
    for col in ("request", "sha", "variant", "platform", "tests", "done", "failed", "state"):
        table.add_column(col)
    for prog in progress:
        req = prog.request
        for failure in prog.failures:
            table.add_row(req.id[:8], req.sha[:10], failure.build_variant, "-", "-", "-", "-",
                          f"[red]build failed: {failure.reason}[/]")
        if prog.dead_letter is not None:
            table.add_row(req.id[:8], req.sha[:10], "-", "-", "-", "-", "-",
                          f"[red]dead-lettered: {escape(prog.dead_letter)}[/]")
        elif not prog.events and not prog.failures:
            table.add_row(req.id[:8], req.sha[:10], "-", "-", "-", "-", "-",
                          "cancelled" if prog.cancelled else "waiting for a builder")
        for event_id, event in prog.events.items():
            for platform in platforms:
                pp = prog.platforms.get((event_id, platform))
                state = _platform_state(pp, prog.cancelled)
                table.add_row(req.id[:8], req.sha[:10], event.build_variant, platform,
                              str(pp.total if pp else 0), str(pp.finished if pp else 0),
                              str(pp.counts["failed"] + pp.counts[DEAD_LETTERED] if pp
                                  else 0), state)
    return table


# --------------------------------------------------------------------------- api


def _register_api(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("api", help="serve the GitHub webhook receiver (waitress)")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--port", type=int, default=8080)
    p.add_argument("--threads", type=int, default=4)
    p.add_argument("--secret-file", type=Path,
                   help=f"file holding the webhook secret (default: ${ENV_SECRET})")
    p.add_argument("--trigger-label", default="action:run-benchmark")
    p.add_argument("--branches", type=_csv, default=("unstable",),
                   help="comma list of branches whose pushes are benchmarked")
    p.add_argument("--repos", type=_csv, default=(), help="comma list of org/repo to accept")
    p.add_argument("--git-remote", type=absolute_location, help="mirror the builders fetch from (default: clone_url)")
    p.add_argument("--platforms", type=_csv, default=())
    p.add_argument("--build-variants", type=_csv, default=())
    p.add_argument("--max-body", type=int, default=5 * 1024 * 1024, help="bytes")
    add_broker(p)
    add_github_args(p)
    datasink_cli.add_remote_args(p)  # where the alerts are: their triage is kept there
    p.set_defaults(func=cmd_api)


def cmd_api(args: argparse.Namespace) -> int:
    """Run the webhook receiver until interrupted."""
    refusal = credentials.argv_refusal("api", sys.orig_argv[1:])
    if refusal is not None:  # the console script refuses it first (cli/entry.py)
        make_console(stderr=True).print(refusal, highlight=False, markup=False)
        return 2
    from redis_benchmarks_spec.api.github import TriggerPolicy
    from redis_benchmarks_spec.api.webhook import WebhookApp, WebhookConfig, serve

    secret = (args.secret_file.read_bytes().strip() if args.secret_file
              else os.environ.get(ENV_SECRET, "").encode())
    if not secret:
        make_console(stderr=True).print(f"[red]no webhook secret: set ${ENV_SECRET} or "
                                   "--secret-file[/]")
        return 2
    policy = TriggerPolicy(trigger_label=args.trigger_label, branches=args.branches,
                           repos=args.repos, git_remote=args.git_remote,
                           platforms=args.platforms, build_variants=args.build_variants)
    config = WebhookConfig(secret=secret, policy=policy, names=names_mod.from_args(args),
                           max_body_bytes=args.max_body)
    client = redis.Redis.from_url(credentials.with_password(args.broker, ENV_BROKER_PASSWORD),
                                  socket_timeout=5, socket_connect_timeout=2)
    try:
        notifier = notifier_from_args(args, client, config.names)
    except GitHubConfigError as exc:
        make_console(stderr=True).print(f"[red]rbs api: {exc}[/]", highlight=False)
        return 2
    hook = webhook_hook(notifier) if notifier else None
    reply = reply_hook(notifier) if notifier else None
    serve(WebhookApp(config, client, on_enqueued=hook, on_reply=reply,
                     on_triage=_triage_hook(args, policy.branches)),
          args.host, args.port, args.threads)


def _triage_hook(args: argparse.Namespace, branches: tuple[str, ...]) -> Any:
    """``--datasink``: labels and ``/rbs triage`` on alert issues are kept with the alerts."""
    if not args.datasink:
        return None
    from redis_benchmarks_spec.cli.datasink import check_reachable, remote_config
    from redis_benchmarks_spec.datasink.store import connect
    from redis_benchmarks_spec.notify.triage import record
    config = remote_config(args)
    assert config is not None
    check_reachable(config)
    sink = connect(config)
    return lambda ask: record(sink, branches, ask)
    return 0
