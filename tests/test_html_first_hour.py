"""Issue 45, item 3: the HTML report shows what the terminal shows.

An A/B whose instruction count changed (decided) with per-function counts beside each run,
and memory measured after the preload: the page lists the functions that moved for the
decided change, names the decided metric in its header, and every table fits a page
1,400 px wide in headless Chromium (the memory table ran off it).
"""

from __future__ import annotations

import dataclasses
import json
import re
import subprocess
import tempfile
from pathlib import Path

import pytest

from redis_benchmarks_spec.analysis.compare import CompareOptions
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.function_movers import PATH_KEY
from redis_benchmarks_spec.analysis.report_data import from_runs
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.cli.report import write_html
from redis_benchmarks_spec.results.memory import MEMORY_METRICS
from tests.browser import FLAGS, chromium
from tests.datasink_fixtures import make_result

OPS = "ALL_STATS.Totals.Ops/sec"
INSTR = "instructions_per_op"
TEST = "memtier_benchmark-1Mkeys-load-zset-listpack-with-100-elements-double-score"
WIDTH = 1400
#: measured in the page at WIDTH px: any table (or the page) wider than the viewport
PROBE = """<script>
const w = document.documentElement.clientWidth;
const wide = [...document.querySelectorAll('table')]
  .filter(t => t.getBoundingClientRect().right > w + 1 || t.scrollWidth > t.clientWidth + 1)
  .map(t => t.id || t.className || 'table');
document.body.setAttribute('data-viewport', String(w));
document.body.setAttribute('data-page-width', String(document.documentElement.scrollWidth));
document.body.setAttribute('data-wide-tables', JSON.stringify(wide));
</script>"""


def _functions(folder: Path, rep: int, side: str) -> str:
    """A per-function file as the instructions profiler writes it: the comparison spends
    417 fewer instructions per op in __vfprintf_internal (PR 90223759's shape)."""
    vfprintf = 1200.0 - (417.0 if side == COMPARISON else 0.0) + rep
    path = folder / f"{side}-{rep}-functions.json"
    path.write_text(json.dumps([
        {"function": "__vfprintf_internal", "file": "vfprintf-internal.c",
         "self_per_op": vfprintf},
        {"function": "zzlInsertAt", "file": "src/t_zset.c", "self_per_op": 800.0 + rep},
        {"function": "a_function_with_a_name_long_enough_to_need_wrapping_in_a_table_cell_"
                     "of_the_report_page_for_sure", "file": "src/very/long/path/name.c",
         "self_per_op": 300.0 + (25.0 if side == COMPARISON else 0.0)}]))
    return str(path)


def _runs(folder: Path) -> list[ABRun]:
    runs = []
    for rep in range(6):
        for side, instr, ops in ((BASELINE, 10_400.0, 100_000.0), (COMPARISON, 10_000.0,
                                                                   104_000.0)):
            memory = {m: 2_000_000.0 * (1 + 0.3 * (side == COMPARISON)) + rep
                      for m in MEMORY_METRICS}
            doc = make_result(rep, test_name=TEST)
            doc = dataclasses.replace(
                doc, metrics={OPS: ops * (1 + 0.002 * rep), INSTR: instr + rep, **memory},
                paths={PATH_KEY: _functions(folder, rep, side)})
            runs.append(ABRun(side, rep, doc))
    return runs


@pytest.fixture(name="page", scope="module")
def page_fixture(tmp_path_factory: pytest.TempPathFactory) -> Path:
    folder = tmp_path_factory.mktemp("html45")
    runs = _runs(folder)
    report = judge(runs, Judging(CompareOptions(metric=OPS), paired=True))
    assert report.instructions is not None
    assert report.instructions.rows[0].verdict == "IMPROVEMENT", report.instructions.rows
    return write_html(from_runs("A/B session", runs, report), folder / "ab.html")


def test_the_page_lists_the_functions_that_moved(page: Path) -> None:
    text = page.read_text()
    movers = text[text.index("Functions that moved"):]
    assert f'data-test="{TEST}' in movers
    row = re.search(r"__vfprintf_internal</code></td><td>[^<]*</td><td>([^<]*)</td>"
                    r"<td>([^<]*)</td><td>([^<]*)</td>", movers)
    assert row is not None, movers[:2000]
    assert row.group(3) == "-417.0"  # the change per op the terminal prints first


def test_the_header_names_the_decided_metric(page: Path) -> None:
    header = page.read_text().split("<h2", 1)[0]
    found = re.search(r'class="decided-metric" data-metric="([^"]+)"', header)
    assert found is not None and found.group(1) == INSTR, header
    assert "Instructions per op" in header and "also judged: Throughput" in header


def test_every_table_fits_a_page_1400_px_wide(page: Path, tmp_path: Path) -> None:
    probed = tmp_path / "probed.html"
    probed.write_text(page.read_text().replace("</body>", PROBE + "</body>"))
    assert "data-wide-tables" not in page.read_text()  # the product page has no script
    with tempfile.TemporaryDirectory() as profile:
        done = subprocess.run([chromium(), *FLAGS, f"--user-data-dir={profile}",
                               f"--window-size={WIDTH},2000", "--dump-dom",
                               probed.resolve().as_uri()],
                              capture_output=True, text=True, timeout=120, check=True)
    body = re.search(r'<body[^>]*data-viewport="(\d+)"[^>]*data-page-width="(\d+)"'
                     r'[^>]*data-wide-tables="([^"]*)"', done.stdout)
    assert body is not None, done.stdout[:500]
    viewport, page_width = int(body.group(1)), int(body.group(2))
    assert viewport <= WIDTH
    wide = json.loads(body.group(3).replace("&quot;", '"'))
    assert wide == [], f"tables wider than {viewport} px: {wide}"
    assert page_width <= viewport, (page_width, viewport)
    assert 'id="memory-verdicts"' in page.read_text()  # the table that ran off the page
