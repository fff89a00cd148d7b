"""Per-suite checks beyond loading, and name collisions (``validate.py`` runs them all)."""

from __future__ import annotations

from pathlib import Path

from redis_benchmarks_spec.suites.commands import issued_commands
from redis_benchmarks_spec.suites.problems import DESCRIPTION, NAME_COLLISION, WARNING, Problem
from redis_benchmarks_spec.suites.suite import Suite

KNOWN_TOOLS = {"redis-benchmark", "memtier_benchmark"}
KNOWN_PRELOAD_TOOLS = KNOWN_TOOLS | {"redis-cli"}
SCRIPTING = {"eval", "evalsha", "eval_ro", "evalsha_ro", "fcall", "fcall_ro"}
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
        # commands a script runs cannot be seen from the arguments: never an error then;
        # otherwise an error under --strict (kind DESCRIPTION), a warning elsewhere
        kind = "" if issued & SCRIPTING else DESCRIPTION
        for cmd in suite.tested_commands:
            if cmd not in issued:
                problems.append(Problem(
                    suite.path, "tested-commands",
                    f"{cmd!r} is never issued by the client arguments "
                    f"(they issue: {', '.join(sorted(issued)) or 'nothing'})", WARNING, kind))
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


def definition(suite: Suite) -> tuple[object, ...]:
    """What a suite measures: clients, server configuration and dataset (not its prose)."""
    db = suite.dbconfig
    preload = db.preload_tool
    return (
        tuple((c.tool, tuple(c.argv())) for c in suite.clientconfigs),
        tuple(sorted(db.configuration_parameters.items())), db.keyspacelen,
        (preload.tool, tuple(preload.argv())) if preload else None,
        tuple(tuple(c) for c in db.init_commands), tuple(db.init_lua), db.dataset,
        db.rdb_checks, db.wait_for_bgsave,
    )


def name_collisions(ours: list[Suite], others: dict[Path, list[Suite]]) -> list[Problem]:
    """Warn when one of our suites shares its name with a different suite elsewhere.

    Both would write into the same time series (the series key is built from the name), so
    their points would mix in one history.
    """
    problems: list[Problem] = []
    for directory, suites in others.items():
        by_name = {s.name: s for s in suites}
        for suite in ours:
            other = by_name.get(suite.name)
            if other is not None and definition(other) != definition(suite):
                problems.append(Problem(
                    suite.path, "name",
                    f"{suite.name!r} is also the name of a different suite in {directory} "
                    f"({other.path.name}): both would write the same time series; rename ours",
                    WARNING, NAME_COLLISION))
    return problems
