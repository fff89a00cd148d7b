"""``rbs``: the command-line entry point. Each command group lives in its own module with a
``register(subparsers)`` function; this file only wires them together and owns the one
error path (see :mod:`redis_benchmarks_spec.cli.errors`)."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

import redis

from redis_benchmarks_spec import __version__
from redis_benchmarks_spec.cli.console import CurrentStderrHandler
from redis_benchmarks_spec.cli.errors import EXIT_INTERNAL, EXIT_INTERRUPTED, EXIT_USAGE, UsageError
from redis_benchmarks_spec.cli.parser import RbsParser

# one module per command group, in the order they appear in --help, with the commands each
# registers (tests/test_cli_commands.py checks the two agree)
COMMANDS = {
    "redis_benchmarks_spec.cli.suites": ("suites",),
    "redis_benchmarks_spec.cli.run": ("run",),
    "redis_benchmarks_spec.cli.pipeline": ("api", "trigger"),
    "redis_benchmarks_spec.cli.admin": ("admin",),
    "redis_benchmarks_spec.cli.compare": ("compare",),
    "redis_benchmarks_spec.cli.report": ("report",),
    "redis_benchmarks_spec.cli.history": ("history",),
    "redis_benchmarks_spec.cli.changepoints": ("changepoints",),
    "redis_benchmarks_spec.cli.bisect": ("bisect",),
    "redis_benchmarks_spec.cli.datasink": ("datasink",),
    "redis_benchmarks_spec.cli.platform": ("platform",),
    "redis_benchmarks_spec.cli.daemons": ("agent", "builder"),
    "redis_benchmarks_spec.cli.confirmer": ("confirmer",),
    "redis_benchmarks_spec.cli.lab": ("lab",),
    "redis_benchmarks_spec.cli.site": ("site",),
}
COMMAND_MODULES = list(COMMANDS)


def _modules_for(argv: list[str] | None) -> list[str]:
    """The command modules a command line needs: the one module of its command (a command
    process then imports what that command uses, not every other command's code: the tests
    and the lab start `rbs` hundreds of times), or every module (help, no or an unknown
    command: the usage lists them all)."""
    words = sys.argv[1:] if argv is None else argv
    first = next((w for w in words if not w.startswith("-")), None)
    if first is None or any(w in ("-h", "--help") for w in words[:words.index(first)]):
        return COMMAND_MODULES
    found = [m for m, names in COMMANDS.items() if first in names]
    return found or COMMAND_MODULES


def build_parser(argv: list[str] | None = None, every: bool = True) -> argparse.ArgumentParser:
    """The ``rbs`` parser: with every command (``every``), or with those ``argv`` names."""
    parser = RbsParser(
        prog="rbs",
        description="redis-benchmarks-spec: run Redis benchmark suites, store results in "
                    "RedisTimeSeries, compare builds, and run the CI pipeline.\n\n"
                    "exit codes: 0 done, 1 a test failed (or a regression with "
                    "--fail-on-regression), 2 usage or input error, 3 internal error, "
                    "130 interrupted",
    )
    parser.set_defaults(verbose=False)
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES if every else _modules_for(argv):
        importlib.import_module(name).register(sub)
    return parser


def _command(args: argparse.Namespace) -> str:
    parts = ["rbs", getattr(args, "command", "") or ""]
    for attr in ("suites_command", "datasink_command", "admin_command", "platform_command",
                 "lab_command"):
        if getattr(args, attr, None):
            parts.append(getattr(args, attr))
    return " ".join(p for p in parts if p)


def main(argv: list[str] | None = None) -> int:
    parser = build_parser(argv, every=False)
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
                        handlers=[CurrentStderrHandler()])
    try:
        return int(args.func(args) or 0)
    except UsageError as exc:
        return _fail(args, exc.line(), EXIT_USAGE)
    except (redis.ConnectionError, redis.TimeoutError) as exc:
        # a server that went away mid-command: the input was fine, the world was not
        return _fail(args, f"lost the connection to a Redis server: {exc} (hint: is it "
                           "still running?)", EXIT_USAGE)
    except KeyboardInterrupt:
        return _fail(args, "interrupted", EXIT_INTERRUPTED)
    except Exception as exc:  # the last resort: one line, the traceback only with -v
        if args.verbose:
            raise
        return _fail(args, f"internal error: {type(exc).__name__}: {exc} (hint: run again "
                           "with -v for the traceback, and report it)", EXIT_INTERNAL)


def _fail(args: argparse.Namespace, line: str, code: int) -> int:
    sys.stderr.write(f"{_command(args)}: error: {' '.join(line.split())}\n")
    return code


if __name__ == "__main__":
    sys.exit(main())
