"""``rbs lab replay --source GIT_DIR --prs FILE --out DIR``: real pull requests through the
lab as labelled GitHub deliveries (docs/lab.md). Parsing and printing only."""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import redis

from redis_benchmarks_spec.cli import checks, lab_watch
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import EXIT_FAILED, UsageError, sigterm_interrupts
from redis_benchmarks_spec.lab import deliveries, replay, services
from redis_benchmarks_spec.lab.state import LabState, LabStateError, load, state_path


def register(lab_sub: argparse._SubParsersAction) -> None:
    """Add ``rbs lab replay``."""
    from redis_benchmarks_spec.cli.lab import add_lab_options
    p = lab_sub.add_parser("replay", help="replay pull requests (base, head, name per line) "
                                          "as labelled GitHub deliveries; comments and "
                                          "summary.json in --out")
    p.add_argument("--dir", type=Path, default=Path(".cache") / "lab", dest="lab_dir",
                   help="the lab folder: a lab running there is used, else one is started "
                        "there and stopped at the end")
    mode = p.add_mutually_exclusive_group(required=True)  # a delivery source per mode
    mode.add_argument("--prs", type=Path, metavar="FILE",
                      help="one pull request a line: <base-sha> <head-sha> <name>")
    mode.add_argument("--range", metavar="A..B",
                      help="tracked-branch mode: one push per first-parent commit of A..B, "
                           "change points judged on arrival, confirmed, alerted "
                           "(docs/watch.md); alerts/<n>.md, webhook.jsonl, summary.json")
    p.add_argument("--out", type=Path, required=True, metavar="DIR",
                   help="comments/<name>.md (final), comments/<name>.N.md (each body sent, "
                        "in order), summary.json")
    p.add_argument("--timeout", type=float, default=4 * 3600,
                   help="seconds to wait for every event to end")
    add_lab_options(p)
    lab_watch.add_range_options(p)
    p.set_defaults(func=cmd_replay)


def _lab(args: argparse.Namespace) -> tuple[LabState, bool]:
    """The running lab of ``--dir``, else one started now (True: stop it at the end)."""
    if state_path(args.lab_dir.resolve()).exists():
        try:
            return load(args.lab_dir.resolve()), False
        except LabStateError as exc:
            raise UsageError(f"--dir {args.lab_dir}", str(exc)) from None
    if args.source is None:
        raise UsageError("--source", "required when no lab runs in --dir",
                         "give the git repository that stands for GitHub")
    from redis_benchmarks_spec.cli.lab import lab_options
    try:
        return services.up(lab_options(args)), True
    except services.LabError as exc:
        raise UsageError("rbs lab replay", f"the lab did not start: {exc}") from None


def cmd_replay(args: argparse.Namespace) -> int:
    """Send, follow, collect; exit 0 only when every event ended done. A SIGTERM (a CI
    job's timeout) is an interrupt: a lab this replay started is stopped, as on Ctrl-C,
    instead of its agents benchmarking on after the replay is gone."""
    root = args.lab_dir.resolve()
    ours = not state_path(root).exists()  # the lab, if any, that this replay starts
    try:
        with sigterm_interrupts():
            if args.range is not None:
                return lab_watch.cmd_replay_range(args)
            return _replay_prs(args)
    except KeyboardInterrupt:
        # between `services.up` and the replay's own try/finally the lab is started and
        # nobody stops it yet (ci12: a SIGTERM there left all of it running)
        if ours and state_path(root).exists():
            services.down(root)
        raise


def _replay_prs(args: argparse.Namespace) -> int:
    try:
        prs = deliveries.read_prs(args.prs)
    except deliveries.DeliveryError as exc:
        raise UsageError("--prs", str(exc)) from None
    checks.writable_dir("--out", args.out, create=True)
    state, started = _lab(args)
    console = make_console()

    def say(line: str) -> None:
        console.print(line, highlight=False, markup=False)
    try:
        client = redis.Redis.from_url(state.broker_url, socket_timeout=30)
        tracked = replay.send(state, client, deliveries.pr_deliveries(
            prs, services.TRIGGER_LABEL), say, args.timeout)
        progress = replay.follow(state, client, [r for t in tracked.values()
                                                 for r in t.requests], args.timeout, say)
        bad = replay.ended_done(progress, list(state.platforms))
        summary = replay.summarize(state, client, tracked, progress, args.out)
    except (replay.ReplayError, OSError, redis.RedisError) as exc:
        raise UsageError("rbs lab replay", str(exc).splitlines()[0] if str(exc) else
                         type(exc).__name__, f"logs in {state.root}/logs") from None
    finally:
        if started:
            services.down(Path(state.root))
    for pr in summary["prs"]:
        took = "no final comment" if pr["minutes"] is None else \
            f"label to final comment {pr['minutes']} min"
        say(f"{pr['name']}: {len(pr['tests'])} verdict row(s), {took}; "
            f"comment in {args.out / 'comments' / (pr['name'] + '.md')}")
    for line in bad:
        print(f"rbs lab replay: {line}", file=sys.stderr)
    return EXIT_FAILED if bad else 0
