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

# one module per command group, in the order they appear in --help
COMMAND_MODULES = [
    "redis_benchmarks_spec.cli.suites",
    "redis_benchmarks_spec.cli.run",
    "redis_benchmarks_spec.cli.pipeline",
    "redis_benchmarks_spec.cli.admin",
    "redis_benchmarks_spec.cli.compare",
    "redis_benchmarks_spec.cli.report",
    "redis_benchmarks_spec.cli.history",
    "redis_benchmarks_spec.cli.changepoints",
    "redis_benchmarks_spec.cli.bisect",
    "redis_benchmarks_spec.cli.datasink",
    "redis_benchmarks_spec.cli.platform",
    "redis_benchmarks_spec.cli.daemons",
    "redis_benchmarks_spec.cli.confirmer",
    "redis_benchmarks_spec.cli.lab",
    "redis_benchmarks_spec.cli.site",
]


def build_parser() -> argparse.ArgumentParser:
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
    for name in COMMAND_MODULES:
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
    parser = build_parser()
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
