"""The command path's instruction count from a callgrind dump: processCommand's inclusive
cost, less its calls into the command table, plus the timer's rehashing (the call edges of
the documented callgrind format)."""

from __future__ import annotations

from redis_benchmarks_spec.telemetry.profilers.callgrind import parse_callgrind
from redis_benchmarks_spec.telemetry.profilers.instructions import command_path_instructions

DUMP = """# callgrind format
version: 1
positions: line
events: Ir
summary: 2000

ob=(1) /usr/bin/redis-server
fl=(1) server.c
fn=(1) processCommand
10 100
cfn=(2) lookupCommandLogic
calls=1 20
10 250
cfn=(3) call
calls=1 30
10 1200

fn=(2)
20 250

fn=(3)
30 1000
cfn=(4) dictRehash
calls=1 40
30 200

fn=(4)
40 200

fn=(5) serverCron
50 50
cfn=(6) dictRehashMilliseconds
calls=1 60
50 120

fn=(6)
60 20
cfn=(4)
calls=1 40
60 100
"""


def test_the_command_path_leaves_the_lookup_out_and_keeps_all_rehashing() -> None:
    profile = parse_callgrind(DUMP)
    (pc,) = profile.by_name("processCommand")
    assert pc.inclusive_ir == 100 + 250 + 1200
    assert profile.edge("processCommand", ("lookupCommandLogic", "dictFind")) == 250
    # 1,550 inclusive - 250 of command-table lookup + 120 of rehashing done by the timer
    assert command_path_instructions([profile]) == 1550 - 250 + 120


def test_a_binary_without_process_command_has_no_command_path() -> None:
    profile = parse_callgrind(DUMP.replace("processCommand", "someOtherName"))
    assert command_path_instructions([profile]) == 0
