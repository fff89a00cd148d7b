"""The slips a new user met on a first day, each with a test, and a history of everything
run: runs without --branch are read by ``--version``/``--hash``, CSV and JSON carry every
column of the table with the same ``–`` for a missing commit. Real datasink (the embedded
redis-stack-server), real folders; nothing runs a benchmark."""

from __future__ import annotations

import csv
import dataclasses
import io
import json
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.compare import CompareOptions, Comparison, ComparisonReport
from redis_benchmarks_spec.analysis.context import SideInfo
from redis_benchmarks_spec.analysis.html_report import section_verdicts
from redis_benchmarks_spec.analysis.report import header_lines, to_markdown, to_rich_table
from redis_benchmarks_spec.analysis.report_data import ReportData
from redis_benchmarks_spec.analysis.sweep import CurvePoint, Knee, SweepCurve
from redis_benchmarks_spec.cli.console import export_console, print_table
from redis_benchmarks_spec.cli.sweep import curve_table
from redis_benchmarks_spec.common.numbers import plain_p
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.loadgen.base import ClientTarget
from redis_benchmarks_spec.loadgen.drivers import RedisBenchmarkDriver
from redis_benchmarks_spec.loadgen.memtier_driver import MemtierDriver
from redis_benchmarks_spec.runner.concurrency import PointDriver, PointLimits, PointRule
from redis_benchmarks_spec.suites.suite import ToolConfig
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    METRICS,
    TEST_NAME,
    client_fixture,
    datasink_fixture,
    make_result,
)
from tests.report_fixtures import write_side


def _url(client: redis.Redis) -> str:
    return f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"


def _one_error_line(err: str) -> str:
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert "Traceback" not in err and "internal error" not in err, err
    return lines[0]


# --- history of everything run ------------------------------------------------------------

def _local_runs(client: redis.Redis) -> None:
    """Runs of a packaged server without --branch: filed by version; one reported no commit."""
    docs = []
    for run in range(3):
        doc = make_result(run, branch=None, version="7.0.15",
                          hash="" if run == 0 else f"{run:x}" * 40)
        doc.context.repetition = run
        doc = dataclasses.replace(doc, redis_git_sha="00000000",
                                  metrics={METRICS[0]: 1000.0 + run})
        docs.append(doc)
    assert not push_results(client, docs).failed


def test_runs_without_a_branch_are_read_by_version(
        client: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    _local_runs(client)
    url = _url(client)
    # the branch history says where they are
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url]) == 2
    assert "--version 7.0.15" in _one_error_line(capsys.readouterr().err)
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--version",
                           "7.0.15"]) == 0
    table = capsys.readouterr().out
    assert "version 7.0.15" in table and "1,002" in table
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--version", "7.0.15",
                           "--format", "csv"]) == 0
    rows = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert list(rows[0]) == ["time_utc", "ts_ms", "value", "commit", "version", "repetition",
                             "run_id", "suspect"]  # suspect: measured on an artifact found bad
    assert {row["suspect"] for row in rows} == {""}  # none is
    assert [r["repetition"] for r in rows] == ["0", "1", "2"]
    assert rows[0]["commit"] == "–" and rows[1]["commit"] == "1" * 40  # as the table says
    assert all(r["time_utc"] and r["version"] == "7.0.15" for r in rows)
    assert rbs_in_process(["history", "--test", TEST_NAME, "--datasink", url, "--hash", "2" * 40,
                           "--format", "json"]) == 0
    (point,) = json.loads(capsys.readouterr().out)["points"]
    assert point["repetition"] == 2 and point["commit"] == "2" * 40


# --- the slips ----------------------------------------------------------------------------

def test_history_output_into_a_missing_folder_is_one_line(
        capsys: pytest.CaptureFixture[str]) -> None:
    assert rbs_in_process(["history", "--test", "t", "--format", "csv", "--output",
                           "/nonexistent-rbs/dir/h.csv"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--output /nonexistent-rbs/dir/h.csv" in line and "no such directory" in line


def test_history_of_a_test_no_suite_has_says_so(
        client: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    _local_runs(client)
    assert rbs_in_process(["history", "--test", "nosuchtest", "--datasink", _url(client)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "no suite named nosuchtest" in line and "rbs suites list" in line, line


def test_compare_with_a_platform_that_has_nothing_is_an_error(
        client: redis.Redis, capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    docs = [make_result(run, branch=None, version="7.0.15", platform="trial-a")
            for run in range(3)]
    assert not push_results(client, docs).failed
    url = _url(client)
    assert rbs_in_process(["compare", "--datasink", url, "--baseline-version", "7.0.15",
                           "--baseline-platform", "trial-a", "--comparison-platform",
                           "nosuchplat"]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert "--comparison-platform nosuchplat" in line and "trial-a" in line, line
    # with result folders the platform flags select nothing: said, not ignored
    base = write_side(tmp_path / "a", "1" * 40, "7.0.15", 1.0, runs=2)
    comp = write_side(tmp_path / "b", "2" * 40, "7.0.15", 1.0, runs=2)
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--comparison-platform", "nosuchplat"]) == 2
    assert "--comparison-platform" in _one_error_line(capsys.readouterr().err)


def test_a_side_named_by_its_version_says_the_version_once() -> None:
    side = SideInfo(label="version 7.0.15", versions=["7.0.15"], runs=3, platform="trial-a")
    context_line = header_lines(_context(side))[0]
    assert context_line.count("7.0.15") == 1, context_line
    assert "platform trial-a" in context_line


def _context(side: SideInfo):  # type: ignore[no-untyped-def]
    from redis_benchmarks_spec.analysis.context import CompareContext
    return CompareContext(baseline=side, comparison=side)


def test_p_values_are_plain_numbers_in_every_format() -> None:
    row = Comparison(test="t", metric=METRICS[0], n_baseline=6, n_comparison=6,
                     change_pct=-19.3, ci_low_pct=-19.5, ci_high_pct=-19.1,
                     p_value=1.78e-9, p_adjusted=1.78e-9, verdict="IMPROVEMENT")
    report = ComparisonReport((row,), CompareOptions())
    console = export_console()
    print_table(console, to_rich_table(report))
    html = section_verdicts(ReportData("t", METRICS[0], [], report=report), Path("."))
    for text in (console.export_text(), to_markdown(report), html):
        assert "e-09" not in text and "< 0.0001" in text.replace("&lt;", "<"), text[:500]
    assert plain_p(0.0312) == "0.0312" and plain_p(1.0) == "1"


def test_rbs_report_takes_html_as_its_output(tmp_path: Path,
                                             capsys: pytest.CaptureFixture[str]) -> None:
    folder = write_side(tmp_path / "r", "1" * 40, "7.0.15", 1.0, runs=2)
    assert rbs_in_process(["report", str(folder), "--html", str(tmp_path / "page.html")]) == 0
    assert (tmp_path / "page.html").read_text().startswith("<!DOCTYPE html>")
    assert rbs_in_process(["report", str(folder), "--html"]) == 0  # alone: the default place
    assert (folder / "report.html").is_file()
    capsys.readouterr()


def test_the_sweep_table_names_every_column_and_shows_the_max() -> None:
    points = [CurvePoint(float(c), 1000.0 * c, {"p50.00": 0.2, "p99.00": 0.5 * c}, str(c),
                         max_ms=2.0 * c) for c in (1, 8)]
    curve = SweepCurve("t", "clients", points, Knee(None, None, "no knee"))
    table = curve_table(curve)
    headers = [str(c.header) for c in table.columns]
    assert all(h.strip() for h in headers), headers
    assert headers[-2:] == ["max ms", "note"], headers
    console = export_console()
    print_table(console, table)
    assert "16" in console.export_text()  # the max of the second point


def test_warm_up_files_are_named_alike_in_runs_and_sweeps(tmp_path: Path) -> None:
    target, prefix = ClientTarget("127.0.0.1", 6379), tmp_path / "client-0"
    cfg = ToolConfig("redis-benchmark", "-t get -c 4 -n 1000")
    plain_run = RedisBenchmarkDriver("redis-benchmark").warmup(cfg, target, prefix, 2)
    assert plain_run is not None and plain_run.stdout_path.name == "client-0.warmup.out"
    limits = PointLimits.for_connections(4)
    swept = PointDriver(RedisBenchmarkDriver("redis-benchmark"), PointRule(), limits, 2)
    inv = swept.warmup(cfg, target, prefix, 2)
    assert inv is not None and inv.stdout_path.name == "client-0.warmup.out"
    memtier = PointDriver(MemtierDriver("memtier_benchmark"), PointRule(), limits, 2)
    inv = memtier.warmup(ToolConfig("memtier_benchmark", "-c 1 -t 4 --test-time 2"), target,
                         prefix, 2)
    assert inv is not None and inv.stdout_path.name == "client-0.warmup.out"
    assert inv.result_path is not None and inv.result_path.name == "client-0.warmup.json"


def test_datasink_status_counts_a_swept_test_once(
        client: redis.Redis, capsys: pytest.CaptureFixture[str]) -> None:
    docs = []
    for run, clients in enumerate(("1", "8", "64")):
        doc = make_result(run, hash=f"{run:x}" * 40)
        doc = dataclasses.replace(doc, sweep={"param": "clients", "value": clients})
        docs.append(doc)
    docs.append(make_result(5, test_name="other-test", hash="5" * 40))
    assert not push_results(client, docs).failed
    assert rbs_in_process(["datasink", "status", "--datasink", _url(client)]) == 0
    out = capsys.readouterr().out
    assert "tests known: 2 (3 swept value(s) of 1)" in out, out
