"""``rbs admin``: inspect and steer the pipeline's streams; parsing and printing only
(:mod:`redis_benchmarks_spec.events.admin` computes)."""

from __future__ import annotations

import argparse
import time

from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.cli.broker_args import add_broker, broker_client
from redis_benchmarks_spec.cli.console import WRAPPABLE, make_console, print_table
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.events import admin
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.events.dead_letters import read_dead_letters
from redis_benchmarks_spec.events.messages import TEST_STATES
from redis_benchmarks_spec.events.status import heartbeats


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rbs admin``."""
    p = sub.add_parser("admin", help="inspect and steer the pipeline's streams")
    asub = p.add_subparsers(dest="admin_command", metavar="ACTION", required=True)
    for name, func, help_text in (
        ("streams", cmd_streams, "streams, groups, lag, pending per consumer"),
        ("heartbeats", cmd_heartbeats, "agents' last heartbeats"),
        ("inflight", cmd_inflight, "build events some platform is still running"),
        ("events", cmd_events, "recent build events: done, failed or dead-lettered, and why"),
        ("failed", cmd_failed, "failed builds and tests"),
        ("dead-letter", cmd_dead_letter, "entries no consumer could handle, with the reason"),
    ):
        sp = asub.add_parser(name, help=help_text)
        sp.add_argument("--limit", type=int, default=100, help="recent events to look at")
        add_broker(sp)
        sp.set_defaults(func=func)
    for name, func, help_text in (("cancel", cmd_cancel, "cancel a build event or request"),
                                  ("replay", cmd_replay, "queue a build event/request again")):
        sp = asub.add_parser(name, help=help_text)
        sp.add_argument("event_id", help="build event id or build request id")
        add_broker(sp)
        sp.set_defaults(func=func)


def cmd_streams(args: argparse.Namespace) -> int:
    """Print every stream with its groups and consumers."""
    table = Table(title="streams")
    for col in ("stream", "length", "group", "lag", "pending", "consumer", "c.pending", "idle"):
        table.add_column(col)
    for s in admin.streams(broker_client(args), names_mod.from_args(args)):
        table.add_row(s.name, str(s.length), *[""] * 6)
        for g in s.groups:
            table.add_row("", "", g.name, "?" if g.lag is None else str(g.lag), str(g.pending),
                          "", "", "")
            for c in g.consumers:
                table.add_row("", "", "", "", "", c.name, str(c.pending), _ms(c.idle_ms))
    print_table(make_console(), table)
    return 0


def cmd_heartbeats(args: argparse.Namespace) -> int:
    """Print the agents' heartbeats."""
    table = Table(title="heartbeats")
    for col in ("platform", "agent", "last beat", "alive", "doing"):
        table.add_column(col)
    now = time.time() * 1000
    for hb in heartbeats(broker_client(args), names_mod.from_args(args)):
        table.add_row(hb.platform, hb.agent, _ms(int(now - hb.last_ms)) + " ago",
                      "[green]yes[/]" if hb.alive else "[red]no[/]", hb.info)
    print_table(make_console(), table)
    return 0


def cmd_inflight(args: argparse.Namespace) -> int:
    """Print events in flight with their test counts."""
    table = Table(title="events in flight")
    for col in ("event", "platform", *TEST_STATES):
        table.add_column(col)
    for ev in admin.inflight(broker_client(args), names_mod.from_args(args), args.limit):
        for ps in ev.platforms():
            table.add_row(ev.event_id, ps.platform, *(str(ps.counts[k]) for k in TEST_STATES))
    print_table(make_console(), table)
    return 0


def cmd_events(args: argparse.Namespace) -> int:
    """Print recent events with their state on each platform and the reason."""
    table = Table(title="build events (newest first)")
    for col in ("event", "platform", "state", *TEST_STATES, "reason"):
        table.add_column(col)
    for ev in admin.recent_events(broker_client(args), names_mod.from_args(args), args.limit):
        for ps in ev.platforms():
            table.add_row(escape(ev.event_id), escape(ps.platform), ps.state,
                          *(str(ps.counts[k]) for k in TEST_STATES), escape(ps.reason))
    print_table(make_console(), table)
    return 0


def cmd_failed(args: argparse.Namespace) -> int:
    """Print build failures and failed tests."""
    client, names = broker_client(args), names_mod.from_args(args)
    console = make_console()
    builds = Table(title="build failures")
    for col in ("request", "sha", "variant", "reason"):
        builds.add_column(col)
    for f in admin.build_failures(client, names, args.limit):
        builds.add_row(f.request_id, f.sha[:12], f.build_variant, f.reason)
    tests = Table(title="failed and dead-lettered tests")
    for col in ("event", "platform", "agent", "test", "state", "reason"):
        tests.add_column(col)
    for s in admin.failed_tests(client, names, args.limit):
        tests.add_row(s.event_id, s.platform, s.agent, s.test_name, s.state, escape(s.reason))
    print_table(console, builds)
    print_table(console, tests)
    return 0


def cmd_dead_letter(args: argparse.Namespace) -> int:
    """Print the newest dead letters with their reasons."""
    table = Table(title="dead letters (newest first)")
    for col in ("when", "stream", "entry", "consumer", "reason", "fields"):
        table.add_column(col)
    for d in read_dead_letters(broker_client(args), names_mod.from_args(args), args.limit):
        when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(d.at_ms / 1000))
        fields = ", ".join(f"{k}={v}" for k, v in d.original.items())
        table.add_row(when, escape(d.stream), d.entry_id, escape(d.consumer), escape(d.reason),
                      escape(fields))
    print_table(make_console(), table, wrappable=WRAPPABLE | {"fields"})
    return 0


def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel one build event or request."""
    try:
        fresh = admin.cancel_event(broker_client(args), names_mod.from_args(args), args.event_id)
    except admin.AdminError as exc:
        raise UsageError(args.event_id, str(exc)) from None
    print(f"{args.event_id}: {'cancelled' if fresh else 'was already cancelled'}")
    return 0


def cmd_replay(args: argparse.Namespace) -> int:
    """Queue one build event or request again."""
    try:
        done = admin.replay(broker_client(args), names_mod.from_args(args), args.event_id)
    except admin.AdminError as exc:
        raise UsageError(args.event_id, str(exc)) from None
    print(f"{args.event_id}: re-queued on {done.stream} as {done.new_entry_id} "
          f"(was {done.old_entry_id})")
    return 0


def _ms(ms: int) -> str:
    return f"{ms / 1000:.1f}s" if ms < 120_000 else f"{ms / 60_000:.1f}m"
