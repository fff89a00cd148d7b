"""``rbs datasink up|down|status|push``: the embedded datasink and pushing results later."""

from __future__ import annotations

import argparse
import time
from pathlib import Path

import redis
from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.common.paths import absolute_file
from redis_benchmarks_spec.datasink import reader, retention, run_reader
from redis_benchmarks_spec.datasink.embedded import (
    DEFAULT_PORT,
    DatasinkError,
    DatasinkStatus,
    EmbeddedDatasink,
    NotOwnerError,
)
from redis_benchmarks_spec.datasink.ownership import CHECKOUT
from redis_benchmarks_spec.datasink.session_push import down_command, started_note
from redis_benchmarks_spec.datasink.store import (
    DatasinkConfig,
    connect,
    push_results_dir,
)
from redis_benchmarks_spec.datasink.writer import PushOptions

PASSWORD_ENV = "RBS_DATASINK_PASSWORD"


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("datasink", help="run the embedded RedisTimeSeries datasink; push results",
                       description="Start, stop and inspect the embedded datasink "
                                   "(redis-stack-server), or push result files to a datasink.")
    dsub = p.add_subparsers(dest="datasink_command", metavar="ACTION", required=True)
    up = dsub.add_parser("up", help="start the embedded datasink (no-op when it runs)")
    add_embedded_args(up)
    up.add_argument("--port", type=int, default=None,
                    help=f"port (default: the one used last time, else {DEFAULT_PORT}, else a "
                         "free one, kept for next time)")
    up.set_defaults(func=cmd_up)
    down = dsub.add_parser("down", help="stop the embedded datasink this checkout started "
                                        "(never another checkout's)")
    add_embedded_args(down)
    down.set_defaults(func=cmd_down)
    status = dsub.add_parser("status", help="is it running; series, tests, last push")
    add_embedded_args(status)
    add_remote_args(status)
    status.set_defaults(func=cmd_status)
    push = dsub.add_parser("push", help="push result files not yet pushed (idempotent)")
    push.add_argument("results_dir", type=Path, help="directory searched for result documents")
    push.add_argument("--force", action="store_true",
                      help="push files already marked as pushed to this datasink too")
    push.add_argument("--timestamp", choices=("start", "commit"), default="start",
                      help="stamp points with the run start (default) or the commit time")
    add_embedded_args(push)
    add_remote_args(push)
    push.set_defaults(func=cmd_push)
    gc = dsub.add_parser("gc", help="expire by.hash series and fold run documents older "
                                    "than a window (branch and version series are kept)")
    gc.add_argument("--window-days", type=float, default=retention.DEFAULT_WINDOW_DAYS,
                    help=f"keep a commit's by.hash series this long after its newest "
                         f"point (default {retention.DEFAULT_WINDOW_DAYS})")
    gc.add_argument("--document-days", type=float, default=retention.DEFAULT_DOCUMENT_DAYS,
                    help=f"keep run documents whole this long, then fold them (default "
                         f"{retention.DEFAULT_DOCUMENT_DAYS})")
    gc.add_argument("--dry-run", action="store_true",
                    help="say what would go and delete nothing (it may still index commits "
                         "pushed before the gc index existed, which later gc runs need)")
    add_embedded_args(gc)
    add_remote_args(gc)
    gc.set_defaults(func=cmd_gc)


def add_embedded_args(p: argparse.ArgumentParser) -> None:
    p.add_argument("--datasink-data-dir", dest="data_dir", type=Path, default=None,
                   metavar="DIR",
                   help="data directory of the embedded datasink (default: this "
                        "checkout's .cache/datasink; for an installed package, the user "
                        "data dir's redis-benchmarks-spec/datasink)")
    # the old spelling keeps working, unlisted: one flag name across commands
    p.add_argument("--data-dir", dest="data_dir", type=Path, help=argparse.SUPPRESS)


def add_remote_args(p: argparse.ArgumentParser) -> None:
    g = p.add_argument_group("remote datasink (instead of the embedded one)")
    g.add_argument("--datasink", default=None, metavar="URL",
                   help="redis:// or rediss:// URL of a RedisTimeSeries datasink")
    g.add_argument("--username", default=None)
    g.add_argument("--tls-ca-cert", default=None, type=absolute_file,
                   help="CA bundle to verify the server")
    g.add_argument("--tls-cert", default=None, type=absolute_file, help="client certificate (mutual TLS)")
    g.add_argument("--tls-key", default=None, type=absolute_file, help="client private key (mutual TLS)")


def remote_config(args: argparse.Namespace) -> DatasinkConfig | None:
    """The remote datasink the arguments name (URL checked), or None for the embedded one."""
    if not args.datasink:
        return None
    checks.redis_url("--datasink", args.datasink)
    for flag, attr in (("--tls-ca-cert", "tls_ca_cert"), ("--tls-cert", "tls_cert"),
                       ("--tls-key", "tls_key")):
        value = getattr(args, attr, None)
        if value and not Path(value).is_file():
            raise UsageError(f"{flag} {value}", "no such file")
    return DatasinkConfig(
        url=args.datasink, username=args.username,
        # never a flag: argv is readable by every local user (common/credentials.py)
        password=_password(),
        ssl_ca_certs=args.tls_ca_cert, ssl_certfile=args.tls_cert, ssl_keyfile=args.tls_key)


def _password() -> str | None:
    try:
        return credentials.password_from_env(PASSWORD_ENV)
    except credentials.CredentialError as exc:
        raise UsageError(f"${PASSWORD_ENV}_FILE", str(exc)) from None


def datasink_client(args: argparse.Namespace) -> redis.Redis:
    """A client of ``--datasink``, or of the running embedded datasink (for the commands
    that read results: compare, history, changepoints)."""
    config = remote_config(args)
    if config is None:
        state = EmbeddedDatasink(args.data_dir).status()
        if not state.running:
            raise UsageError("--datasink", "the embedded datasink is not running",
                             "start it with `rbs datasink up` or give --datasink URL")
        config = DatasinkConfig(url=state.url or "")
    check_reachable(config)
    return connect(config)


def start_embedded(sink: EmbeddedDatasink) -> DatasinkStatus:
    """``sink.up()``, its failure as a one-line :class:`UsageError`."""
    try:
        return sink.up()
    except DatasinkError as exc:
        first = str(exc).splitlines()[0]
        raise UsageError(f"embedded datasink in {sink.data_dir}", first,
                         f"see {sink.logfile}") from None


def check_reachable(config: DatasinkConfig, flag: str = "--datasink") -> None:
    """The datasink answers and has the TimeSeries module; else a :class:`UsageError`."""
    with connect(config) as client:
        checks.reachable(flag, config.display_url, client)
        checks.has_timeseries(flag, config.display_url, client)


def cmd_up(args: argparse.Namespace) -> int:
    console = make_console()
    sink = EmbeddedDatasink(args.data_dir, port=args.port)
    state = start_embedded(sink)
    if state.started:
        console.print(started_note(state).rstrip("; "), highlight=False, soft_wrap=True,
                      markup=False)
    else:
        console.print(f"datasink already running at {state.url} (pid {state.pid}, data in "
                      f"{state.data_dir})", highlight=False, soft_wrap=True, markup=False)
        console.print(owner_line(state), highlight=False, soft_wrap=True, markup=False)
    return 0


def owner_line(state: DatasinkStatus) -> str:
    """``owner: <whose>; <how it is stopped>``."""
    return f"owner: {state.whose}; {stop_hint(state)}"


def stop_hint(state: DatasinkStatus) -> str:
    """How this datasink is stopped: by this checkout's ``rbs datasink down``, or from its
    owner's (``rbs datasink down`` here leaves it running)."""
    if state.mine or state.owner is None:
        return f"stop it with `{down_command(state)}`"
    where = f"cd {state.owner.path} && .venv/bin/" if state.owner.kind == CHECKOUT else ""
    return (f"`rbs datasink down` here leaves it running, its owner stops it: "
            f"`{where}{down_command(state)}`")


def cmd_down(args: argparse.Namespace) -> int:
    """Stop the datasink only when this checkout (or user data folder) started it."""
    console = make_console()
    sink = EmbeddedDatasink(args.data_dir)
    try:
        stopped = sink.down()
    except NotOwnerError as exc:
        console.print(f"datasink not stopped: {exc}", highlight=False, soft_wrap=True,
                      markup=False)
        console.print(owner_line(sink.status()), highlight=False, soft_wrap=True,
                      markup=False)
        return 1
    console.print(f"datasink {'stopped' if stopped else 'was not running'} ({sink.data_dir})",
                  highlight=False, soft_wrap=True)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    console = make_console()
    config = remote_config(args)
    if config is None:
        state = EmbeddedDatasink(args.data_dir).status()
        if not state.running:
            console.print(f"embedded datasink: not running ({state.detail}; data in "
                          f"{state.data_dir}); start it with `rbs datasink up`", highlight=False, soft_wrap=True)
            return 1
        console.print(f"embedded datasink: running at {state.url} (pid {state.pid}, data in "
                      f"{state.data_dir})", highlight=False, soft_wrap=True, markup=False)
        console.print(owner_line(state), highlight=False, soft_wrap=True, markup=False)
        config = DatasinkConfig(url=state.url or "")
    check_reachable(config)
    with connect(config) as client:
        print_contents(console, client)
    return 0


def print_contents(console: Console, client: redis.Redis) -> None:
    """Series count, tests and runs known, per scope, and the last push time."""
    all_scopes = reader.scopes(client)
    swept = _swept_of(client)
    names = {t for scope in all_scopes for t in reader.list_tests(client, scope)}
    tests = {swept.get(t, t) for t in names}
    values = [t for t in names if t in swept]
    also = f" ({len(values)} swept value(s) of {len({swept[t] for t in values})})" \
        if values else ""
    console.print(f"series: {reader.count_series(client)}, tests known: {len(tests)}{also}, "
                  f"runs stored: {run_reader.count_runs(client)}", highlight=False)
    for scope in all_scopes:
        scope_tests = {swept.get(t, t) for t in reader.list_tests(client, scope)}
        console.print(f"{scope.path}: {len(scope_tests)} test(s), branches "
                      f"{reader.list_branches(client, scope) or '-'}, versions "
                      f"{reader.list_versions(client, scope) or '-'}, platforms "
                      f"{reader.list_platforms(client, scope)}", highlight=False, soft_wrap=True)
    last = reader.last_push_ms(client)
    when = time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(last / 1000)) if last else "never"
    console.print(f"last push: {when}")


def _swept_of(client: redis.Redis) -> dict[str, str]:
    """Each swept value's series name (``test.clients-8``) -> the test it sweeps: a test
    swept over five values is one test, not six."""
    from redis_benchmarks_spec.datasink import keys
    # sweep labels are on branch and version series (a filter needs one label=value)
    labels = reader.series_labels(client, [f"{keys.LABEL_BY}=(branch,version)",
                                           f"{keys.LABEL_SWEEP_OF}!="],
                                  [keys.LABEL_TEST_NAME, keys.LABEL_SWEEP_OF])
    return {x[keys.LABEL_TEST_NAME]: x[keys.LABEL_SWEEP_OF] for x in labels
            if x.get(keys.LABEL_TEST_NAME) and x.get(keys.LABEL_SWEEP_OF)}


def cmd_push(args: argparse.Namespace) -> int:
    console = make_console()
    checks.existing_dir("results directory", args.results_dir)
    config = remote_config(args)
    if config is not None:
        check_reachable(config)
    if config is None:
        state = start_embedded(EmbeddedDatasink(args.data_dir))
        config = DatasinkConfig(url=state.url or "")
        if not state.mine:
            console.print(f"pushing to the embedded datasink in {state.data_dir}: "
                          f"{owner_line(state)}", highlight=False, soft_wrap=True, markup=False)
    with connect(config) as client:
        report = push_results_dir(client, args.results_dir,
                                  PushOptions(timestamp=args.timestamp), force=args.force)
    seen = (len(report.pushed) + len(report.skipped) + len(report.failed)
            + len(report.files_already_pushed) + len(report.files_not_pushed))
    if not seen:
        raise UsageError(f"results directory {args.results_dir}", "holds no result document "
                         "(result.json) at any depth", "give a session folder of `rbs run`")
    colour = "green" if report.ok else "red"
    console.print(f"[{colour}]{config.display_url}: {escape(report.summary())}[/]",
                  highlight=False, soft_wrap=True)
    refused = [r for r in report.skipped.values() if "stay out of the history" in r]
    if refused:
        console.print(f"refused {len(refused)} A/B or calibration run(s): they measure a "
                      "deliberate setup (a side, extra server args), not the build's history",
                      highlight=False, soft_wrap=True)
    for run_id, reason in report.failed.items():
        console.print(f"[red]  not pushed: {run_id}: {reason}[/]", highlight=False,
                      soft_wrap=True)
    return 0 if report.ok else 1


def cmd_gc(args: argparse.Namespace) -> int:
    """``rbs datasink gc``: apply the retention of datasink/retention.py once."""
    for flag, days in (("--window-days", args.window_days),
                       ("--document-days", args.document_days)):
        if not 1 <= days <= 3650:
            raise UsageError(f"{flag} {days:g}", "must be between 1 and 3650")
    with datasink_client(args) as client:
        report = retention.gc(client, int(time.time() * 1000), args.window_days, args.dry_run,
                              args.document_days)
    what = "would be" if args.dry_run else "done"
    make_console().print(f"gc ({what}, by.hash {args.window_days:g} days, documents "
                         f"{args.document_days:g} days): "
                         f"{escape(report.summary())}", highlight=False, soft_wrap=True)
    for error in report.errors:
        make_console().print(f"[red]  {escape(error)}[/]", highlight=False, soft_wrap=True)
    return 1 if report.errors else 0
