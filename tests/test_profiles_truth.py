"""Profiles that tell the truth (issue 20, item 5): perf-record never samples Valgrind, and
flame graphs of a binary built without frame pointers (Debian's redis-server) show Redis'
command path."""

from __future__ import annotations

from pathlib import Path

import pytest

from redis_benchmarks_spec.telemetry.profilers.base import ProfilerOptions
from redis_benchmarks_spec.telemetry.profilers.registry import conflict
from tests.cli import rbs_in_process, write_suite

SUITE = """version: 0.4
name: {name}
dbconfig:
  configuration-parameters:
    save: '""'
tested-groups: [string]
tested-commands: [get, set]
redis-topologies: [oss-standalone]
priority: 1
clientconfig:
  tool: redis-benchmark
  arguments: {args}
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


def _suites(folder: Path, name: str, args: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    write_suite(folder, name, SUITE.format(name=name, args=args))
    return folder


def test_perf_record_with_callgrind_instructions_is_refused(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    suites = _suites(tmp_path / "suites", "pr-refused", "-t set,get -n 1000")
    out = tmp_path / "out"
    code = rbs_in_process(["run", "--suites-dir", str(suites), "--no-datasink", "--results-dir",
                           str(out),
                           "--profilers", "perf-record,instructions", "--instructions-method",
                           "callgrind"])
    err = capsys.readouterr().err
    lines = [line for line in err.splitlines() if line.strip()]
    assert code == 2, err
    assert len(lines) == 1 and "Traceback" not in err, err
    assert "--profilers perf-record,instructions" in lines[0], lines[0]
    assert "Valgrind" in lines[0] and "separate runs" in lines[0], lines[0]
    assert not any(out.rglob("result.json"))  # nothing ran
    # either alone is fine, and so is perf stat counting instructions (no wrapper)
    assert conflict(ProfilerOptions(names=("perf-record",))) == ""
    assert conflict(ProfilerOptions(names=("instructions",), instructions_method="callgrind")) == ""
    assert conflict(ProfilerOptions(names=("perf-record", "instructions"),
                                    instructions_method="perf")) == ""


def _stack_has(folded: str, *path: str) -> int:
    """Samples whose stack holds ``path`` as consecutive frames (caller first)."""
    needle = ";".join(path)
    total = 0
    for line in folded.splitlines():
        stack, _, count = line.rpartition(" ")
        if f";{needle};" in f";{stack};":
            total += int(count)
    return total


def test_flame_graph_of_debians_binary_shows_the_command_path(
        capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Debian's redis-server has no frame pointers; the default unwinding must still see
    who called whom down to the command's own function."""
    suites = _suites(tmp_path / "suites", "pr-getset", "-t set,get -n 200000 -r 1000 -c 20")
    out = tmp_path / "out"
    code = rbs_in_process(["run", "--suites-dir", str(suites), "--no-datasink", "--results-dir",
                           str(out),
                           "--profilers", "perf-record", "--format", "json"])
    err = capsys.readouterr().err
    assert code == 0, err
    (folded_path,) = out.rglob("perf.folded")
    folded = folded_path.read_text()
    assert _stack_has(folded, "main", "aeMain") > 0
    assert _stack_has(folded, "processCommand", "call", "setCommand") > 0, folded[:2000]
    # getCommand tail-calls getGenericCommand, so the sampled frame is the latter
    assert _stack_has(folded, "processCommand", "call", "getGenericCommand") + \
        _stack_has(folded, "processCommand", "call", "getCommand") > 0
    (result,) = out.rglob("result.json")
    assert "--call-graph dwarf" in result.read_text()
