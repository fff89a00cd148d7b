"""``rbs lab up`` / ``rbs lab down`` / ``rbs lab status`` / ``rbs lab replay``: the whole
pipeline on this machine (docs/lab.md). Parsing and printing only; the work is in
``redis_benchmarks_spec.lab``."""

from __future__ import annotations

import argparse
import shlex
from pathlib import Path

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import UsageError, sigterm_interrupts
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.lab import keeper, services
from redis_benchmarks_spec.lab.state import LabState, LabStateError
from redis_benchmarks_spec.suites.catalog import default_suites_dir
from redis_benchmarks_spec.telemetry.profilers.base import COUNTED_REQUESTS

DEFAULT_ROOT = Path(".cache") / "lab"


def register(sub: argparse._SubParsersAction) -> None:
    """Add ``rbs lab``."""
    lab = sub.add_parser("lab", help="the pipeline on this machine: up, down, status, replay, table")
    lab_sub = lab.add_subparsers(dest="lab_command", metavar="COMMAND", required=True)
    up = lab_sub.add_parser("up", help="start broker, datasink, api, builder, one agent per "
                                       "platform and a local GitHub stand-in")
    _root(up)
    add_lab_options(up)
    up.set_defaults(func=cmd_up)
    down = lab_sub.add_parser("down", help="stop every process `rbs lab up` started")
    _root(down)
    down.add_argument("--timeout", type=float, default=120.0,
                      help="seconds each daemon gets to finish its current work")
    down.set_defaults(func=cmd_down)
    status = lab_sub.add_parser("status", help="the lab's services, URLs and whether each runs")
    _root(status)
    status.set_defaults(func=cmd_status)
    from redis_benchmarks_spec.cli import lab_replay  # the replay's flags live beside it
    lab_replay.register(lab_sub)
    from redis_benchmarks_spec.cli import lab_table
    lab_table.register(lab_sub, _root)


#: what every push of the tracked branch runs in the lab, besides the suites its change
#: reaches: a read, a write and the pipelined protocol path, each in one topology (a
#: sentinel runs at every commit: GET 100B's four topologies took ~40 s a push; docs/lab.md)
DEFAULT_SENTINELS = ("redis-benchmark-1Kkeys-string-get-1000B-pipeline-100",
                     "redis-benchmark-hash-hset-100B", "redis-benchmark-ping-mbulk-pipeline-100")


def _root(p: argparse.ArgumentParser) -> None:
    p.add_argument("--dir", type=Path, default=DEFAULT_ROOT, dest="lab_dir",
                   help="the lab folder: state file, logs, servers' data, build trees")


def add_lab_options(p: argparse.ArgumentParser) -> None:
    """What the lab runs (shared by ``up`` and ``replay``, which starts a lab if none runs)."""
    p.add_argument("--source", type=Path, required=p.prog.endswith(" up"), metavar="GIT_DIR",
                   help="the git repository that stands for GitHub (the builder fetches "
                        "from it)")
    p.add_argument("--suites-dir", type=Path, default=None,
                   help="the agents' suites (default: the shipped suites)")
    p.add_argument("--platforms", default="lab-a,lab-b",
                   help="comma list of platforms, one agent each, the CPUs split among them")
    p.add_argument("--max-pairs", type=int, default=6,
                   help="most base/head pairs per test of a pull request (platform budget)")
    p.add_argument("--base-runs", type=int, default=2,
                   help="counted runs of each test at a push of unstable: the stored base "
                        "a pull request's counts are compared with (1..10; default 2)")
    p.add_argument("--fresh-pairs", action="store_true",
                   help="pull requests count their base again in interleaved pairs instead "
                        "of comparing with its push's counts (to check those verdicts)")
    p.add_argument("--max-suites", type=int, default=None,
                   help="most suites a pull request runs on a platform (those that execute "
                        "its changed code, most exercised first)")
    p.add_argument("--sentinels", default=None, metavar="NAMES",
                   help="comma list of suites every push of unstable runs besides those "
                        "that execute what it changes (default: "
                        f"{', '.join(DEFAULT_SENTINELS)}, those of them in --suites-dir; "
                        "'every': a push runs every suite)")
    p.add_argument("--build-cache", type=Path, default=None, metavar="DIR",
                   help="kept build trees and artifacts (default: in the lab folder); one "
                        "that outlives the lab makes later builds incremental")
    # COUNTED_REQUESTS: more do not steady the per-op count (docs/lab.md, "Measured")
    p.add_argument("--agent-args",
                   default=f"--profilers instructions --profile-requests {COUNTED_REQUESTS}",
                   metavar="ARGS",
                   help="more flags for every agent, e.g. '--profilers instructions "
                        "--test-time 5'")


def lab_options(args: argparse.Namespace) -> services.LabOptions:
    """The parsed options, checked (one line naming the flag otherwise)."""
    source = args.source
    checks.existing_dir("--source", source)
    if not (source / "HEAD").is_file() and not (source / ".git").exists():
        raise UsageError(f"--source {source}", "not a git repository",
                         "give a clone or a bare repository")
    suites = args.suites_dir or default_suites_dir()
    checks.existing_dir("--suites-dir", suites)
    platforms = tuple(p.strip() for p in args.platforms.split(",") if p.strip())
    if not platforms or len(set(platforms)) != len(platforms):
        raise UsageError(f"--platforms {args.platforms}", "give distinct platform names")
    if not 2 <= args.max_pairs <= 1000:
        raise UsageError(f"--max-pairs {args.max_pairs}", "must be from 2 to 1000")
    if not 1 <= args.base_runs <= 10:
        raise UsageError(f"--base-runs {args.base_runs}", "must be from 1 to 10")
    agent_args = tuple(shlex.split(args.agent_args))
    # instruction counts decide when measured: deterministic, so the pairs stop early; 5
    # pairs is the fewest the t interval of a per-pair log ratio uses (docs/statistics.md)
    counted = any("instructions" in a for a in agent_args)
    return services.LabOptions(
        root=args.lab_dir, source=source.resolve(), suites_dir=suites.resolve(),
        platforms=platforms, agent_args=agent_args,
        metric=INSTRUCTIONS_METRIC if counted else "auto",
        max_pairs=args.max_pairs, first_round=min(5, args.max_pairs),
        max_suites=args.max_suites, build_cache=args.build_cache, base_runs=args.base_runs,
        stored_base=not args.fresh_pairs, sentinels=_sentinels(args.sentinels, suites))


def _sentinels(text: str | None, suites: Path) -> tuple[str, ...] | None:
    """``--sentinels`` as suite names of ``--suites-dir`` (one line naming a stranger);
    None: every suite."""
    if text == "every":
        return None
    if text is None:
        return tuple(n for n in DEFAULT_SENTINELS if (suites / f"{n}.yml").is_file())
    names = tuple(n.strip() for n in text.split(",") if n.strip())
    for name in names:
        if not (suites / f"{name}.yml").is_file():
            raise UsageError(f"--sentinels {name}", f"no suite file {name}.yml in {suites}")
    return names


def cmd_up(args: argparse.Namespace) -> int:
    """Start the lab and print where everything is."""
    options = lab_options(args)
    try:
        with sigterm_interrupts():  # a SIGTERM mid-start stops what started (services.up)
            state = services.up(options)
    except services.LabError as exc:
        raise UsageError("rbs lab up", str(exc), f"logs in {options.root / 'logs'}") from None
    console = make_console()
    console.print(f"lab up in {state.root}", highlight=False)
    for line in _describe(state):
        console.print(line, highlight=False, markup=False)
    return 0


def _describe(state: LabState) -> list[str]:
    lines = [f"broker {state.broker_url}   datasink {state.datasink_url}",
             (f"webhook {state.api_url}/webhook   GitHub stand-in {state.github_url} "
              f"(comments recorded in {state.root}/github)"),
             f"source {state.source}"]
    if state.site_url:
        lines.insert(2, f"site {state.site_url}/")
    for platform, cpus in state.platforms.items():
        lines.append(f"platform {platform}: CPUs {','.join(map(str, cpus))}")
    lines += [f"{s.name}: pid {s.pid}, log {s.log}" for s in state.services]
    return lines


def cmd_down(args: argparse.Namespace) -> int:
    """Stop the lab's processes, each by its own pid."""
    try:
        outcomes = services.down(args.lab_dir, args.timeout)
    except LabStateError as exc:
        raise UsageError(f"--dir {args.lab_dir}", str(exc)) from None
    console = make_console()
    for name, outcome in outcomes:
        console.print(f"{name}: {outcome}", highlight=False, markup=False)
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    """Print the lab's services and whether each runs; exit 1 when one does not."""
    try:
        state, alive = services.running(args.lab_dir)
    except LabStateError as exc:
        raise UsageError(f"--dir {args.lab_dir}", str(exc)) from None
    console = make_console()
    for line in _describe(state):
        console.print(line, highlight=False, markup=False)
    for name, ok in alive:
        console.print(f"{name}: {'running' if ok else 'NOT RUNNING'}", highlight=False,
                      markup=False)
    for line in [*keeper.describe(state.folder), *services.kept_tree_checks(state)]:
        console.print(line, highlight=False, markup=False)
    return 0 if all(ok for _, ok in alive) else 1
