"""``rbs site`` (issue 43): a real ``rbs site`` process over a real datasink holding runs
pushed by the project's writer; every page requested over HTTP and read."""

from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from redis_benchmarks_spec.datasink import retention
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.web.charts import Chart, ChartPoint, history_svg
from tests.browser import blank, plots_of, render
from tests.cli import rbs
from tests.datasink_fixtures import TEST_NAME, start_datasink
from tests.site_fixtures import (
    COMMENT,
    OTHER_TEST,
    SHAS,
    SLOW_FROM,
    fill,
    get,
    start_site,
    start_site_on,
    stop,
)


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str]]:
    """(site base URL, datasink URL) of a filled datasink and its site."""
    folder = tmp_path_factory.mktemp("site")
    sink: EmbeddedDatasink = start_datasink(folder / "datasink")
    try:
        with sink.client() as client:
            fill(client)
        proc, base = start_site(sink.url, folder / "site.log", "--broker", sink.url)
        try:
            yield base, sink.url
        finally:
            stop(proc)
    finally:
        sink.down()


def _links(html: str) -> list[str]:
    return [h.replace("&amp;", "&") for h in re.findall(r'href="(/[^"]*)"', html)]


def test_index_links_to_every_kind_of_page(lab: tuple[str, str]) -> None:
    base, _ = lab
    status, html = get(base, "/")
    assert status == 200
    links = _links(html)
    assert "/ci/redis/redis/branch/unstable" in links
    assert "/ci/redis/redis/branch/unstable?platform=icelake-2s" in links
    assert f"/ci/redis/redis/test/{TEST_NAME}" in links and "/pulls" in links
    assert "/ci/redis/redis/lab-table/unstable" in links
    assert 'action="/compare"' in html
    assert "alert" in html and SHAS[SLOW_FROM][:10] in html
    for link in links:  # every page the index links to answers
        assert get(base, link)[0] == 200, link


def test_branch_page_lists_commits_with_why_and_alerts(lab: tuple[str, str]) -> None:
    base, _ = lab
    status, html = get(base, "/ci/redis/redis/branch/unstable?platform=icelake-2s")
    assert status == 200
    rows = re.findall(r'<tr id="c-([0-9a-f]{40})">(.*?)</tr>', html, re.DOTALL)
    assert [sha for sha, _ in rows] == SHAS[::-1]  # newest first
    slow = dict(rows)[SHAS[SLOW_FROM]]
    assert "alert" in slow and "push" in slow and ">12<" in slow  # 2 tests x 6 runs
    assert "host-changed" in dict(rows)[SHAS[1]]
    assert "host changed on icelake-2s (kernel 6.1 -&gt; 6.2)" in html
    # the commit links its comparison with the previous one
    assert f"/compare?a={SHAS[SLOW_FROM - 1]}&amp;b={SHAS[SLOW_FROM]}&amp;platform=icelake-2s" \
        in html
    assert get(base, "/ci/redis/redis/branch/unstable?platform=../etc")[0] == 400


def test_history_chart_names_commits_on_hover_and_marks_the_alert(lab: tuple[str, str]) -> None:
    base, _ = lab
    status, html = get(base, f"/ci/redis/redis/test/{TEST_NAME}?platform=icelake-2s")
    assert status == 200
    figures = re.findall(r'<figure class="plot"[^>]*>(.*?)</figure>', html, re.DOTALL)
    assert len(figures) == 1 and figures[0].lstrip().startswith("<svg")
    titles = re.findall(r"<a xlink:href=\"(/run/[^\"]+)\"[^>]*><title>([^<]*)</title>",
                        figures[0])
    assert len(titles) == len(SHAS) * 6
    assert {t.split()[0] for _, t in titles} == {s[:12] for s in SHAS}
    assert f"ALERT {SHAS[SLOW_FROM][:8]}" in figures[0]  # the alert's line is labelled
    assert "step " in figures[0]  # the change point of -20 % is marked
    run_status, run_page = get(base, titles[0][0])  # clicking a point opens its run
    assert run_status == 200 and SHAS[0] in run_page and "icelake-2s" in run_page
    both = get(base, f"/ci/redis/redis/test/{TEST_NAME}")[1]
    assert both.count('<figure class="plot"') == 2  # one chart per platform


def test_compare_page_shows_the_engines_verdicts(lab: tuple[str, str], tmp_path: Path) -> None:
    base, url = lab
    a, b = SHAS[SLOW_FROM - 1], SHAS[SLOW_FROM]
    status, html = get(base, f"/compare?a={a}&b={b}&platform=icelake-2s")
    assert status == 200
    rows = dict(re.findall(r'<tr data-test="([^"]+)">.*?data-verdict="([^"]+)"', html))
    out = tmp_path / "c.json"
    cli = rbs("compare", "--baseline-hash", a, "--comparison-hash", b, "--platform",
              "icelake-2s", "--datasink", url, "--format", "json", "--output", str(out),
              timeout=120)
    assert cli.returncode == 0, cli.stderr
    expected = {r["test"]: r["verdict"] for r in json.loads(out.read_text())["rows"]}
    assert rows == expected and rows[TEST_NAME] == "REGRESSION"
    assert "-20.00 %" in html  # the change, with its interval beside it
    everywhere = get(base, f"/compare?a={a}&b={b}")[1]
    assert "<h2>icelake-2s</h2>" in everywhere and "<h2>lab-b</h2>" in everywhere
    only_hash = get(base, f"/compare?a={a}&b={b}&platform=icelake-2s&group=hash")[1]
    assert re.findall(r'<tr data-test="([^"]+)"', only_hash) == [OTHER_TEST]


def test_hostile_parameters_are_refused(lab: tuple[str, str]) -> None:
    base, _ = lab
    for path in ("/compare?a=xyz&b=" + SHAS[0], "/compare?a=" + SHAS[0] + "&b=" + SHAS[1]
                 + "&group=%3Cscript%3E", f"/ci/redis/redis/test/{TEST_NAME}?metric=a%20b"):
        status, html = get(base, path)
        assert status == 400 and "<script>" not in html, path
    assert get(base, "/run/nope")[0] == 404


def test_each_pull_requests_comment_with_its_compare_link(lab: tuple[str, str]) -> None:
    base, _ = lab
    status, html = get(base, "/pulls")
    page = f"/pulls/redis/redis/{COMMENT.number}/{COMMENT.head_sha}"
    assert status == 200 and page in _links(html)
    assert "&lt;script&gt;" in html and "<script>" not in html  # the title is shown, inert
    status, html = get(base, page)
    assert status == 200
    article = html.split('<article class="comment">', 1)[1]
    assert "<table>" in article and "REGRESSION -20.0 %" in article  # rendered, not raw
    assert "<img" not in article and "<script>" not in html  # HTML in a comment stays text
    assert 'href="javascript:' not in html and "rbs-pr-comment" not in html
    compare = f"/compare?a={COMMENT.base_sha}&b={COMMENT.head_sha}"
    assert compare in _links(html) and get(base, compare)[0] == 200
    assert get(base, f"/pulls/redis/redis/1/{SHAS[0]}")[0] == 404


def test_the_history_page_in_headless_chromium(lab: tuple[str, str], tmp_path: Path) -> None:
    """The page a maintainer opens: drawn, no console error, nothing fetched from elsewhere,
    and every point of the chart a link whose title names its commit."""
    base, _ = lab
    shown = render(f"{base}/ci/redis/redis/test/{TEST_NAME}?platform=icelake-2s",
                   tmp_path / "history.png")
    assert shown.console == [] and not blank(shown.screenshot)
    plots = plots_of(shown.dom)
    assert plots.external == [] and len(plots.found) == 1 and plots.found[0][2] > 36
    titles = re.findall(r"<title>([0-9a-f]{12}) ", shown.dom)
    assert len(titles) == len(SHAS) * 6 and set(titles) == {s[:12] for s in SHAS}


def test_a_chart_is_drawn_again_only_when_what_it_shows_changes() -> None:
    points = [ChartPoint(1_700_000_000_000 + i * 60_000, 100.0 + i, f"/run/r{i}", f"c{i}")
              for i in range(5)]
    first = history_svg(Chart("lab-a", "ALL_STATS.Totals.Ops/sec", list(points)))
    again = history_svg(Chart("lab-a", "ALL_STATS.Totals.Ops/sec", list(points)))
    assert again is first  # kept, not drawn again
    alerted = history_svg(Chart("lab-a", "ALL_STATS.Totals.Ops/sec", list(points),
                                alerts=[("ALERT c3", points[3].ts_ms)]))
    assert alerted is not first and "ALERT c3" in alerted and "ALERT" not in first


def test_by_default_the_site_reads_the_embedded_datasink(tmp_path: Path) -> None:
    sink = start_datasink(tmp_path / "embedded")
    try:
        with sink.client() as client:
            fill(client)
        proc, base = start_site_on(["--datasink-data-dir", str(sink.data_dir)],
                                   tmp_path / "site.log")
        try:
            status, html = get(base, "/")
            assert status == 200 and f"/ci/redis/redis/test/{TEST_NAME}" in html
            assert sink.url.rsplit(":", 1)[1] in html  # the datasink it found is named
        finally:
            stop(proc)
    finally:
        sink.down()
    down = rbs("site", "--port", "1", "--datasink-data-dir", str(tmp_path / "none"),
               timeout=60)
    assert down.returncode == 2 and "the embedded datasink is not running" in down.stderr


def test_the_lab_wide_instruction_table(lab: tuple[str, str]) -> None:
    base, _ = lab
    status, html = get(base, "/ci/redis/redis/lab-table/unstable")
    assert status == 200 and f"against {SHAS[SLOW_FROM - 1][:10]}" in html
    row = html.split("<code>lookupKey</code>", 1)[1].split("</tr>", 1)[0]
    assert "+" in row and "pp" in row  # its change against the previous profiled commit
    assert "&lt;script&gt;" in html and "<script>" not in html
    assert get(base, "/ci/redis/redis/lab-table/unstable?commit=" + "f" * 40)[0] == 404
    assert get(base, "/ci/redis/redis/lab-table/unstable?commit=nothex")[0] == 400


def test_compare_after_gc_reads_the_commits_on_their_branch(tmp_path: Path) -> None:
    """gc deletes by.hash series after its window; the page then reads each commit's points
    on its branch (datasink/commit_points.py), as the pull-request comment does."""
    sink = start_datasink(tmp_path / "gc")
    a, b = SHAS[SLOW_FROM - 1], SHAS[SLOW_FROM]
    try:
        with sink.client() as client:
            fill(client)
            gone = retention.gc(client, int(time.time() * 1000))
            assert gone.errors == [] and not client.execute_command(
                "TS.QUERYINDEX", f"hash={a}", "by=hash")
        proc, base = start_site(sink.url, tmp_path / "site.log")
        try:
            status, html = get(base, f"/compare?a={a}&b={b}")
        finally:
            stop(proc)
    finally:
        sink.down()
    assert status == 200 and "<h2>icelake-2s</h2>" in html and "<h2>lab-b</h2>" in html
    icelake = html.split("<h2>icelake-2s</h2>", 1)[1].split("<h2>", 1)[0]
    rows = dict(re.findall(r'<tr data-test="([^"]+)">.*?data-verdict="([^"]+)"', icelake))
    assert rows[TEST_NAME] == "REGRESSION" and "gone (gc)" in icelake
