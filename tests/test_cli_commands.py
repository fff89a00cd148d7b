"""``rbs`` builds the parser of the one command it was given (cli/main.py ``COMMANDS``): the
table of which module registers which command must be what the modules really register, or a
command would be missing from its own process."""

from __future__ import annotations

import importlib

from redis_benchmarks_spec.cli.main import COMMANDS, _modules_for, build_parser
from redis_benchmarks_spec.cli.parser import RbsParser


def test_the_table_names_what_each_module_registers() -> None:
    for module, names in COMMANDS.items():
        parser = RbsParser(prog="t")
        sub = parser.add_subparsers(dest="command")
        importlib.import_module(module).register(sub)
        assert set(sub.choices) == set(names), module


def test_a_command_line_builds_only_its_command_and_help_builds_every_one() -> None:
    assert _modules_for(["compare", "--baseline-dir", "a"]) == ["redis_benchmarks_spec.cli.compare"]
    assert _modules_for(["-v", "agent", "--help"]) == ["redis_benchmarks_spec.cli.daemons"]
    every = list(COMMANDS)
    assert _modules_for([]) == every and _modules_for(["--help"]) == every
    assert _modules_for(["-h", "run"]) == every and _modules_for(["nope"]) == every
    argv = ["compare", "--baseline-dir", "a", "--comparison-dir", "b"]
    lazy = build_parser(argv, every=False)
    full = build_parser()
    assert vars(lazy.parse_args(argv)).keys() == vars(full.parse_args(argv)).keys()
