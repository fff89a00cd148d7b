"""``rbs lab replay --range A..B``: the tracked-branch mode of the lab replay (docs/watch.md).
Composes the lab's push source and follower (``lab.watch_replay``) with the confirmer and
alert senders of ``notify``; parsing and printing only."""

from __future__ import annotations

import argparse
import os
import re
import sys
from collections.abc import Callable
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

import redis

from redis_benchmarks_spec.agent.watch import ENV_CHANGE_AT
from redis_benchmarks_spec.bisection.watch_range import RangeBisector, RangeSetup
from redis_benchmarks_spec.cli import checks, lab_table
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import EXIT_FAILED, UsageError
from redis_benchmarks_spec.datasink import watch_store
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.intake.trigger import RequestOptions
from redis_benchmarks_spec.lab import deliveries, replay, services, watch_replay
from redis_benchmarks_spec.lab.state import LabState, LabStateError, load, state_path

WHERE = watch_store.Branch(deliveries.ORG, deliveries.REPO, deliveries.BRANCH)


if TYPE_CHECKING:  # the confirmer needs PyGithub (the github extra): imported when it runs
    from redis_benchmarks_spec.notify.watch_confirm import ConfirmContext


def add_range_options(p: argparse.ArgumentParser) -> None:
    p.add_argument("--fingerprint-change-at", metavar="SHA", default=None,
                   help="with --range: the first platform's agent reports a changed host "
                        "fingerprint from this commit on (a lab the replay starts)")
    p.add_argument("--skip", action="append", default=[], metavar="SHA",
                   help="with --range: a commit not pushed on its own (repeatable); the next "
                        "push brings it, as a push of several commits does, and a change "
                        "found across it is bisected (docs/watch.md)")
    p.add_argument("--webhook-url", metavar="URL", default=None,
                   help="with --range: where alerts are POSTed as Slack-compatible JSON "
                        "(default: a local receiver writing --out/webhook.jsonl)")


def _items(args: argparse.Namespace) -> list[deliveries.Delivery]:
    if args.source is None:
        raise UsageError("--source", "required with --range", "give the git repository "
                         "that holds the range")
    checks.existing_dir("--source", args.source)
    try:
        items = deliveries.range_deliveries(args.source, args.range, tuple(args.skip))
    except deliveries.DeliveryError as exc:
        if str(exc).startswith("--skip"):
            raise UsageError("", str(exc)) from None
        raise UsageError(f"--range {args.range}", str(exc)) from None
    change = args.fingerprint_change_at
    if change is not None and (not re.fullmatch(r"[0-9a-f]{7,40}", change) or not any(
            str(i.payload["after"]).startswith(change) for i in items)):
        raise UsageError(f"--fingerprint-change-at {change}",
                         "not a commit of the range (7 to 40 hex digits)")
    if args.webhook_url is not None and not re.match(r"^https?://[^\s]+$", args.webhook_url):
        raise UsageError(f"--webhook-url {args.webhook_url}", "expected an http(s) URL")
    return items


def _lab(args: argparse.Namespace, items: list[deliveries.Delivery]) -> tuple[LabState, bool]:
    """The running lab of ``--dir`` or one started now with the watch's settings."""
    change = args.fingerprint_change_at
    if state_path(args.lab_dir.resolve()).exists():
        if change is not None:
            raise UsageError(f"--fingerprint-change-at {change}",
                             "needs a lab the replay starts", "rbs lab down, or another --dir")
        try:
            return load(args.lab_dir.resolve()), False
        except LabStateError as exc:
            raise UsageError(f"--dir {args.lab_dir}", str(exc)) from None
    from redis_benchmarks_spec.cli.lab import lab_options
    # this replay confirms in its own process (its alerts go to its own receiver): the lab
    # it starts runs no confirmer service beside it
    options = replace(lab_options(args), confirmer=False)
    if change is not None:
        full = next(str(i.payload["after"]) for i in items
                    if str(i.payload["after"]).startswith(change))
        options = replace(options, platform_env={options.platforms[0]: {ENV_CHANGE_AT: full}})
    try:
        return services.up(options), True
    except services.LabError as exc:
        raise UsageError("rbs lab replay", f"the lab did not start: {exc}") from None


def _bisector(state: LabState, args: argparse.Namespace,
              say: Callable[[str], None]) -> RangeBisector:
    """Bisects a range through the lab's builder and agents (commits from ``--source``)."""
    broker = redis.Redis.from_url(state.broker_url, socket_timeout=30)
    request = RequestOptions(org=deliveries.ORG, repo_name=deliveries.REPO,
                             triggering_env="bisect")
    return RangeBisector(RangeSetup(broker, StreamNames(state.prefix), args.source, request,
                                    probe_timeout_s=args.timeout), say)


def _context(state: LabState, args: argparse.Namespace, webhook_url: str,
             say: Callable[[str], None]) -> ConfirmContext:
    from redis_benchmarks_spec.notify.github_comments import GitHubConfig
    from redis_benchmarks_spec.notify.watch_alert import AlertTargets
    from redis_benchmarks_spec.notify.watch_confirm import BrokerReruns, ConfirmContext
    token = (state.folder / "secrets" / "github-token").read_text().strip()
    broker = redis.Redis.from_url(state.broker_url, socket_timeout=30)
    datasink = redis.Redis.from_url(state.datasink_url, socket_timeout=60)
    return ConfirmContext(datasink, WHERE, AlertTargets(GitHubConfig(state.github_url, token),
                                                        webhook_url),
                          BrokerReruns(broker, StreamNames(state.prefix)),
                          watch_replay.subject_of(args.source), watch_replay.parent_of(args.source),
                          _bisector(state, args, say), owner=f"replay-{os.getpid()}")


def _settle(ctx: ConfirmContext, alerts: list[dict[str, Any]],
            say: Callable[[str], None]) -> Callable[[], bool]:
    def settle() -> bool:
        from redis_benchmarks_spec.notify.watch_confirm import step
        for decided in step(ctx):
            c = decided.candidate
            say(f"change at {c.after[:10]}: {c.state} {c.reason}".rstrip())
            if decided.alert is not None:
                alerts.append(decided.alert.summary())
            for problem in decided.problems:
                print(f"rbs lab replay: alert of {c.after[:10]}: {problem}", file=sys.stderr)
        return any(watch_store.candidates(ctx.datasink, WHERE, s)
                   for s in ("candidate", "confirming", "bisecting"))
    return settle


def cmd_replay_range(args: argparse.Namespace) -> int:
    """Push the range, follow every event and confirmation, write the outputs."""
    items = _items(args)
    checks.writable_dir("--out", args.out, create=True)
    state, started = _lab(args, items)
    console = make_console()

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)
    receiver = None if args.webhook_url else watch_replay.WebhookLog(args.out / "webhook.jsonl")
    try:
        ctx = _context(state, args, args.webhook_url or (receiver.url if receiver else ""), say)
        alerts: list[dict[str, Any]] = []
        client = redis.Redis.from_url(state.broker_url, socket_timeout=30)
        runs = watch_replay.send_range(state, client, items, _settle(ctx, alerts, say), say,
                                       args.timeout)
        # a confirmer service of the lab may have told some (under its lease): from the store
        told, seen = watch_store.alert_summaries(ctx.datasink, WHERE), {a["sha"] for a in alerts}
        alerts += [told[r.sha] for r in runs if r.sha in told and r.sha not in seen]
        notes = [{"sha": x["sha"], "kind": x["kind"], "text": x["text"]}
                 for x in watch_store.log_lines(ctx.datasink, WHERE) if x["kind"] != "alert"]
        watch_replay.write_outputs(state, runs, alerts, notes, args.out)
        say(lab_table.write_page(ctx.datasink, deliveries.BRANCH, args.out / "lab-table.html"))
        bad = replay.ended_done([p for r in runs for p in r.progress], list(state.platforms))
    except (replay.ReplayError, OSError, redis.RedisError) as exc:
        raise UsageError("rbs lab replay", str(exc).splitlines()[0] if str(exc) else
                         type(exc).__name__, f"logs in {state.root}/logs") from None
    finally:
        if receiver is not None:
            receiver.close()
        if started:
            services.down(Path(state.root))
    say(f"{len(runs)} commits, {len(alerts)} alert(s), {len(notes)} note(s); "
        f"{args.out / 'summary.json'}")
    for line in bad:
        print(f"rbs lab replay: {line}", file=sys.stderr)
    return EXIT_FAILED if bad else 0
