"""A result document is built once (issue 32.1): the run's stages hand back frozen records,
``results.assembly.assemble`` makes the document from them, and nothing changes it after.

A real ``run_suites`` session (redis-server, redis-benchmark) returns frozen documents, an
ok one and a failed one, each equal to what it wrote; an AST count finds no assignment to a
document's fields anywhere in the package; the tool's data is stored as the tool wrote it.
"""

from __future__ import annotations

import ast
import dataclasses
import json
import math
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.loadgen.drivers import ToolPaths
from redis_benchmarks_spec.loadgen.result import drop_unmeasured_rates, exporter_data
from redis_benchmarks_spec.results.document import (
    STATUS_FAILED,
    STATUS_OK,
    RunResult,
    result_path,
)
from redis_benchmarks_spec.results.tool_result import CommandResult, LatencySummary, ToolResult
from redis_benchmarks_spec.runner.session import SessionConfig, run_suites
from redis_benchmarks_spec.suites.catalog import load_catalog
from tests.test_runner import suite

PACKAGE = Path(__file__).resolve().parents[1] / "redis_benchmarks_spec"
FIELDS = {f.name for f in dataclasses.fields(RunResult)}
CONTAINERS = {f.name for f in dataclasses.fields(RunResult)
              if str(f.type).startswith(("list", "dict"))}
MUTATORS = {"append", "extend", "insert", "update", "setdefault", "pop", "popitem", "clear",
            "remove", "sort", "reverse", "__setitem__"}
#: calls that return a RunResult
MAKERS = {"RunResult", "assemble", "read", "from_dict", "run_test", "replace"}


def test_a_real_run_returns_frozen_documents_equal_to_what_it_wrote(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    suites.mkdir()
    # long enough (~2 s) for the client to be sampled before it exits, on a loaded machine too
    suite(suites, "get", "-c 10 -n 30000 -r 100 GET key:__rand_int__", "get")
    # a keyspace check no preload meets: the test fails before its clients, after its server
    suite(suites, "short", "-c 1 -n 10 GET k", "get", "  check:\n    keyspacelen: 5\n")
    config = SessionConfig(tools=ToolPaths(), results_dir=tmp_path / "out")
    results = {r.test_name: r for r in run_suites(config, load_catalog(suites).suites)}
    ok, failed = results["get"], results["short"]
    assert ok.status == STATUS_OK, ok.reason
    assert failed.status == STATUS_FAILED and "keyspacelen" in failed.reason, failed.reason
    assert ok.metrics["ALL_STATS.Totals.Ops/sec"] > 0 and ok.cpu["client"].samples > 0
    assert failed.deployment is not None and failed.paths["server_log"]
    for doc in (ok, failed):
        with pytest.raises(dataclasses.FrozenInstanceError):
            doc.status = "changed"  # type: ignore[misc]
        with pytest.raises(dataclasses.FrozenInstanceError):
            doc.metrics = {}  # type: ignore[misc]
        stored = json.loads(result_path(config.results_dir, doc).read_text())
        assert stored == json.loads(doc.to_json()), doc.test_name
        assert RunResult.read(result_path(config.results_dir, doc)) == doc
    # the tool's data is what redis-benchmark printed: nothing of the run's own beside it
    assert ok.result is not None
    assert set(ok.result.data["ALL STATS"]["Totals"]) <= {
        "Ops/sec", "Average Latency", "Latency", "Min Latency", "Max Latency",
        "Percentile Latencies", "Count", "KB/sec"}, ok.result.data["ALL STATS"]["Totals"]


def _tool(rate: float, data: dict[str, Any]) -> ToolResult:
    return ToolResult("redis-benchmark", CommandResult(rate, LatencySummary(count=1)),
                      {"BGSAVE": CommandResult(rate, LatencySummary(count=1))}, data=data)


def test_the_tools_data_is_never_edited_the_exporter_reads_a_copy() -> None:
    raw = {"ALL STATS": {"BGSAVE": {"Ops/sec": math.inf}, "Totals": {"Ops/sec": math.inf}}}
    parsed = _tool(math.inf, raw)
    before = json.dumps(raw)
    dropped = drop_unmeasured_rates(parsed)
    assert dropped is not parsed and dropped.totals.ops_per_sec == 0.0
    assert "Ops/sec" not in json.dumps(dropped.data)  # JSON has no infinity: a new copy
    assert parsed.totals.ops_per_sec == math.inf and parsed.notes == []
    assert json.dumps(parsed.data) == before  # what the tool printed, untouched
    stored = json.dumps(dropped.data)
    view = exporter_data(dropped, {"RdbLastForkUsec": 120.0})
    assert view["ALL STATS"]["Totals"] == {"RdbLastForkUsec": 120.0}
    assert json.dumps(dropped.data) == stored  # the exporter's figures went into a copy
    measured = _tool(10.0, {"ALL STATS": {"Totals": {"Ops/sec": 10.0}}})
    assert exporter_data(measured, {}) is measured.data  # nothing to add: no copy


def _runresult_names(func: ast.AST) -> set[str]:
    """Names in ``func`` that hold a RunResult: annotated so, or bound to a maker's call."""
    names: set[str] = set()
    others: set[str] = set()  # bound to another call: not a document, whatever its name
    for node in ast.walk(func):
        if isinstance(node, ast.arg) and node.annotation is not None \
                and "RunResult" in ast.unparse(node.annotation):
            names.add(node.arg)
        elif isinstance(node, ast.AnnAssign) and isinstance(node.target, ast.Name) \
                and "RunResult" in ast.unparse(node.annotation):
            names.add(node.target.id)
        elif isinstance(node, ast.Assign) and isinstance(node.value, ast.Call):
            callee = node.value.func
            name = callee.attr if isinstance(callee, ast.Attribute) else \
                callee.id if isinstance(callee, ast.Name) else ""
            bound = {t.id for t in node.targets if isinstance(t, ast.Name)}
            if name in MAKERS:
                names |= bound
            else:
                others |= bound
        elif isinstance(node, ast.For) and isinstance(node.target, ast.Name) \
                and "result" in ast.unparse(node.iter):
            names.add(node.target.id)
    return names | ({"result", "doc"} - others)  # the package's names for a document


def _holder(node: ast.expr, names: set[str]) -> bool:
    """``node`` is a document: a name that holds one, or ``<anything>.result``."""
    return (isinstance(node, ast.Name) and node.id in names) or \
        (isinstance(node, ast.Attribute) and node.attr == "result")


def writes_to_documents(source: str) -> list[str]:
    """Every assignment to a RunResult field (``doc.status = ...``, ``doc.start_ms += 1``)
    and every in-place change of one of its lists or dicts (``doc.flags.append``,
    ``doc.paths[k] = v``, ``doc.metrics.update``), by name and by line."""
    found: set[tuple[int, str]] = set()
    tree = ast.parse(source)
    for func in ast.walk(tree):
        if not isinstance(func, (ast.FunctionDef, ast.AsyncFunctionDef, ast.Lambda)):
            continue
        names = _runresult_names(func)
        for node in ast.walk(func):
            targets: list[ast.expr] = []
            if isinstance(node, ast.Assign):
                targets = [e for t in node.targets for e in
                           (t.elts if isinstance(t, ast.Tuple) else [t])]
            elif isinstance(node, (ast.AugAssign, ast.AnnAssign)):
                targets = [node.target]
            elif isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute) \
                    and node.func.attr in MUTATORS:
                targets = [node.func.value]
            for target in targets:
                if isinstance(target, ast.Subscript):
                    target = target.value
                if isinstance(target, ast.Attribute) and target.attr in FIELDS \
                        and _holder(target.value, names) \
                        and (not isinstance(node, ast.Call) or target.attr in CONTAINERS):
                    found.add((getattr(node, "lineno", 0), ast.unparse(target)))
    return [f"{line}: {what}" for line, what in sorted(found)]


def test_the_counter_finds_writes_to_a_document() -> None:
    """The count below can fail: it finds each kind of write it looks for."""
    source = '''
def f(r: RunResult, other: Thing) -> None:
    r.status = "x"
    r.end_ms += 1
    r.flags.append("y")
    r.paths["k"] = "v"
    r.reason, r.log_tail = "a", "b"
    other.status = "fine"  # not a document
    run.result.metrics.update({})
    doc = RunResult.read(p)
    doc.sweep = {}
'''
    assert [w.split(": ")[1] for w in writes_to_documents(source)] == [
        "r.status", "r.end_ms", "r.flags", "r.paths", "r.log_tail", "r.reason",
        "run.result.metrics", "doc.sweep"]


def test_no_code_writes_to_a_document_after_it_is_made() -> None:
    writes = {str(path.relative_to(PACKAGE)): found for path in sorted(PACKAGE.rglob("*.py"))
              if (found := writes_to_documents(path.read_text()))}
    assert writes == {}, writes
