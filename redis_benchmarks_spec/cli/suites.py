"""``rbs suites list|lint``: show and check suite files."""

from __future__ import annotations

import argparse
import os
from pathlib import Path

from rich.markup import escape
from rich.table import Table

from redis_benchmarks_spec.cli import checks
from redis_benchmarks_spec.cli.console import make_console, print_table
from redis_benchmarks_spec.common.paths import absolute
from redis_benchmarks_spec.suites.catalog import default_suites_dir, load_catalog
from redis_benchmarks_spec.suites.problems import ERROR, Problem
from redis_benchmarks_spec.suites.validate import default_strict, lint_catalog


def register(sub: argparse._SubParsersAction) -> None:
    p = sub.add_parser("suites", help="list and lint benchmark suites")
    ssub = p.add_subparsers(dest="suites_command", metavar="ACTION", required=True)
    lst = ssub.add_parser("list", help="list the suites of a directory")
    lst.add_argument("suites_dir", nargs="?", type=Path, default=None,
                     help="directory of suite YAML files (default: the suites shipped with rbs, the repository's test-suites/)")
    lst.set_defaults(func=cmd_list)
    lint = ssub.add_parser("lint", help="check suites; exit non-zero on any error")
    lint.add_argument("suites_dir", nargs="?", type=Path, default=None,
                      help="directory of suite YAML files (default: the repository's test-suites/)")
    lint.add_argument("--strict", action=argparse.BooleanOptionalAction, default=None,
                      help="unknown keys are errors (default: on for our own test-suites/, "
                           "off for other folders, where they are warnings)")
    lint.add_argument("--other-suites-dir", action="append", type=Path, default=None,
                      metavar="DIR",
                      help="another suites folder (repeatable; default: $RBS_OTHER_SUITES_DIRS, "
                           f"'{os.pathsep}'-separated): warn when one of ours shares a name "
                           "with a different suite there")
    lint.set_defaults(func=cmd_lint)


def cmd_list(args: argparse.Namespace) -> int:
    directory = checks.existing_dir("suites directory", args.suites_dir or default_suites_dir())
    catalog = load_catalog(directory)
    table = Table(title=f"{len(catalog.suites)} suites in {directory}")
    for col in ("name", "tool", "groups", "commands", "topologies", "priority"):
        table.add_column(col)
    for s in catalog.suites:
        table.add_row(s.name, ",".join(s.tools), ",".join(s.tested_groups),
                      ",".join(s.tested_commands), ",".join(s.topologies),
                      "" if s.priority is None else str(s.priority))
    print_table(make_console(), table)
    errors = catalog.errors
    if errors:
        err = make_console(stderr=True)
        listed = {s.path for s in catalog.suites}
        first: dict[Path, Problem] = {}
        for problem in errors:
            if problem.path not in listed:
                first.setdefault(problem.path, problem)
        for problem in first.values():  # a file that is not in the table says why
            err.print(f"[yellow]not listed: {escape(str(problem))}[/]", highlight=False,
                      soft_wrap=True)
        err.print(f"[yellow]{len(errors)} problem(s) while loading; run `rbs suites lint`[/]")
    return 0


def cmd_lint(args: argparse.Namespace) -> int:
    directory = checks.existing_dir("suites directory", args.suites_dir or default_suites_dir())
    strict = args.strict if args.strict is not None else default_strict(directory)
    others = args.other_suites_dir if args.other_suites_dir is not None else \
        [absolute(d) for d in os.environ.get("RBS_OTHER_SUITES_DIRS", "").split(os.pathsep) if d]
    problems = lint_catalog(directory, others, strict=strict)
    console = make_console(stderr=True)
    for p in problems:
        style = "red" if p.severity == ERROR else "yellow"
        console.print(f"[{style}]{p}[/]", highlight=False, soft_wrap=True)
    errors = sum(1 for p in problems if p.severity == ERROR)
    mode = "strict" if strict else "tolerant: unknown keys are warnings, --strict makes them errors"
    console.print(f"{errors} error(s), {len(problems) - errors} warning(s) in {directory} "
                  f"({mode})")
    return 1 if errors else 0
