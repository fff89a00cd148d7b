"""``rbs``: the command-line entry point. Each command group lives in its own module with a
``register(subparsers)`` function; this file only wires them together."""

from __future__ import annotations

import argparse
import importlib
import logging
import sys

from redis_benchmarks_spec import __version__

# one module per command group, in the order they appear in --help
COMMAND_MODULES = [
    "redis_benchmarks_spec.cli.suites",
    "redis_benchmarks_spec.cli.run",
    "redis_benchmarks_spec.cli.pipeline",
    "redis_benchmarks_spec.cli.compare",
    "redis_benchmarks_spec.cli.datasink",
    "redis_benchmarks_spec.cli.daemons",
]


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="rbs",
        description="redis-benchmarks-spec: run Redis benchmark suites, store results in "
                    "RedisTimeSeries, compare builds, and run the CI pipeline.",
    )
    parser.add_argument("--version", action="version", version=f"%(prog)s {__version__}")
    parser.add_argument("-v", "--verbose", action="store_true", help="debug logging")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", required=True)
    for name in COMMAND_MODULES:
        importlib.import_module(name).register(sub)
    return parser


def main(argv: list[str] | None = None) -> int:
    parser = build_parser()
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.DEBUG if args.verbose else logging.INFO,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    return int(args.func(args) or 0)


if __name__ == "__main__":
    sys.exit(main())
