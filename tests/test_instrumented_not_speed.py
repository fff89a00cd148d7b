"""Nothing measured under instrumentation is drawn or judged as speed (issue 62, item 5).

A counted run (``--profilers instructions``: the server under callgrind, a fixed request
count) answers in tens of milliseconds where the server answers in a fraction of one; its
throughput and latency stay in its result document, and every surface asks one rule
(``results.profile.instrumented``) before it draws, tabulates or stores them as speed. Real
sessions here: a counted A/B and a timed A/B of the same suite on ``redis-server``, and a mixed
session made of both (the counted repetitions renumbered after the timed ones, as the lab's
timed and counted runs of one commit sit side by side), then each surface on them.
"""

from __future__ import annotations

import json
import re
import shutil
import statistics
from pathlib import Path
from typing import Any

import pytest

from redis_benchmarks_spec.common.metrics import metric as catalogued
from redis_benchmarks_spec.datasink.keys import history_metrics
from redis_benchmarks_spec.inputs.session_folder import result_documents
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.results.profile import PROFILED, instrumented
from redis_benchmarks_spec.results.summary import TIMED_COLUMNS
from tests.cli import rbs

TEST = "redis-benchmark-1Kkeys-string-get-100B"
THROUGHPUT = "ALL_STATS.Totals.Ops/sec"
P99 = "ALL_STATS.Totals.Percentile_Latencies.p99.00"
INSTRUCTIONS = "instructions_per_op"
AFTER = "used_memory.after_run"
SIDES = ("baseline", "comparison")
COUNTED = ("--profilers", "instructions", "--profile-requests", "2000")


def _server() -> str:
    server = shutil.which("redis-server") or "/usr/bin/redis-server"
    if not Path(server).is_file():
        pytest.skip("redis-server is not installed")
    return server


def _ab(out: Path, *more: str) -> Path:
    """An A/B session of the suite (the same server on both sides); its session folder."""
    server = _server()
    done = rbs("run", "--test", TEST, "--baseline-server", server, "--comparison-server",
               server, "--no-datasink", "--results-dir", str(out), *more, timeout=900)
    assert done.returncode == 0, (done.stdout[-3000:], done.stderr[-3000:])
    (root,) = list(out.iterdir())
    return root


def _docs(folder: Path) -> list[RunResult]:
    return [d for d in result_documents(folder) if d.ok]


@pytest.fixture(scope="module")
def sessions(tmp_path_factory: pytest.TempPathFactory) -> dict[str, Path]:
    """``counted`` (3 counted pairs, its ``rbs run --html`` page beside it as
    ``counted.html``), ``timed`` (timed pairs of 1 s: 2 asked, the session may run more) and
    ``mixed`` (both: the timed pairs first, the counted ones renumbered after them)."""
    tmp = tmp_path_factory.mktemp("instrumented")
    counted = _ab(tmp / "counted", *COUNTED, "--repetitions", "3", "--html",
                  str(tmp / "counted.html"))
    timed = _ab(tmp / "timed", "--repetitions", "2", "--test-time", "1")
    mixed = tmp / "mixed"
    shutil.copytree(timed, mixed)
    after = len(list((timed / "baseline").glob("rep-*")))
    for side in SIDES:
        for rep in sorted((counted / side).glob("rep-*")):
            moved = mixed / side / f"rep-{int(rep.name[4:]) + after:02d}"
            shutil.copytree(rep, moved)
            for doc in moved.rglob("result.json"):
                raw = json.loads(doc.read_text())
                raw["context"]["repetition"] += after
                doc.write_text(json.dumps(raw))
    return {"counted": counted, "timed": timed, "mixed": mixed,
            "counted.html": tmp / "counted.html"}


def _figures(page: str, kind: str) -> list[str]:
    return re.findall(rf'<figure class="plot" data-plot="{kind}"[^>]*>(.*?)</figure>', page,
                      flags=re.DOTALL)


def _svg_texts(svg: str) -> list[str]:
    """The text matplotlib drew (it writes each label as a comment beside its glyphs)."""
    return re.findall(r"<!-- (.*?) -->", svg)


def _report(folder: Path, page: Path, *more: str) -> str:
    made = rbs("report", str(folder), "--html", str(page), *more)
    assert made.returncode == 0, made.stderr[-3000:]
    return page.read_text()


def test_the_counted_runs_say_so_and_keep_their_timings(sessions: dict[str, Path]) -> None:
    """What the rest is about: every counted run is instrumented by the one rule, no timed
    run is, and the counted runs' timings (p99 of 100-190 ms here, where the timed runs
    answer in a few) stay in their documents, as what they are."""
    counted, timed = _docs(sessions["counted"]), _docs(sessions["timed"])
    assert len(counted) == 6 and len(timed) >= 4
    assert all(instrumented(d.flags) and PROFILED in d.flags for d in counted)
    assert not any(instrumented(d.flags) for d in timed)
    assert all(THROUGHPUT in d.metrics and P99 in d.metrics for d in counted)


def test_the_html_of_an_instructions_ab_draws_no_latency_taken_under_callgrind(
        sessions: dict[str, Path]) -> None:
    page = sessions["counted.html"].read_text()
    assert _figures(page, "spectrum") == [], "the callgrind latencies are drawn as latency"
    samples = _figures(page, "samples")
    assert samples, "the instruction counts, which callgrind does not distort, are drawn"
    for svg in samples:
        texts = _svg_texts(svg)
        assert INSTRUCTIONS in texts and not any("Ops/sec" in t for t in texts), texts
    notes = re.findall(r'<p class="note instrumented" data-test="[^"]+">([^<]*)</p>', page)
    assert len(notes) == 1 and notes[0].startswith("latency not drawn"), notes
    assert "(baseline 3, comparison 3)" in notes[0]


def test_a_mixed_session_draws_its_timed_runs_and_only_them(
        sessions: dict[str, Path], tmp_path: Path) -> None:
    mixed = _report(sessions["mixed"], tmp_path / "mixed.html", "--metric", THROUGHPUT)
    timed = _report(sessions["timed"], tmp_path / "timed.html", "--metric", THROUGHPUT)
    # the latency spectrum of the mixed session is the timed runs' alone, to the byte
    (spectrum,) = _figures(mixed, "spectrum")
    assert [spectrum] == _figures(timed, "spectrum")
    # the throughput samples: the timed runs of each side, not all its runs
    n = len(_docs(sessions["timed"] / "baseline"))
    (samples,) = _figures(mixed, "samples")
    texts = _svg_texts(samples)
    assert "Ops/sec" in texts and texts.count(f"(n={n})") == 2, (n, texts)
    assert f"(n={n + 3})" not in texts
    assert "throughput not drawn for the run(s) measured under a profiler" in \
        " ".join(mixed.split()).replace("Throughput", "throughput")
    assert mixed.count('class="note instrumented"') == 2  # samples and spectrum
    assert 'class="note instrumented"' not in timed


def test_a_results_table_leaves_the_counted_runs_throughput_out(
        sessions: dict[str, Path], tmp_path: Path) -> None:
    """``rbs report`` of one folder (one side of the mixed session): the median of the
    timed runs, and the counted runs named as left out."""
    page = _report(sessions["mixed"] / "baseline", tmp_path / "side.html")
    timed = [d.metrics[THROUGHPUT] for d in _docs(sessions["timed"] / "baseline")]
    row = re.search(rf'<tr><td><a href="#t-{TEST}[^"]*">[^<]*</a></td><td>(\d+)</td>'
                    r"<td>([^<]*)</td><td>(.*?)</td></tr>", page)
    assert row, page[:3000]
    runs, median, left_out = row.groups()
    assert int(runs) == len(timed)
    assert float(median.replace(",", "")) == pytest.approx(statistics.median(timed), rel=1e-3)
    assert "3, not shown" in left_out
    # memory after the load is timed too: the memory table's median is the timed runs'
    after = [d.metrics[AFTER] for d in _docs(sessions["timed"] / "baseline")]
    table = re.search(r'<table id="memory-figures">(.*?)</table>', page, flags=re.DOTALL)
    assert table, page[:3000]
    cells = re.findall(r"<td>([^<]*)</td></tr>", table.group(1))
    assert cells == [f"{statistics.median(after):,.0f}"], (cells, after)


def test_compare_json_judges_the_timed_pairs_and_names_throughput_only_under_callgrind(
        sessions: dict[str, Path]) -> None:
    def compared(root: Path) -> dict[str, Any]:
        done = rbs("compare", "--baseline-dir", str(root / "baseline"), "--comparison-dir",
                   str(root / "comparison"), "--metric", THROUGHPUT, "--format", "json")
        assert done.returncode == 0, done.stderr[-3000:]
        return dict(json.loads(done.stdout[done.stdout.index("{"):]))

    mixed = compared(sessions["mixed"])
    assert mixed["options"]["metric"] == THROUGHPUT and mixed["instrumented"] == []
    (row,) = mixed["rows"]
    timed = sorted(d.metrics[THROUGHPUT] for d in _docs(sessions["timed"] / "baseline"))
    # the timed pairs, used or left out as disturbed (this host is shared), never a counted one
    assert row["n_baseline"] == row["n_comparison"]
    assert row["n_baseline"] + row["n_disturbed"] == len(timed), row
    if row["baseline_median"] is not None:
        assert timed[0] <= row["baseline_median"] <= timed[-1], (row, timed)
    counts = mixed["instructions"]["rows"][0]
    assert counts["n_baseline"] == 3  # the counted pairs still count
    counted = compared(sessions["counted"])
    assert counted["options"]["metric"] == INSTRUCTIONS
    assert THROUGHPUT in counted["instrumented"]
    slowed = {d.metrics[THROUGHPUT] for d in _docs(sessions["counted"])}
    assert not any(r.get("baseline_median") in slowed or r.get("comparison_median") in slowed
                   for r in counted["rows"])


def test_the_run_table_json_and_csv_show_no_speed_of_a_counted_run(tmp_path: Path) -> None:
    server = _server()
    base = ("run", "--test", TEST, *COUNTED, "--redis-server", server, "--no-datasink")
    as_json = rbs(*base, "--results-dir", str(tmp_path / "j"), "--format", "json")
    assert as_json.returncode == 0, as_json.stderr[-3000:]
    rows = json.loads(as_json.stdout[as_json.stdout.index("["):as_json.stdout.rindex("]") + 1])
    (doc,) = _docs(tmp_path / "j")
    (only,) = rows
    assert PROFILED in only["flags"] and THROUGHPUT in doc.metrics
    assert {c: only[c] for c in TIMED_COLUMNS} == dict.fromkeys(TIMED_COLUMNS), only
    assert only["used_memory"] == doc.metrics["used_memory"]  # not timed: kept
    summary = json.loads(next((tmp_path / "j").glob("*/summary.json")).read_text())
    assert summary == rows
    csv_text = next((tmp_path / "j").glob("*/summary.csv")).read_text()
    assert f"{doc.metrics[THROUGHPUT]}" not in csv_text
    table = rbs(*base, "--results-dir", str(tmp_path / "t"))
    assert table.returncode == 0, table.stderr[-3000:]
    (shown,) = _docs(tmp_path / "t")
    flat = " ".join(table.stdout.split())
    assert f"{shown.metrics[THROUGHPUT]:,.0f}" not in flat, flat
    assert "throughput and latency not shown" in flat
    # the line each finished test prints (to the progress display)
    assert "(profiled: no speed measured)" in " ".join((table.stdout + table.stderr).split())


def test_no_timed_figure_of_a_counted_run_goes_into_history(sessions: dict[str, Path]) -> None:
    """The series a dashboard reads as speed get the counted runs' counts, never their
    timings (the writer's push of them: tests/test_history_shapes.py)."""
    for doc in _docs(sessions["counted"]):
        stored = history_metrics(doc)
        assert INSTRUCTIONS in stored and not [m for m in stored if catalogued(m).timed]
    timed = _docs(sessions["timed"])
    assert all(THROUGHPUT in history_metrics(d) for d in timed)


def test_the_sites_run_page_marks_the_timings_of_a_counted_run(tmp_path: Path) -> None:
    """The site's page of one run lists every metric of its document: a counted run's
    throughput and latency are marked as not the server's speed, its counts are not."""
    from urllib.parse import quote

    from redis_benchmarks_spec.datasink.writer import push_results
    from tests.datasink_fixtures import start_datasink
    from tests.site_fixtures import get, start_site, stop

    ran = rbs("run", "--test", TEST, *COUNTED, "--redis-server", _server(), "--no-datasink",
              "--branch", "unstable", "--results-dir", str(tmp_path / "run"))
    assert ran.returncode == 0, ran.stderr[-3000:]
    (doc,) = _docs(tmp_path / "run")  # a history run (an A/B's runs are never pushed)
    sink = start_datasink(tmp_path / "datasink")
    try:
        with sink.client() as client:
            assert not push_results(client, [doc]).failed
        proc, base = start_site(sink.url, tmp_path / "site.log")
        try:
            status, page = get(base, f"/run/{quote(doc.run_id, safe='')}")
        finally:
            stop(proc)
    finally:
        sink.down()
    assert status == 200, page[:2000]
    rows = dict(re.findall(r"<tr><td>([^<]+)</td><td>(.*?)</td></tr>", page))
    assert "not the server&#39;s speed" in rows[THROUGHPUT] or \
        "not the server's speed" in rows[THROUGHPUT], rows.get(THROUGHPUT)
    assert "instrumented" in rows[P99]
    assert "instrumented" not in rows[INSTRUCTIONS] and "instrumented" not in rows["used_memory"]
