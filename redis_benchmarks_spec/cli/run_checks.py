"""``rbs run``: every input checked before a server starts (see :mod:`cli.checks`)."""

from __future__ import annotations

import argparse
import difflib
import re
from collections.abc import Collection
from pathlib import Path

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.errors import UsageError
from redis_benchmarks_spec.cli.run_commits import check_commit_args, wants_commits
from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.runner.cpus import host_cpus
from redis_benchmarks_spec.runner.server_env import ServerEnvError, parse_pairs
from redis_benchmarks_spec.suites.validate import ValidatedCatalog

BINARY_FLAGS = (("--redis-server", "redis_server"),
                ("--redis-benchmark-bin", "redis_benchmark_bin"),
                ("--memtier-bin", "memtier_bin"),
                ("--baseline-server", "baseline_server"),
                ("--comparison-server", "comparison_server"))
REGEXP_FLAGS = (("--tests-regexp", "tests_regexp"), ("--groups-regexp", "groups_regexp"),
                ("--commands-regexp", "commands_regexp"))


def check_run_args(args: argparse.Namespace) -> None:
    """Flags, files and binaries of ``rbs run``; raises :class:`UsageError`."""
    for flag, attr in REGEXP_FLAGS:
        checks.regexp(flag, getattr(args, attr))
    if args.suites_dir is not None:
        checks.existing_dir("--suites-dir", args.suites_dir)
    if args.results_dir is None:
        args.results_dir = default_results_dir(args)
    checks.writable_dir("--results-dir", args.results_dir, create=not args.dry_run)
    for flag, attr in BINARY_FLAGS:
        if getattr(args, attr):
            setattr(args, attr, checks.executable(flag, getattr(args, attr)))
    _check_ab(args)
    if not (args.baseline_server or args.comparison_server or args.dry_run or
            wants_commits(args)):
        checks.tool("--redis-server", args.redis_server, "redis-server")
    if args.test_time is not None and args.test_time <= 0:
        raise UsageError(f"--test-time {args.test_time}", "must be a positive number of seconds")
    parse_cpus(args.cpus)
    if server_env_arg(args) and args.launcher != "process":
        raise UsageError("--server-env", "applies to servers started as processes",
                         "drop it, or use --launcher process")
    _check_memory_only(args)
    if args.datasink_data_dir is not None:
        checks.writable_dir("--datasink-data-dir", args.datasink_data_dir)


def server_env_arg(args: argparse.Namespace) -> dict[str, str]:
    """``--server-env KEY=VALUE ...`` as a dict."""
    try:
        return parse_pairs(getattr(args, "server_env", None) or [])
    except ServerEnvError as exc:
        raise UsageError("--server-env", str(exc), "e.g. --server-env LD_LIBRARY_PATH=/opt/lib") \
            from None
def _check_memory_only(args: argparse.Namespace) -> None:
    """``--memory-only`` runs no load: flags about the load make no sense with it."""
    if not args.memory_only:
        return
    for flag, given in (("--sweep", args.sweep), ("--profilers", args.profilers),
                        ("--metric", args.metric), ("--until-decided", args.until_decided),
                        ("--client-host", args.client_host)):
        if given:
            raise UsageError(flag, "not used with --memory-only (no load runs)",
                             "leave one of them out")


RESULTS_ROOT = Path("results")


def default_results_dir(args: argparse.Namespace) -> Path:
    """``results/`` for runs (what `rbs datasink push results/` means), ``results/ab/`` for
    A/B sessions (of two servers or two commits), whose runs are not history."""
    ab = bool(args.baseline_server or args.comparison_server or args.baseline_commit
              or args.comparison_commit)
    return absolute(RESULTS_ROOT / "ab" if ab else RESULTS_ROOT)


def _check_ab(args: argparse.Namespace) -> None:
    if wants_commits(args):
        check_commit_args(args)
    elif bool(args.baseline_server) != bool(args.comparison_server):
        given = "--baseline-server" if args.baseline_server else "--comparison-server"
        raise UsageError(given, "A/B mode needs both --baseline-server and --comparison-server")
    ab = bool(args.baseline_server) or wants_commits(args)
    if ab and args.format == "csv":
        raise UsageError("--format csv", "not available in A/B mode",
                         "use table, markdown or json for the comparison")
    if args.repetitions is not None and args.repetitions < 1:
        raise UsageError(f"--repetitions {args.repetitions}", "must be at least 1")
    check_until_decided(args, ab)
    if not ab:
        for flag, attr in (("--baseline-server-args", "baseline_server_args"),
                           ("--comparison-server-args", "comparison_server_args")):
            if getattr(args, attr):
                raise UsageError(flag, "only used in A/B mode",
                                 "give --baseline-server and --comparison-server")


def check_until_decided(args: argparse.Namespace, ab: bool) -> None:
    """``--until-decided`` and its budget flags (A/B mode only)."""
    if args.max_repetitions is not None and args.max_repetitions < (args.repetitions or 1):
        raise UsageError(f"--max-repetitions {args.max_repetitions}",
                         f"must be at least --repetitions ({args.repetitions})")
    if not args.until_decided:
        return
    if not ab:
        raise UsageError("--until-decided", "only used in A/B mode",
                         "give --baseline-server and --comparison-server")
    first = args.repetitions or 6
    if args.max_repetitions is not None and args.max_repetitions < max(first, 2):
        raise UsageError(f"--max-repetitions {args.max_repetitions}",
                         f"must be at least the first round ({first}) and 2")
    if args.round_repetitions < 1:
        raise UsageError(f"--round-repetitions {args.round_repetitions}", "must be at least 1")
    if args.time_budget is not None and not re.fullmatch(r"\s*\d+(\.\d+)?[smhSMH]?\s*",
                                                         args.time_budget):
        raise UsageError(f"--time-budget {args.time_budget}", "not a duration",
                         "seconds, or a number with s, m or h: 900, 30m, 2h")


def parse_cpus(text: str | None) -> list[int] | None:
    """``--cpus 0,2,3`` as a list of CPU ids."""
    if not text:
        return None
    try:
        cpus = [int(c) for c in text.split(",") if c.strip()]
    except ValueError:
        raise UsageError(f"--cpus {text}", "not a comma-separated list of CPU ids",
                         "e.g. --cpus 0,1,2,3") from None
    if not cpus or any(c < 0 for c in cpus):
        raise UsageError(f"--cpus {text}", "not a comma-separated list of CPU ids")
    if len(set(cpus)) != len(cpus):
        raise UsageError(f"--cpus {text}", "names a CPU more than once")
    usable = host_cpus()
    outside = [c for c in cpus if c not in usable]
    if outside:
        raise UsageError(f"--cpus {text}", f"CPU(s) {', '.join(map(str, outside))} are not "
                         f"among the CPUs this process may use ({', '.join(map(str, usable))})",
                         "leave --cpus out to use all of them")
    return cpus


def check_test_names(catalog: ValidatedCatalog, tests: list[str], directory: Path) -> None:
    """Every ``--test`` names a suite (valid or rejected: a rejected one is skipped with its
    reason); suggests the closest names (case-insensitive)."""
    names = [s.name for s in catalog.suites]
    for test in tests:
        if catalog.by_name(test) is not None or catalog.rejected_named(test) is not None:
            continue
        raise UsageError(f"--test {test}", f"no suite of that name in {directory}",
                         _did_you_mean(test, names))


def check_topology(topology: str | None, catalog: ValidatedCatalog,
                   known: Collection[str]) -> None:
    """``--topology`` names a topology of the catalogue (``known``) or one a suite lists."""
    listed = {t for s in catalog.suites for t in s.topologies}
    if topology is None or topology in known or topology in listed:
        return
    close = difflib.get_close_matches(topology, sorted(known), n=1, cutoff=0.8)
    raise UsageError(f"--topology {topology}", "not a known topology (known: "
                     f"{', '.join(sorted(known))})",
                     f"did you mean {close[0]}?" if close else "")


def _did_you_mean(test: str, names: list[str]) -> str:
    folded = {n.lower(): n for n in names}
    exact = folded.get(test.lower())
    if exact:
        return f"did you mean {exact}? (names are case-sensitive)"
    close = difflib.get_close_matches(test.lower(), list(folded), n=3, cutoff=0.6)
    if close:
        return "did you mean " + " or ".join(folded[c] for c in close) + "?"
    contains = [n for n in names if re.search(re.escape(test), n, re.IGNORECASE)][:3]
    if contains:
        return "did you mean " + " or ".join(contains) + "?"
    return "`rbs suites list` shows the names"


def selection_flags(args: argparse.Namespace) -> str:
    """The selection flags as given (a regexp that matches nothing is echoed), or
    "selection" when none narrowed it."""
    given = [f"--{flag.replace('_', '-')} {getattr(args, flag)!r}"
             for flag in ("tests_regexp", "groups_regexp", "commands_regexp")
             if getattr(args, flag) not in (None, "", ".*")]
    given += [f"--{flag.replace('_', '-')} {getattr(args, flag)}"
              for flag in ("priority_min", "priority_max") if getattr(args, flag) is not None]
    return " ".join(given) or "selection"
