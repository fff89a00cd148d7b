"""``rbs suites lint``: everything load_catalog reports, plus semantic checks."""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.suites.catalog import load_catalog
from redis_benchmarks_spec.suites.commands import issued_commands
from redis_benchmarks_spec.suites.problems import WARNING, Problem
from redis_benchmarks_spec.suites.suite import Suite

KNOWN_TOOLS = {"redis-benchmark", "memtier_benchmark"}
KNOWN_PRELOAD_TOOLS = KNOWN_TOOLS | {"redis-cli"}
KNOWN_GROUPS = {"string", "hash", "list", "set", "sorted-set", "stream", "bitmap",
                "hyperloglog", "geo", "generic", "scripting", "transactions", "connection",
                "pubsub", "server", "cluster", "json", "search", "timeseries"}


def lint_suite(suite: Suite) -> list[Problem]:
    problems: list[Problem] = []
    issued: set[str] = set()
    understood = True
    for i, cfg in enumerate(suite.clientconfigs):
        if cfg.tool not in KNOWN_TOOLS:
            problems.append(Problem(suite.path, f"clientconfig[{i}].tool",
                                    f"unknown tool {cfg.tool!r}", WARNING))
        found = issued_commands(cfg)
        if found is None:
            understood = False
        else:
            issued |= found
    if understood:
        for cmd in suite.tested_commands:
            if cmd not in issued:
                problems.append(Problem(
                    suite.path, "tested-commands",
                    f"{cmd!r} is never issued by the client arguments "
                    f"(they issue: {', '.join(sorted(issued)) or 'nothing'})"))
        for cmd in sorted(issued - set(suite.tested_commands)):
            problems.append(Problem(suite.path, "tested-commands",
                                    f"the client issues {cmd!r} but tested-commands omits it",
                                    WARNING))
    for group in suite.tested_groups:
        if group not in KNOWN_GROUPS:
            problems.append(Problem(suite.path, "tested-groups",
                                    f"unknown group {group!r}", WARNING))
    if not suite.tested_commands:
        problems.append(Problem(suite.path, "tested-commands", "empty", WARNING))
    preload = suite.dbconfig.preload_tool
    if preload and preload.tool not in KNOWN_PRELOAD_TOOLS:
        problems.append(Problem(suite.path, "dbconfig.preload_tool.tool",
                                f"unknown preload tool {preload.tool!r}", WARNING))
    return problems


def lint_catalog(directory: Path) -> list[Problem]:
    catalog = load_catalog(directory)
    problems = list(catalog.problems)
    for suite in catalog.suites:
        problems += lint_suite(suite)
    return problems
