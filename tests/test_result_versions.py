"""Result documents are read by any version (issue 32): a document written by an older
release of this package (tests/fixtures/results/v1-313c2e5.json, written by commit 313c2e5
from a real run) and one from the future (unknown fields everywhere, a higher schema
version) both read; a document with no schema version is refused with one line."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redis_benchmarks_spec.common.records import unknown
from redis_benchmarks_spec.results.document import SCHEMA_VERSION, RunResult

FIXTURE = Path(__file__).resolve().parent / "fixtures" / "results" / "v1-313c2e5.json"


def test_a_document_of_an_older_release_reads_with_defaults() -> None:
    raw = json.loads(FIXTURE.read_text())
    assert raw["schema_version"] == 1 and "cpu_placement" not in raw
    doc = RunResult.read(FIXTURE)
    assert doc.ok and doc.test_name == "old-set" and doc.tested_commands == ["set"]
    assert doc.metrics["ALL_STATS.Totals.Ops/sec"] > 0
    assert doc.cpu_placement == ""  # a field 313c2e5 did not write takes its default
    assert doc.binary is None and doc.context.build == {}  # v3's record of what ran
    assert doc.result is not None and doc.result.totals.ops_per_sec > 0
    # written again, it is a current document that reads back the same
    again = RunResult.from_dict(json.loads(doc.to_json()))
    assert again.schema_version == SCHEMA_VERSION and again.metrics == doc.metrics


def _future(raw: dict) -> dict:
    future = json.loads(json.dumps(raw))
    future["schema_version"] = 99
    future["a_field_from_the_future"] = {"x": 1}
    future["context"]["new_context_field"] = "yes"
    future["context"]["git"]["signed_by"] = "someone"
    for usage in future["cpu"].values():
        usage["p99_pct"] = 12.0
    if future.get("deployment"):
        future["deployment"]["new_deployment_field"] = 1
        for node in future["deployment"]["nodes"]:
            node["numa_node"] = 0
    if future.get("telemetry"):
        future["telemetry"]["host"]["new_host_fact"] = "x"
    return future


def test_a_document_from_the_future_reads_and_ignores_what_it_does_not_know() -> None:
    raw = json.loads(FIXTURE.read_text())
    future = _future(raw)
    assert "a_field_from_the_future" in unknown(RunResult, future)
    doc = RunResult.from_dict(future)
    assert doc.test_name == "old-set" and doc.context.git == RunResult.from_dict(raw).context.git
    assert doc.metrics == RunResult.from_dict(raw).metrics


def test_a_document_without_a_schema_version_is_refused_in_one_line(tmp_path: Path) -> None:
    raw = json.loads(FIXTURE.read_text())
    del raw["schema_version"]
    path = tmp_path / "result.json"
    path.write_text(json.dumps(raw))
    with pytest.raises(ValueError, match=r"result\.json: not a valid result document: no "
                                         r"result schema_version"):
        RunResult.read(path)
