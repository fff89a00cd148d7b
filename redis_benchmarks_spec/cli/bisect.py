"""``rbs bisect --good SHA --bad SHA --test T``: the first commit of a range that changes a
test (slower, or faster: an improvement is placed as well), built and measured through the builder and agents, or here with ``--local``.

Parsing and printing only: :mod:`bisection.search`, :mod:`bisection.local`,
:mod:`bisection.remote`."""

from __future__ import annotations

import argparse
import json
import os
import re
from collections.abc import Callable
from pathlib import Path

from rich.console import Console
from rich.markup import escape

from redis_benchmarks_spec.analysis.compare import (
    DEFAULT_METRIC,
    IMPROVEMENT,
    REGRESSION,
    CompareOptions,
)
from redis_benchmarks_spec.bisection import local, remote
from redis_benchmarks_spec.bisection.gitrange import (
    UnknownCommitError,
    commit_range,
    commit_subject,
    pull_request_of,
    resolve_commit,
)
from redis_benchmarks_spec.bisection.search import (
    METRIC_AUTO,
    METRIC_INSTRUCTIONS,
    METRIC_THROUGHPUT,
    BisectError,
    BisectOutcome,
    Budget,
    search,
)
from redis_benchmarks_spec.builder.variants import load_variants
from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.ab_args import parse_duration
from redis_benchmarks_spec.cli.console import make_console
from redis_benchmarks_spec.cli.errors import EXIT_BUSY, EXIT_FAILED, UsageError, sigterm_interrupts
from redis_benchmarks_spec.common import credentials
from redis_benchmarks_spec.events import names as names_mod
from redis_benchmarks_spec.events.follow import platform_groups
from redis_benchmarks_spec.events.validation import NAME_PATTERN
from redis_benchmarks_spec.intake.trigger import RequestOptions
from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.results.summary import session_dir
from redis_benchmarks_spec.runner.session import SessionConfig
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog
from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions

DEFAULT_VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
ENV_BROKER = "RBS_BROKER"
ENV_BROKER_PASSWORD = "RBS_BROKER_PASSWORD"
DEFAULT_BROKER = "redis://127.0.0.1:6379"
Say = Callable[[str], None]


def _name(flag: str, value: str) -> str:
    """A value that goes into stream messages and keys: the messages' own name rule."""
    if not re.fullmatch(NAME_PATTERN, value) or value in (".", ".."):
        raise UsageError(f"{flag} {value}", f"is not a name ({NAME_PATTERN})")
    return value


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("bisect", help="find the first commit of a range that changes a test "
                                      "(a regression or an improvement)",
                       description=__doc__)
    p.add_argument("--good", required=True, help="a commit without the change")
    p.add_argument("--bad", required=True,
                   help="a later commit with it (a slowdown, or an improvement to place)")
    p.add_argument("--test", required=True, help="suite name")
    p.add_argument("--local", action="store_true",
                   help="build and benchmark on this machine instead of through the "
                        "builder and agents")
    p.add_argument("--repo", type=Path, default=Path("."), help="git repository of Redis")
    p.add_argument("--build-variant", default=DEFAULT_VARIANT)
    p.add_argument("--metric", default=METRIC_AUTO,
                   help="auto (instructions per op when they can be counted, else "
                        "throughput), instructions, throughput, or an exporter metric path")
    p.add_argument("--repetitions", type=int, default=4, help="interleaved pairs per probe")
    p.add_argument("--max-builds", type=int, default=12,
                   help="distinct commits to build, the two ends included")
    p.add_argument("--time-budget", default=None, metavar="DURATION", help="e.g. 2h")
    p.add_argument("--format", choices=("table", "json"), default="table")
    here = p.add_argument_group("--local")
    here.add_argument("--suites-dir", type=Path, default=None)
    here.add_argument("--test-time", type=int, default=None, help="seconds per run")
    here.add_argument("--profile-requests", type=int, default=ProfilerOptions.requests,
                      metavar="N", help="requests per run under callgrind (instructions)")
    here.add_argument("--work-dir", type=Path, default=Path(".cache") / "bisect",
                      help="work tree, built binaries (reused by later bisections) and runs")
    there = p.add_argument_group("through the builder and agents")
    there.add_argument("--broker", default=os.environ.get(ENV_BROKER, DEFAULT_BROKER),
                       help=f"Redis URL of the broker (default: ${ENV_BROKER})")
    names_mod.add_arguments(there)
    there.add_argument("--platform", default=None,
                       help="the platform whose agents measure (default: the only one)")
    there.add_argument("--org", help="GitHub org (default: from the origin remote)")
    there.add_argument("--repo-name", help="GitHub repository name (default: from origin)")
    there.add_argument("--triggering-env", default="bisect",
                       help="datasink key part of the probes' results (kept apart from ci)")
    there.add_argument("--probe-timeout", default="6h", metavar="DURATION",
                       help="longest wait for one probe's builds and runs")
    p.set_defaults(func=cmd_bisect)


def _duration(flag: str, text: str | None) -> float | None:
    try:
        seconds = parse_duration(text)
    except ValueError:
        seconds = -1.0
    if seconds is not None and not seconds > 0:
        raise UsageError(f"{flag} {text}", "is not a duration", "e.g. 900, 90s, 30m, 2h")
    return seconds


def _budget(args: argparse.Namespace) -> Budget:
    if args.repetitions < 2 or args.max_builds < 2:
        raise UsageError("--repetitions/--max-builds", "must be at least 2")
    return Budget(max_builds=args.max_builds,
                  time_budget_s=_duration("--time-budget", args.time_budget),
                  pairs=args.repetitions)


def _metric(args: argparse.Namespace) -> tuple[str, CompareOptions]:
    """(auto|instructions|throughput, options whose metric is the throughput metric)."""
    choice = args.metric
    if choice in (METRIC_AUTO, METRIC_INSTRUCTIONS, METRIC_THROUGHPUT):
        return choice, CompareOptions.for_metric(DEFAULT_METRIC)
    # a path: judged as given, with the catalogue's floor of it
    return METRIC_THROUGHPUT, CompareOptions.for_metric(choice)


def _local_plan(args: argparse.Namespace) -> local.BisectPlan:
    budget = _budget(args)
    checks.existing_dir("--repo", args.repo)
    suites_dir = args.suites_dir or default_suites_dir()
    suite = load_catalog(suites_dir).by_name(args.test)
    if suite is None:
        raise UsageError(f"--test {args.test}", f"no suite of that name in {suites_dir}")
    variant = load_variants().get(args.build_variant)
    if variant is None:
        raise UsageError(f"--build-variant {args.build_variant}", "unknown build variant")
    if args.profile_requests < 1:
        raise UsageError(f"--profile-requests {args.profile_requests}", "must be at least 1")
    metric, options = _metric(args)
    work = args.work_dir.resolve()
    session = SessionConfig(tools=ToolPaths(), results_dir=session_dir(work / "runs"),
                            test_time=args.test_time)
    _check_ends(args)
    return local.BisectPlan(repo=args.repo, good=args.good, bad=args.bad, suite=suite,
                            variant=variant, work_dir=work, session=session, options=options,
                            budget=budget, metric=metric,
                            profile_requests=args.profile_requests)


def _remote(args: argparse.Namespace, say: Say) -> BisectOutcome:
    checks.existing_dir("--repo", args.repo)
    budget = _budget(args)
    _name("--test", args.test)
    for flag, value in (("--platform", args.platform), ("--triggering-env", args.triggering_env)):
        if value is not None:
            _name(flag, value)
    probe_timeout = _duration("--probe-timeout", args.probe_timeout) or 6 * 3600.0
    client = checks.broker("--broker", credentials.with_password(args.broker,
                                                                 ENV_BROKER_PASSWORD))
    names = names_mod.from_args(args)
    platform = args.platform
    if platform is None:
        found = platform_groups(client, names)
        if len(found) != 1:
            raise UsageError("--platform", f"give the platform to measure on (agents' "
                             f"platforms on the broker: {', '.join(found) or 'none'})")
        platform = found[0]
    metric, options = _metric(args)
    plan = remote.RemotePlan(
        client=client, names=names, repo=args.repo, test=args.test, platform=platform,
        build_variant=args.build_variant, options=options, metric=metric,
        request=RequestOptions(org=args.org, repo_name=args.repo_name,
                               triggering_env=args.triggering_env),
        probe_timeout_s=probe_timeout)
    _check_ends(args)
    good_sha, commits = commit_range(args.repo, args.good, args.bad)
    say(f"{len(commits)} commit(s) after {good_sha[:12]}; probes on platform {platform}")
    return search([remote.RemoteProber(plan, good_sha)], good_sha, commits, budget, say)


def _answer(args: argparse.Namespace, outcome: BisectOutcome) -> dict[str, object]:
    """The first bad commit with its subject, pull request and change; or the range left
    and why."""
    sha = outcome.first_bad
    subject = commit_subject(args.repo, sha) if sha else ""
    left = outcome.range_left
    return {"first_bad": sha, "subject": subject, "pull_request": pull_request_of(subject),
            "change_pct": outcome.change_of(sha) if sha else None,
            "direction": outcome.direction, "busy": outcome.busy,
            "range_left": list(left) if left and not sha else None,
            "commits_left": _commits_left(outcome) if not sha else 0}


def _commits_left(outcome: BisectOutcome) -> int:
    """Commits that may still be the first bad one (the bad end of the range included)."""
    if not outcome.range_left:
        return len(outcome.commits)
    good, bad = outcome.range_left
    lo = outcome.commits.index(good) if good in outcome.commits else -1
    return outcome.commits.index(bad) - lo


def _change_word(direction: str) -> str:
    """What the bad end's verdict makes of the change: a bisection finds improvements too."""
    return {REGRESSION: "regression", IMPROVEMENT: "improvement"}.get(direction, "change")


def _answer_line(answer: dict[str, object], outcome: BisectOutcome) -> str:
    if answer["first_bad"]:
        pr = f" (PR #{answer['pull_request']})" if answer["pull_request"] else ""
        change = answer["change_pct"]
        size = "" if not isinstance(change, float) else \
            f": {change:+.2f}% {outcome.metric} against --good"
        return (f"first commit of the {_change_word(outcome.direction)}: "
                f"{answer['first_bad']}{pr} {answer['subject']!r}{size} ({outcome.builds} builds)")
    what = "host busy" if outcome.busy else "not found"
    left = outcome.range_left
    where = (f"; {answer['commits_left']} commit(s) left, between {left[0][:12]} (good) and "
             f"{left[1][:12]} (bad)") if left else ""
    return f"{what}: {outcome.reason}{where}"


def _print(args: argparse.Namespace, outcome: BisectOutcome, out: Console) -> None:
    answer = _answer(args, outcome)
    if args.format == "json":
        print(json.dumps({**answer, "reason": outcome.reason,
                          "metric": outcome.metric, "metric_note": outcome.metric_note,
                          "builds": outcome.builds, "compiles": outcome.compiles,
                          "commits": outcome.commits,
                          "probes": [vars(p) for p in outcome.probes]}, indent=2))
        return
    note = f" ({outcome.metric_note})" if outcome.metric_note else ""
    if outcome.metric:
        out.print(escape(f"decided on {outcome.metric}{note}"), highlight=False)
    out.print(escape(_answer_line(answer, outcome)), highlight=False)


def _check_ends(args: argparse.Namespace) -> None:
    """``--repo`` is a git repository and ``--good`` / ``--bad`` name commits of it."""
    try:
        resolve_commit(args.repo, "HEAD")
    except BisectError as exc:
        raise UsageError(f"--repo {args.repo}", "not a git repository (or git fails there)",
                         str(exc).splitlines()[-1][:200]) from None
    for flag, ref in (("--good", args.good), ("--bad", args.bad)):
        try:
            resolve_commit(args.repo, ref)
        except UnknownCommitError:
            raise UsageError(f"{flag} {ref}", f"no such commit in {args.repo}",
                             "a sha, branch or tag of --repo") from None


def cmd_bisect(args: argparse.Namespace) -> int:
    """0 when the first bad commit is found, 1 when not (budget, no regression), 2 usage,
    4 when the host was too busy to measure (other processes disturbed the pairs)."""
    console = make_console(stderr=args.format == "json")

    def say(line: str) -> None:
        console.print(escape(line), highlight=False)

    try:
        with sigterm_interrupts():  # as Ctrl-C: a build's container and the servers stopped
            outcome = local.bisect(_local_plan(args), say) if args.local else \
                _remote(args, say)
    except BisectError as exc:
        raise UsageError("", str(exc).splitlines()[0] if str(exc) else
                         type(exc).__name__) from None
    _print(args, outcome, console)
    if outcome.first_bad:
        return 0
    return EXIT_BUSY if outcome.busy else EXIT_FAILED
