"""Exporter metric names and JSONPath evaluation."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from redis_benchmarks_spec.loadgen.exporter import evaluate_metrics, metric_name

FIXTURES = Path(__file__).resolve().parent / "fixtures" / "memtier"
SHARED = Path(__file__).resolve().parents[2] / "shared" / "samples" / "memtier"
SAMPLES = FIXTURES if FIXTURES.is_dir() else SHARED


@pytest.mark.parametrize(("path", "name"), [
    ('$."ALL STATS".Totals."Ops/sec"', "ALL_STATS.Totals.Ops/sec"),
    ('$."ALL STATS".Totals."Percentile Latencies"."p50.00"',
     "ALL_STATS.Totals.Percentile_Latencies.p50.00"),
    ('$."BEST RUN RESULTS".Totals."Ops/sec"', "BEST_RUN_RESULTS.Totals.Ops/sec"),
    ("$['ALL STATS']['Totals']['Ops/sec']", "ALL_STATS.Totals.Ops/sec"),
    ("$.'ALL STATS'.Totals.'Percentile Latencies'.'p99.90'",
     "ALL_STATS.Totals.Percentile_Latencies.p99.90"),
    ('$."AGGREGATED AVERAGE RESULTS (3 runs)".Gets."Ops/sec"',
     "AGGREGATED_AVERAGE_RESULTS_(3_runs).Gets.Ops/sec"),
])
def test_metric_name_normalisation(path: str, name: str) -> None:
    assert metric_name(path) == name


def test_memtier_sample_metrics() -> None:
    data = json.loads((SAMPLES / "memtier-basic-5s.json").read_text())
    metrics, missing = evaluate_metrics(data, [
        '$."ALL STATS".Totals."Ops/sec"',
        '$."ALL STATS".Totals."Percentile Latencies"."p50.00"',
        "$['ALL STATS']['Gets']['Percentile Latencies']['p99.90']",
        '$."ALL STATS".Runtime."Start time"',
    ])
    assert missing == []
    assert metrics == {
        "ALL_STATS.Totals.Ops/sec": 93011.76,
        "ALL_STATS.Totals.Percentile_Latencies.p50.00": 0.143,
        "ALL_STATS.Gets.Percentile_Latencies.p99.90": 4.127,
        "ALL_STATS.Runtime.Start_time": 1795330316026.0,
    }


def test_best_run_quoting_of_a_multi_run_file() -> None:
    data = json.loads((SAMPLES / "memtier-runcount3-5s.json").read_text())
    metrics, missing = evaluate_metrics(data, ['$."BEST RUN RESULTS".Totals."Ops/sec"'])
    assert missing == [] and metrics == {"BEST_RUN_RESULTS.Totals.Ops/sec": 79930.79}


def test_unquoted_spaces_are_requoted() -> None:
    data = {"ALL STATS": {"Totals": {"Ops/sec": 5}}}
    metrics, missing = evaluate_metrics(data, ["$.ALL STATS.Totals.Ops/sec"])
    assert (metrics, missing) == ({"ALL_STATS.Totals.Ops/sec": 5.0}, [])


def test_misses_are_reported_never_dropped() -> None:
    data = {"ALL STATS": {"Totals": {"Ops/sec": 1.5, "Interrupted": "false",
                                     "Runtime": {"a": 1}}, "Sets": {"Ops/sec": 2}}}
    paths = ['$."ALL STATS".Totals."Ops/sec"', '$."ALL STATS".Totals."p99.99"',
             '$."ALL STATS".Totals.Interrupted', '$."ALL STATS".Totals.Runtime',
             '$.."Ops/sec"', "$[[[", "$['ALL STATS'].Totals['Ops/sec']"]
    metrics, missing = evaluate_metrics(data, paths)
    assert metrics == {"ALL_STATS.Totals.Ops/sec": 1.5}
    assert len(metrics) + len(missing) == len(paths)
    assert missing[0] == '$."ALL STATS".Totals."p99.99"'  # matched nothing: the bare path
    assert "not a number" in missing[1] and "not a number" in missing[2]
    assert "matched 2 values" in missing[3]
    assert "invalid JSONPath" in missing[4]
    assert "same metric name" in missing[5]


def test_numeric_strings_count_but_booleans_do_not() -> None:
    data = {"a": "12.5", "b": True, "c": float("nan")}
    metrics, missing = evaluate_metrics(data, ["$.a", "$.b", "$.c"])
    assert metrics == {"a": 12.5}
    assert [m.split(" ")[0] for m in missing] == ["$.b", "$.c"]
