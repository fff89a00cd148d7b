"""Output that fits: names, numbers and verdicts are never cut, piped or in an 80-column
terminal; ``--format`` documents; one line per finished test when not interactive."""

from __future__ import annotations

import csv
import io
import json
import subprocess
from pathlib import Path

import pytest
from rich.console import Console

from redis_benchmarks_spec.analysis.compare import CompareOptions, compare_samples
from redis_benchmarks_spec.analysis.report import to_rich_table
from redis_benchmarks_spec.cli.console import print_table
from redis_benchmarks_spec.cli.display import render_results, results_table
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs, write_suite

NARROW = {"COLUMNS": "80"}  # every rbs here prints for an 80-column terminal
#: a pipe that asks no width (COLUMNS unset): tables at their natural width, however wide
PIPED = {"COLUMNS": ""}
LONG = "redis-benchmark-a-suite-name-long-enough-to-be-cut-at-eighty-columns"
SUITE = """version: 0.4
name: {name}
tested-groups: [string]
tested-commands: [{cmd}]
redis-topologies: [oss-standalone]
clientconfig:
  tool: redis-benchmark
  arguments: -n 5000 -t {cmd}
exporter:
  redistimeseries:
    metrics:
      - $."ALL STATS".Totals."Ops/sec"
"""


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One piped `rbs run` of two long-named suites; its results directory and output."""
    root = tmp_path_factory.mktemp("out")
    suites = root / "suites"
    for name, cmd in ((LONG, "set"), (LONG + "-get", "get")):
        write_suite(suites, name, SUITE.format(name=name, cmd=cmd))
    out = rbs("run", "--suites-dir", str(suites), "--results-dir", str(root / "results"),
              "--no-datasink", timeout=180, env=PIPED)
    assert out.returncode == 0, out.stdout + out.stderr
    (session_dir,) = (root / "results").iterdir()
    return session_dir, out


def _results(session_dir: Path) -> list[RunResult]:
    return [RunResult.read(p) for p in sorted(session_dir.rglob("result.json"))]


def test_piped_run_shows_whole_names_and_a_line_per_test(
        session: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    session_dir, out = session
    assert "…" not in out.stdout
    finished = [line for line in out.stderr.splitlines() if line.startswith("     ok ")]
    assert len(finished) == 2, out.stderr  # one line per finished test, no progress bar
    assert not [line for line in out.stdout.splitlines() if line.startswith("     ok ")]
    for result in _results(session_dir):
        ops = f"{result.result.totals.ops_per_sec:,.0f}"
        table_rows = [line for line in out.stdout.splitlines()
                      if f" {result.test_name} " in line and "│" in line]
        assert len(table_rows) == 1 and ops in table_rows[0], out.stdout


def test_80_column_terminal_shows_every_name_and_number(
        session: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results = _results(session[0])
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    print_table(console, results_table(results))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "…" not in text and max(len(line) for line in text.splitlines()) <= 80
    for result in results:
        assert result.test_name in text
        assert f"{result.result.totals.ops_per_sec:,.0f}" in text


def test_compare_verdicts_whole_in_a_terminal_and_in_a_pipe(
        session: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    samples = {LONG: ([100.0, 101, 99, 100, 102], [80.0, 81, 79, 80, 82]),
               LONG + "-get": ([100.0, 101, 99], [100.0, 100, 101])}
    report = compare_samples(samples, CompareOptions())
    console = Console(file=io.StringIO(), width=80, force_terminal=True, color_system=None)
    print_table(console, to_rich_table(report))
    text = console.file.getvalue()  # type: ignore[attr-defined]
    assert "REGRESSION" in text and LONG in text and "…" not in text
    session_dir = session[0]
    piped = rbs("compare", "--baseline-dir", str(session_dir), "--comparison-dir",
                str(session_dir), timeout=180, env=NARROW)
    assert piped.returncode == 0, piped.stderr
    assert "…" not in piped.stdout and LONG in piped.stdout


def test_formats(session: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    results = _results(session[0])
    rows = json.loads(render_results(results, "json"))
    assert {r["test_name"] for r in rows} == {LONG, LONG + "-get"}
    assert all(r["ops_per_sec"] > 0 for r in rows)
    parsed = list(csv.DictReader(io.StringIO(render_results(results, "csv"))))
    assert [r["test_name"] for r in parsed] == [r["test_name"] for r in rows]
    markdown = render_results(results, "markdown").splitlines()
    assert markdown[0].startswith("| test | topology | status | ops/sec")
    assert len(markdown) == 2 + len(results)


def test_run_format_json_owns_stdout(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "one", SUITE.format(name="one", cmd="set"))
    out = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "r"),
              "--no-datasink", "--format", "json", timeout=180, env=NARROW)
    assert out.returncode == 0, out.stderr
    rows = json.loads(out.stdout)  # nothing but the document on stdout
    assert rows[0]["test_name"] == "one" and rows[0]["status"] == "ok"
    assert "one" in out.stderr  # the finished-test line went to stderr


def test_dry_run_keeps_bracketed_topology(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "one", SUITE.format(name="one", cmd="set"))
    out = rbs("run", "--suites-dir", str(suites), "--dry-run",
                timeout=180, env=NARROW)
    assert out.returncode == 0 and "one [oss-standalone] redis-benchmark" in out.stdout


def test_dry_run_counts_repetitions_and_sweep_values_and_speaks_json(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "one", SUITE.format(name="one", cmd="set"))
    swept = rbs("run", "--suites-dir", str(suites), "--dry-run", "--sweep", "clients=1,8,64",
                "--test-time", "2", timeout=180, env=NARROW)
    assert swept.returncode == 0, swept.stderr
    assert "plan: 1 test(s) x 3 clients values (1,8,64) = 3 run(s); --test-time 2" \
        in swept.stdout, swept.stdout
    doc = rbs("run", "--suites-dir", str(suites), "--dry-run", "--repetitions", "3",
              "--format", "json", timeout=180, env=NARROW)
    plan = json.loads(doc.stdout)  # the plan alone on stdout
    assert plan["runs"] == 3 and plan["repetitions"] == 3 and plan["sweep"] is None
    assert [t["test"] for t in plan["tests"]] == ["one"]
    assert plan["tests"][0]["topology"] == "oss-standalone"


def test_redis_benchmark_p95_and_max_kept_p999_only_when_measured(
        session: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    session_dir, out = session
    rows = json.loads(render_results(_results(session_dir), "json"))
    assert all(r["p95_ms"] > 0 and r["max_ms"] >= r["p99_ms"] for r in rows)
    assert all(r["p999_ms"] is None for r in rows)  # redis-benchmark does not report it
    assert "p95 ms" in out.stdout and "max ms" in out.stdout and "p99.9" not in out.stdout


def test_verbose_anywhere_and_help_with_defaults() -> None:
    from redis_benchmarks_spec.cli.main import build_parser
    parser = build_parser()
    assert parser.parse_args(["-v", "suites", "list"]).verbose is True
    assert parser.parse_args(["suites", "list", "-v"]).verbose is True
    assert parser.parse_args(["datasink", "status", "--verbose"]).verbose is True
    assert parser.parse_args(["suites", "list"]).verbose is False
    compare_help = " ".join(rbs("compare", "--help", timeout=180, env=NARROW).stdout.split())
    assert "``" not in compare_help and "`rbs compare`" in compare_help
    assert "(default 0.05)" in compare_help and "(default: table)" in compare_help
    run_help = " ".join(rbs("run", "--help", timeout=180, env=NARROW).stdout.split())
    assert "(default: local)" in run_help and "(default: process)" in run_help


TWO_TOPOLOGIES = SUITE.replace("redis-topologies: [oss-standalone]",
                               "redis-topologies: [oss-standalone, oss-standalone-02-io-threads]")


def test_a_suite_runs_in_its_first_topology_unless_all_are_asked_for(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "two", TWO_TOPOLOGIES.format(name="two", cmd="set"))
    first = rbs("run", "--suites-dir", str(suites), "--test", "two", "--dry-run",
                timeout=180, env=NARROW)
    assert first.returncode == 0, first.stderr
    assert first.stdout.count("two [") == 1 and "two [oss-standalone] " in first.stdout
    assert "--all-topologies" in first.stderr  # says what else the suite lists
    every = rbs("run", "--suites-dir", str(suites), "--test", "two", "--dry-run",
                "--all-topologies", timeout=180, env=NARROW)
    assert every.stdout.count("two [") == 2 and "[oss-standalone-02-io-threads]" in every.stdout
    one = rbs("run", "--suites-dir", str(suites), "--dry-run",
              "--topology", "oss-standalone-02-io-threads", timeout=180, env=NARROW)
    assert one.stdout.count("two [") == 1 and "[oss-standalone-02-io-threads]" in one.stdout


def test_repetitions_have_a_column_and_logs_stay_off_stdout(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "one", SUITE.format(name="one", cmd="set"))
    out = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp_path / "r"),
              "--no-datasink", "--repetitions", "2", "--test-time", "1", "--cpus", "0",
              timeout=180, env=PIPED)
    assert out.returncode == 0, out.stderr
    rows = [line for line in out.stdout.splitlines() if "│ one " in line]
    assert [[c.strip() for c in row.split("│")][2:4] for row in rows] == [
        ["oss-standalone", "0"], ["oss-standalone", "1"]], out.stdout
    assert "┃ rep ┃" in out.stdout
    # the shared-cores warning is a log line: stderr only; stdout is the results
    assert " WARNING " in out.stderr and " WARNING " not in out.stdout
    assert "one [oss-standalone] rep 1 " in out.stderr
    parsed = list(csv.DictReader(io.StringIO(
        (next((tmp_path / "r").iterdir()) / "summary.csv").read_text())))
    assert [r["repetition"] for r in parsed] == ["0", "1"]


def test_an_unparseable_suite_is_named_with_its_reason_not_only_counted(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "one", SUITE.format(name="one", cmd="set"))
    write_suite(suites, "broken", "version: 0.4\nname: broken\n  bad: [unclosed\n")
    run = rbs("run", "--suites-dir", str(suites), "--test", "one", "--dry-run",
                timeout=180, env=NARROW)
    assert run.returncode == 0, run.stderr
    assert f"{suites / 'broken.yml'}: unparseable YAML" in run.stderr, run.stderr
    listed = rbs("suites", "list", str(suites), timeout=180, env=NARROW)
    assert f"{suites / 'broken.yml'}: unparseable YAML" in listed.stderr, listed.stderr


def _parsers(parser: object) -> list[object]:
    import argparse
    found = [parser]
    for action in parser._actions:  # type: ignore[attr-defined]
        if isinstance(action, argparse._SubParsersAction):
            for sub in action.choices.values():
                found += _parsers(sub)
    return found


def test_no_help_shows_text_written_for_maintainers() -> None:
    from redis_benchmarks_spec.cli.main import build_parser
    parsers = _parsers(build_parser())
    assert len(parsers) > 20
    for parser in parsers:
        text = parser.format_help()  # type: ignore[attr-defined]
        for internal in (":mod:", ":func:", ":class:", "``", "Parsing and"):
            assert internal not in text, (parser.prog, internal)  # type: ignore[attr-defined]
    report = " ".join(rbs("report", "--help", timeout=180, env=NARROW).stdout.split())
    assert "self-contained HTML page" in report and "analysis.report_data" not in report
