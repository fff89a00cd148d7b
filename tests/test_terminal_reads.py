"""A terminal that reads (issue 63, item 3), with the real commands at ``COLUMNS=100``:
a counted A/B's output fits 100 columns, its progress shows the judged metric with its unit,
notes about a metric it does not judge are one counted line and its counts say what they
count; ``rbs compare --html`` says where it wrote; ``rbs bisect`` calls an improvement's
commit the first commit of the improvement; ``rbs lab table`` shows each function's file in
the Redis tree and shares that add up to at most 100 %."""

from __future__ import annotations

import argparse
import dataclasses
import re
import shutil
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig
from redis_benchmarks_spec.analysis.lab_table import source_path
from redis_benchmarks_spec.cli.run_checks import default_results_dir
from redis_benchmarks_spec.datasink import lab_profile
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import DISTURBED, RunResult
from redis_benchmarks_spec.runner.ab import disturbed_problems
from tests.bisect_fixtures import BUSY_LOOP, WORK, bisect_suites, git, make_history
from tests.cli import rbs, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    make_result,
)

WIDE = 100
SCREEN = {"COLUMNS": str(WIDE)}
THROUGHPUT = "ALL_STATS.Totals.Ops/sec"
SUITE = """version: 0.4
name: reads-get
tested-groups: [string]
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 2 -n 2000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _wide_lines(text: str) -> list[str]:
    return [line for line in text.splitlines() if len(line) > WIDE]


@pytest.fixture(scope="module")
def counted_ab(tmp_path_factory: pytest.TempPathFactory
               ) -> tuple[Path, subprocess.CompletedProcess[str]]:
    """One counted A/B (the same redis-server on both sides, under callgrind) read at 100
    columns; its session folder and output."""
    root = tmp_path_factory.mktemp("ab")
    write_suite(root / "suites", "reads-get", SUITE)
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    out = rbs("run", "--suites-dir", str(root / "suites"), "--results-dir", str(root / "r"),
              "--baseline-server", server, "--comparison-server", server,
              "--repetitions", "3", "--profilers", "instructions", "--profile-requests", "1000",
              "--no-datasink", "--no-noise-prior", timeout=600, env=SCREEN)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    (session,) = (root / "r").iterdir()
    return session, out


def test_a_counted_ab_reads_at_100_columns(
        counted_ab: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    _, out = counted_ab
    assert _wide_lines(out.stdout) == [] and _wide_lines(out.stderr) == [], \
        (_wide_lines(out.stdout), _wide_lines(out.stderr))
    # every name and number is still whole: the verdict table as one block per row
    assert "reads-get" in out.stdout and "NO CHANGE" in out.stdout
    # progress: each run's judged metric with its unit, not a bare throughput
    runs = [line for line in out.stderr.splitlines() if line.startswith("rep ")]
    assert len(runs) == 6, out.stderr
    assert all(re.search(r": [\d,]+ instructions/op$", line) for line in runs), runs
    # the memory figures of the one test are counted as figures of it
    said = " ".join(out.stdout.split())  # lines wrapped at 100 columns, read as one text
    assert re.search(r"no change \(\d+ figures of 1 test\)", said), out.stdout
    assert "test(s))" not in said
    # the metric the session does not judge is never a line per run
    assert f"its pair is left out of {THROUGHPUT}" not in out.stdout + out.stderr
    text = out.stdout + out.stderr
    assert "disturbed (other processes used" not in text
    assert len(re.findall(r"run\(s\) disturbed by other processes", text)) <= 1, text


def test_disturbed_runs_of_a_metric_not_judged_are_one_counted_line(
        counted_ab: tuple[Path, subprocess.CompletedProcess[str]]) -> None:
    """The session's own documents, every run marked disturbed: one line counts them for
    the timed metric measured under callgrind; a run not profiled still names its pair."""
    session, _ = counted_ab
    docs = [RunResult.read(p) for p in sorted(session.rglob("result.json"))]
    assert len(docs) == 6
    busy = [dataclasses.replace(d, flags=[*d.flags, DISTURBED]) for d in docs]
    assert disturbed_problems(busy, THROUGHPUT) == [
        (f"6 of 6 run(s) disturbed by other processes: {THROUGHPUT} is not judged (measured "
         "under a profiler), so no pair is left out")]
    timed = [dataclasses.replace(d, flags=[DISTURBED]) for d in docs[:2]]
    lines = disturbed_problems(timed, THROUGHPUT)
    assert len(lines) == 2 and all(f"left out of {THROUGHPUT}" in line for line in lines)


def test_compare_html_says_where_it_wrote(
        counted_ab: tuple[Path, subprocess.CompletedProcess[str]], tmp_path: Path) -> None:
    session, _ = counted_ab
    page = tmp_path / "compare.html"
    out = rbs("compare", "--baseline-dir", str(session / "baseline"), "--comparison-dir",
              str(session / "comparison"), "--html", str(page), timeout=300, env=SCREEN)
    assert out.returncode == 0, out.stderr[-3000:]
    assert page.is_file()
    assert f"report: {page}" in " ".join(out.stdout.split()), out.stdout[-2000:]
    assert _wide_lines(out.stdout) == []
    doc = tmp_path / "compare.md"
    md = rbs("compare", "--baseline-dir", str(session / "baseline"), "--comparison-dir",
             str(session / "comparison"), "--format", "markdown", "--output", str(doc),
             "--html", str(page), timeout=300, env=SCREEN)
    assert md.returncode == 0 and doc.is_file(), md.stderr[-3000:]
    said = " ".join(md.stdout.split())
    assert f"markdown report: {doc}" in said and f"report: {page}" in said, md.stdout


def test_ab_results_go_where_help_says() -> None:
    help_text = " ".join(rbs("run", "--help", timeout=120, env=SCREEN).stdout.split())
    assert "A/B sessions: results/ab/" in help_text
    keys = ("baseline_server", "comparison_server", "baseline_commit", "comparison_commit")
    for given in keys:
        args = argparse.Namespace(**{**dict.fromkeys(keys), given: "x"})
        assert default_results_dir(args).parts[-2:] == ("results", "ab"), given
    plain = argparse.Namespace(**dict.fromkeys(keys))
    assert default_results_dir(plain).name == "results"


def _improvement_history(root: Path) -> tuple[Path, list[str]]:
    """The busy loop in GET (the bisect tests' history), a harmless commit, then a commit
    that takes the loop out again: an improvement."""
    repo, shas = make_history(root, BUSY_LOOP)
    path = repo / "src" / "t_string.c"
    path.write_text(path.read_text().replace(BUSY_LOOP, "", 1))
    git(repo, "commit", "-q", "-am", "faster GET (#4242)")
    return repo, [*shas, git(repo, "rev-parse", "HEAD")]


@pytest.fixture(scope="module")
def improvement(tmp_path_factory: pytest.TempPathFactory
                ) -> tuple[list[str], subprocess.CompletedProcess[str], float]:
    """``rbs bisect --local`` from the busy loop to the commit that removes it."""
    root = tmp_path_factory.mktemp("improve")
    repo, shas = _improvement_history(root / "src")
    started = time.time()
    out = rbs("bisect", "--local", "--repo", str(repo), "--good", shas[2], "--bad", shas[4],
              "--test", "bisect-get", "--suites-dir", str(bisect_suites(root / "suites")),
              "--work-dir", str(WORK), "--repetitions", "2", "--metric", "instructions",
              "--profile-requests", "1000", timeout=3000, env=SCREEN)
    return shas, out, started


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_bisect_names_an_improvement_for_what_it_is(
        improvement: tuple[list[str], subprocess.CompletedProcess[str], float]) -> None:
    shas, out, _ = improvement
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    assert _wide_lines(out.stdout) == [], out.stdout
    said = " ".join(out.stdout.split())
    assert f"first commit of the improvement: {shas[4]} (PR #4242)" in said, out.stdout
    assert "bad commit" not in said
    assert re.search(r": -\d+\.\d\d% instructions_per_op against --good", said), out.stdout


def _real_runs(started: float) -> list[RunResult]:
    """The bisection's counted runs (its probes, in its work folder), newest session."""
    docs = [p for p in (WORK / "runs").rglob("result.json") if p.stat().st_mtime >= started]
    return [RunResult.read(p) for p in sorted(docs)]


def _as_tracked(n: int, real: RunResult, sha: str) -> RunResult:
    """A real counted run filed as the lab's run of ``sha`` on the tracked branch."""
    r = make_result(n, test_name=real.test_name, platform="lab-a", hash=sha)
    return dataclasses.replace(r, run_id=f"{r.run_id}:{n}", tested_groups=["string"],
                               metrics=real.metrics, paths=real.paths)


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_lab_table_shows_files_in_the_redis_tree_and_shares_within_100(
        improvement: tuple[list[str], subprocess.CompletedProcess[str], float],
        client: redis.Redis, datasink: Any) -> None:
    shas, out, started = improvement
    assert out.returncode == 0, out.stderr[-3000:]
    runs = [r for r in _real_runs(started) if r.paths.get("instructions_functions")]
    def of(sha: str) -> RunResult:  # a run of the build of ``sha`` (its short sha)
        return next(r for r in runs if r.redis_git_sha and sha.startswith(r.redis_git_sha))
    slow, fast = of(shas[2]), of(shas[4])
    assert ".cache" in Path(slow.paths["instructions_functions"]).read_text()
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n, (sha, real) in enumerate(((shas[2], slow), (shas[4], fast))):
        tracked = _as_tracked(n, real, sha)
        push_results(client, [tracked])
        watch.arrived([tracked])
    # an older agent's entry of the whole process: its functions sum to 3x its count
    lab_profile.record(client, ("redis", "redis", "unstable"), shas[4], "old-agent",
                       (1000.0, [("serverCron", "/x/.cache/tree/src/server.c", 2000.0),
                                 ("lookupKey", "/x/.cache/tree/src/db.c", 1000.0)]),
                       ("string",))
    table = rbs("lab", "table", "--datasink", datasink.url, timeout=300, env=SCREEN)
    assert table.returncode == 0, table.stderr
    assert _wide_lines(table.stdout) == [], table.stdout
    assert ".cache" not in table.stdout
    # one row a function (a deep header's path may fold onto a second line of its cell)
    rows = [[c.strip() for c in line.split("│")[1:-1]] for line in table.stdout.splitlines()
            if line.startswith("│")]
    rows = [r for r in rows if len(r) == 5 and r[0]]
    assert len(rows) == 15, table.stdout
    files = {function: file for function, file, *_ in rows}
    assert files.get("call") == "src/server.c", files
    assert files.get("lookupKey") == "src/db.c", files
    assert all(f.startswith(("src/", "deps/")) for f in files.values()), files
    shares = [float(r[2].rstrip("%")) for r in rows]
    assert 50.0 < sum(shares) <= 100.0, shares
    total = re.search(r"these \d+ function\(s\): ([\d.]+)% of the instructions", table.stdout)
    assert total is not None and abs(float(total.group(1)) - sum(shares)) < 0.05


def test_source_path_is_the_path_in_the_redis_tree() -> None:
    assert source_path("/home/u/rbs/.cache/bisect-test/tree/src/t_set.c") == "src/t_set.c"
    assert source_path("/b/tree/deps/jemalloc/src/jemalloc.c") == "deps/jemalloc/src/jemalloc.c"
    assert source_path("/b/tree/deps/hiredis/sds.c") == "deps/hiredis/sds.c"
    assert source_path("./string/../sysdeps/x86_64/strlen.S") == \
        "./string/../sysdeps/x86_64/strlen.S"
