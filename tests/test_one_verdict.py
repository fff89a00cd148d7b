"""One session, every surface, one verdict: the A/B table's JSON, ``rbs compare`` of the
session's two folders (JSON and Markdown), ``rbs report`` (HTML), the pull-request comment
body and bisect's judgement give the same verdicts, intervals and pair counts. Real
redis-server and redis-benchmark; the comparison side fsyncs every write (a real slowdown
of SET, none of GET)."""

from __future__ import annotations

import json
import shutil
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.analysis.compare import CompareOptions, ComparisonReport
from redis_benchmarks_spec.analysis.engine import Judging, judge, judge_pairs
from redis_benchmarks_spec.analysis.session_runs import pair_runs
from redis_benchmarks_spec.inputs.reports import from_ab_session
from redis_benchmarks_spec.inputs.session_folder import load_session
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section
from tests.cli import rbs, write_suite

METRIC = "ALL_STATS.Totals.Ops/sec"
SUITE = """
name: one-{cmd}
tested-commands: [{cmd}]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 4000 -r 1000 -t {cmd}
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _json(stdout: str) -> dict[str, Any]:
    return json.loads(stdout[stdout.index("{"):stdout.rindex("}") + 1])


def _rows(report: dict[str, Any]) -> dict[str, tuple[Any, ...]]:
    """What must agree: verdict, change, interval and the pairs used and left out."""
    def rounded(v: float | None) -> float | None:
        return None if v is None else round(v, 6)
    return {r["test"]: (r["verdict"], rounded(r["change_pct"]), rounded(r["ci_low_pct"]),
                        rounded(r["ci_high_pct"]), r["n_baseline"], r["n_comparison"],
                        r["n_disturbed"]) for r in report["rows"]}


SECTION = {"NO CHANGE": "No change", "REGRESSION": "Regressions", "IMPROVEMENT": "Improvements",
           "UNKNOWN": "Unknown", "BUSY": "Busy"}


def _markdown_agrees(text: str, expected: dict[str, tuple[Any, ...]]) -> None:
    """Each test's row sits in its verdict's section ("### ... Unknown (1)"; "No change" is
    folded in a <details>) with the expected pair counts."""
    lines = text.splitlines()
    for test, row in expected.items():
        at = next(i for i, x in enumerate(lines)
                  if x.startswith(f"| `{test}`") and f"{row[4]} / {row[5]}" in x)
        section = next(x for x in reversed(lines[:at]) if x.startswith(("###", "<details>")))
        assert SECTION[row[0]] in section, (section, lines[at])


@pytest.fixture(scope="module")
def session(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, dict[str, Any]]:
    tmp = tmp_path_factory.mktemp("one-verdict")
    suites = tmp / "suites"
    suites.mkdir()
    for cmd in ("set", "get"):
        write_suite(suites, cmd, SUITE.format(cmd=cmd))
    server = shutil.which("redis-server") or "redis-server"
    done = rbs("run", "--suites-dir", str(suites), "--results-dir", str(tmp / "out"),
               "--baseline-server", server, "--comparison-server", server,
               "--comparison-server-args", "--appendonly yes --appendfsync always",
               "--repetitions", "5", "--format", "json", "--no-datasink", timeout=900)
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-3000:]
    (root,) = list((tmp / "out").iterdir())
    return root, _json(done.stdout)


def test_every_surface_gives_the_runs_verdicts(session: tuple[Path, dict[str, Any]]) -> None:
    root, run_json = session
    expected = _rows(run_json)
    assert set(expected) == {"one-set", "one-get"}
    # the real slowdown is decided on at least SET (fsync on every write), from real pairs
    assert expected["one-set"][0] in ("REGRESSION", "BUSY"), run_json["rows"]

    compared = rbs("compare", "--baseline-dir", str(root / "baseline"),
                   "--comparison-dir", str(root / "comparison"), "--metric", METRIC,
                   "--format", "json")
    assert compared.returncode == 0, compared.stderr
    assert _rows(_json(compared.stdout)) == expected
    assert _json(compared.stdout)["context"]["paired"] is True

    markdown = rbs("compare", "--baseline-dir", str(root / "baseline"),
                   "--comparison-dir", str(root / "comparison"), "--format", "markdown")
    _markdown_agrees(markdown.stdout, expected)

    page = from_ab_session(root, CompareOptions(metric=METRIC))
    assert page.report is not None
    assert _rows(page.report.to_dict()) == expected
    html = root / "page.html"
    made = rbs("report", str(root), "--output", str(html))
    assert made.returncode == 0, made.stderr
    text = html.read_text()
    assert all(row[0] in text for row in expected.values())

    # the pull-request comment renders the report the agent's A/B produced with the engine
    found = load_session(root)
    agent_report = judge(found.runs, Judging(CompareOptions(metric=METRIC),
                                             priors=found.priors))
    assert _rows(agent_report.to_dict()) == expected
    info = PrInfo(org="redis", repo="redis", number=7, head_sha="a" * 40, base_sha="b" * 40,
                  head_ref="topic",
                  base_ref="unstable")
    body = results_body(info, [Section("local", "local", "completed",
                                       report=agent_report.to_dict())], [])
    _markdown_agrees(body, expected)

    # bisect judges a test from its pairs with the same function
    sets = pair_runs(found.runs, METRIC)
    bisect_row = judge_pairs({"one-set": sets["one-set"].pairs},
                             CompareOptions(metric=METRIC)).rows[0]
    one = ComparisonReport((bisect_row,), CompareOptions(metric=METRIC))
    if expected["one-set"][0] != "BUSY":  # alone, without the other test's BH step
        assert _rows(one.to_dict())["one-set"][4:6] == expected["one-set"][4:6]


def test_two_unrelated_folders_are_compared_unpaired(
        session: tuple[Path, dict[str, Any]], tmp_path: Path) -> None:
    root, _ = session
    base, comp = tmp_path / "x", tmp_path / "y"
    shutil.copytree(root / "baseline", base)
    shutil.copytree(root / "comparison", comp)
    compared = rbs("compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                   "--format", "json")
    assert compared.returncode == 0, compared.stderr
    report = _json(compared.stdout)
    assert report["context"]["paired"] is False
    assert all(not r["paired"] for r in report["rows"])
