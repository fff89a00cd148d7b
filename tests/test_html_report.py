"""`rbs report` / `--html`: one self-contained page, rendered in headless Chromium with the
network off; fails on any console message, a missing or empty plot, or a blank screenshot."""

from __future__ import annotations

import re
import shutil
from dataclasses import replace
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.results.document import RunResult
from tests.browser import Rendered, blank, plots_of, render
from tests.cli import rbs, rbs_in_process, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (register the fixtures)
    client_fixture,
    datasink_fixture,
)
from tests.report_fixtures import BASE_SHA, COMP_SHA, TESTS, two_sides

AB_SUITE = """
name: html-ab-set
tested-commands: [set]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 5000 -t set
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


def _check(page: Path, expected: set[tuple[str, str]]) -> Rendered:
    text = page.read_text()
    assert not re.search(r'(?:src|href)\s*=\s*"(?:https?:)?//|url\((?!#)', text)  # nothing remote
    rendered = render(page, page.with_suffix(".png"))
    assert rendered.console == [], rendered.console
    plots = plots_of(rendered.dom)
    assert plots.external == []  # nothing to fetch: no script, stylesheet or image link
    found = {(kind, test) for kind, test, _ in plots.found}
    assert expected <= found, expected - found
    assert all(paths > 5 for _, _, paths in plots.found), plots.found
    assert not blank(rendered.screenshot)
    return rendered


def test_compare_html_renders_every_plot(tmp_path: Path) -> None:
    base, comp = two_sides(tmp_path)
    page = tmp_path / "out" / "compare.html"
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--format", "json", "--output", str(tmp_path / "r.json"),
                           "--html", str(page)]) == 0
    rendered = _check(page, {(k, t) for t in TESTS for k in ("samples", "spectrum")})
    assert "REGRESSION" in rendered.dom and BASE_SHA[:10] in rendered.dom
    assert "merged HDR histograms" in page.read_text() or "percentile" in rendered.dom
    # the logs beside each result.json are linked, relative to the page, and exist
    hrefs = [h for h in rendered.dom.split('href="')[1:] if h.startswith("../")]
    assert len(hrefs) == 2 * 2 * 5
    assert all((page.parent / h.split('"')[0]).is_file() for h in hrefs)


def test_a_b_session_report(tmp_path: Path) -> None:
    suites = tmp_path / "suites"
    write_suite(suites, "s", AB_SUITE)
    server = shutil.which("redis-server") or ""
    page = tmp_path / "ab.html"
    run = rbs("run", "--suites-dir", str(suites),
              "--results-dir", str(tmp_path / "out"), "--baseline-server", server,
              "--comparison-server", server, "--repetitions", "3", "--no-datasink",
              "--html", str(page))
    assert run.returncode == 0, run.stdout[-2000:] + run.stderr[-2000:]
    rendered = _check(page, {("samples", "html-ab-set"), ("spectrum", "html-ab-set")})
    assert "interleaved runs, paired by repetition" in rendered.dom
    # rbs report on the session folder makes the same page
    (session,) = (tmp_path / "out").iterdir()
    assert rbs_in_process(["report", str(session), "-o", str(tmp_path / "again.html")]) == 0
    _check(tmp_path / "again.html", {("samples", "html-ab-set")})


def test_history_from_the_datasink_marks_the_compared_commits(tmp_path: Path,
                                                               client: redis.Redis) -> None:
    base, comp = two_sides(tmp_path)
    docs = [RunResult.read(p) for p in sorted(base.rglob("result.json")) +
            sorted(comp.rglob("result.json"))]
    for i, doc in enumerate(docs):  # both commits landed on unstable, one after the other
        doc.context.git.branch = "unstable"
        if doc.context.git.hash == COMP_SHA:
            docs[i] = replace(doc, start_ms=doc.start_ms + 3_600_000)
    assert not push_results(client, docs).failed
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    page = tmp_path / "h.html"
    assert rbs_in_process(["report", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "-o", str(page), "--history-datasink", url, "--history-branch",
                           "unstable"]) == 0
    _check(page, {("history", t) for t in TESTS})
    svg = page.read_text()
    assert svg.count(BASE_SHA[:10]) >= 3 and svg.count(COMP_SHA[:10]) >= 3  # header + markers


def test_the_checks_can_fail(tmp_path: Path) -> None:
    """A page with a script error and an empty plot is caught (the checks are not vacuous)."""
    page = tmp_path / "bad.html"
    page.write_text('<html><body><figure class="plot" data-plot="samples" data-test="t">'
                    "<svg></svg></figure><script>undefinedFn();</script></body></html>")
    rendered = render(page, tmp_path / "bad.png")
    assert any("undefinedFn" in m for m in rendered.console)
    assert plots_of(rendered.dom).found == [("samples", "t", 0)]
    with pytest.raises(AssertionError):
        _check(page, {("samples", "t")})


def test_datasink_compare_html_draws_each_sides_points(tmp_path: Path,
                                                       client: redis.Redis) -> None:
    base, comp = two_sides(tmp_path)
    docs = [RunResult.read(p) for p in sorted(base.rglob("result.json")) +
            sorted(comp.rglob("result.json"))]
    assert not push_results(client, docs).failed
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    page = tmp_path / "ds.html"
    assert rbs_in_process(["compare", "--baseline-hash", BASE_SHA, "--comparison-hash", COMP_SHA,
                           "--datasink", url, "--format", "json", "--output",
                           str(tmp_path / "r.json"),
                           "--html", str(page)]) == 0
    rendered = _check(page, {("samples", t) for t in TESTS})
    assert "REGRESSION" in rendered.dom and "(n=5)" in page.read_text()


def test_report_of_one_results_folder(tmp_path: Path) -> None:
    base, _ = two_sides(tmp_path)
    assert rbs_in_process(["report", str(base)]) == 0
    rendered = _check(base / "report.html", {(k, t) for t in TESTS for k in ("samples",
                                                                           "spectrum")})
    assert "<th>runs</th>" in rendered.dom and "baseline run" not in rendered.dom
    assert rbs_in_process(["report", str(tmp_path / "missing")]) == 2


def test_report_from_a_saved_comparison(tmp_path: Path, client: redis.Redis) -> None:
    base, comp = two_sides(tmp_path)
    saved = tmp_path / "cmp.json"
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--format", "json", "--output", str(saved)]) == 0
    docs = [RunResult.read(p) for p in sorted(base.rglob("result.json"))]
    assert not push_results(client, docs).failed
    url = f"redis://127.0.0.1:{client.connection_pool.connection_kwargs['port']}"
    assert rbs_in_process(["report", "--from-json", str(saved), "--history-datasink", url]) == 0
    rendered = _check(saved.with_suffix(".html"), {("history", t) for t in TESTS})
    assert rendered.dom.count("REGRESSION") >= 2
    (tmp_path / "bad.json").write_text("{}")
    assert rbs_in_process(["report", "--from-json", str(tmp_path / "bad.json")]) == 2
