"""The pull-request comment as GitHub renders it (issue 34): its Markdown turned into HTML by
a CommonMark renderer with GitHub's tables (markdown-it-py, which rich already brings) and
opened in headless Chromium with the network off. The first thing a maintainer reads is the
verdict line; every table renders as a table; every abbreviation the comment uses is spelled
out in it."""

from __future__ import annotations

import re
from html import escape
from pathlib import Path

from markdown_it import MarkdownIt

from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, NO_CHANGE
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.pullrequest.state import PrInfo
from tests.browser import blank, render
from tests.test_lab_comment import GEO, _section

ABBREVIATIONS = {"HL": "Hodges-Lehmann", "BH": "Benjamini-Hochberg", "CI": "confidence",
                 "CV": "coefficient of variation"}


def _page(body: str, path: Path) -> Path:
    # GitHub keeps inline HTML comments (the marker) hidden; its sanitizer drops the rest
    html = MarkdownIt("commonmark", {"html": True}).enable("table").render(body)
    path.write_text(f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
                    f"<title>{escape('comment')}</title></head><body>{html}</body></html>")
    return path


def test_the_comment_renders_with_the_verdict_first(tmp_path: Path) -> None:
    info = PrInfo(org="redis", repo="redis", number=11552, head_sha="6" * 40,
                  head_ref="pr", base_ref="unstable", base_sha="1" * 40)
    section = _section("lab-a", [(GEO, IMPROVEMENT, -23.5), ("t2", NO_CHANGE, 0.01)])
    section.notes = ["Suites: 1 of 2 suites execute code in geo.c that this PR changes.",
                     "Host: CPU Example, kernel 6.1 (fingerprint 0123456789ab)."]
    section.movers = {GEO: [{"function": "fixedpoint_d2string", "file": "/b/src/util.c",
                             "baseline_per_op": 0.0, "comparison_per_op": 154.0,
                             "delta_per_op": 154.0, "share_of_total_pct": 1.5}]}
    section.changed_files = ["src/geo.c", "src/util.c"]
    body = results_body(info, [section], [])
    shown = render(_page(body, tmp_path / "comment.html"), tmp_path / "comment.png")
    assert shown.console == [] and not blank(shown.screenshot)
    text = re.sub(r"<[^>]+>", " ", shown.dom)
    paragraphs = re.findall(r"<p>(.*?)</p>", shown.dom, re.DOTALL)
    first = re.sub(r"<[^>]+>", "", paragraphs[0])
    assert first.startswith("Improvement in 1 of 2 tests"), first
    assert shown.dom.count("<table>") >= 3  # counts, verdicts, movers
    assert "| ---" not in text and "|---" not in text  # no table left as raw Markdown
    for short, spelled in ABBREVIATIONS.items():
        if re.search(rf"\b{short}\b", text):
            assert spelled in text, f"{short} is used but never spelled out"
