"""A report of an A/B session folder reads each document once: every result.json, the
``sequential.json`` record (whose metric the report is judged on) and the noise priors."""

from __future__ import annotations

import collections
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.analysis.sequential import SequentialPlan
from redis_benchmarks_spec.analysis.sequential_compare import SEQUENTIAL_RECORD, SequentialRecord
from redis_benchmarks_spec.inputs.reports import from_folder
from tests.datasink_fixtures import METRICS
from tests.report_fixtures import BASE_SHA, COMP_SHA, TESTS, write_side

_opened: collections.Counter[str] = collections.Counter()
_counting = False


def _hook(event: str, args: tuple[Any, ...]) -> None:
    if _counting and event == "open" and isinstance(args[0], str):
        _opened[args[0]] += 1


sys.addaudithook(_hook)  # audit hooks cannot be removed: this one counts only when asked


@pytest.fixture
def opened() -> Iterator[collections.Counter[str]]:
    global _counting
    _opened.clear()
    _counting = True
    try:
        yield _opened
    finally:
        _counting = False


def test_a_session_report_reads_each_document_once(tmp_path: Path,
                                                   opened: collections.Counter[str]) -> None:
    root = tmp_path / "session"
    write_side(root / "baseline", BASE_SHA, "7.2.4", 1.0, runs=4)
    write_side(root / "comparison", COMP_SHA, "7.2.5", 0.9, runs=4)
    latency = METRICS[1]  # not the default metric: the report must take it from the record
    record = SequentialRecord(SequentialPlan(8), latency, {t: [4] for t in TESTS},
                              {t: "max repetitions reached" for t in TESTS},
                              {t: 4 for t in TESTS})
    (root / SEQUENTIAL_RECORD).write_text(record.to_json())
    docs = sorted(str(p) for p in root.rglob("result.json"))
    assert len(docs) == 2 * 2 * 4
    opened.clear()
    page = from_folder(root, CompareOptions(), recorded_metric=True)
    assert page.metric == latency and page.report is not None
    assert sorted(r.test for r in page.report.rows) == sorted(TESTS)
    reads = {p: n for p, n in opened.items() if p.startswith(str(root))}
    assert {p: n for p, n in reads.items() if p.endswith("result.json")} == \
        {p: 1 for p in docs}
    assert reads[str(root / SEQUENTIAL_RECORD)] == 1
