"""The lab-wide instruction table (analysis/lab_table.py, datasink/lab_profile.py): self
counts recorded per suite by the agent's watch, folded per commit, drawn in the HTML report
and read in headless Chromium."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path

import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig
from redis_benchmarks_spec.analysis import html_report
from redis_benchmarks_spec.analysis.lab_table import lab_table
from redis_benchmarks_spec.analysis.lab_table_report import section_lab_instructions
from redis_benchmarks_spec.analysis.report_data import ReportData
from redis_benchmarks_spec.datasink import lab_profile
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.inputs.reports import read_lab_table
from tests import browser
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    make_result,
)

GET = {"lookupKey": 300.0, "call": 500.0, "addReplyBulk": 200.0}
ZSET = {"zzlNext": 2500.0, "call": 500.0, "lookupKey": 300.0}


def test_shares_are_of_all_instructions_and_changes_of_common_suites() -> None:
    def prof(counts: dict[str, float]) -> tuple[float, list[tuple[str, str, float]]]:
        return sum(counts.values()), [(f, "x.c", c) for f, c in counts.items()]
    before = {"get": prof(GET), "zset": prof(ZSET)}
    after = {"get": prof({**GET, "lookupKey": 200.0}), "zset": prof(ZSET),
             "new": prof({"other": 1000.0})}
    table = lab_table("b" * 40, after, "a" * 40, before)
    rows = {r.function: r for r in table.rows}
    assert table.rows[0].function == "zzlNext"  # 2500 of 5200 instructions of all suites
    assert abs(rows["zzlNext"].share_pct - 100 * 2500 / 5200) < 1e-9
    assert rows["call"].suites == 2 and rows["other"].suites == 1
    # lookupKey lost 100 of the 4300 the two common suites ran: its share fell
    assert abs(rows["lookupKey"].change_pp - (100 * 500 / 4200 - 100 * 600 / 4300)) < 1e-9
    assert rows["other"].change_pp == 0.0  # a suite only the new commit ran moves nothing
    assert lab_table("b" * 40, after).rows[0].change_pp is None


def _result(n: int, sha: str, test: str, counts: dict[str, float], folder: Path):  # type: ignore[no-untyped-def]
    path = folder / f"{test}-{n}.json"
    path.write_text(json.dumps([{"function": f, "file": "t.c", "self_per_op": c}
                                for f, c in counts.items()]))
    r = make_result(n, test_name=test, platform="lab-a", hash=sha)
    return dataclasses.replace(r, run_id=f"{r.run_id}:{test}",
                               metrics={"instructions_per_op": sum(counts.values())},
                               paths={"instructions_functions": str(path)})


def test_the_report_shows_the_table_of_two_commits(client: redis.Redis, tmp_path: Path) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n, (sha, get) in enumerate((("a" * 40, GET), ("b" * 40, {**GET, "lookupKey": 200.0}))):
        for test, counts in (("get", get), ("zset", ZSET)):
            r = _result(n, sha, test, counts, tmp_path)
            push_results(client, [r])
            watch.arrived([r])
    assert lab_profile.profiled_commits(client, ("redis", "redis", "unstable")) == \
        ["a" * 40, "b" * 40]
    table = read_lab_table(client, ("redis", "redis", "unstable"))
    assert table is not None and table.previous == "a" * 40 and table.suites == 2
    page = tmp_path / "report.html"
    assert section_lab_instructions in html_report.SECTIONS  # every report with a datasink
    data = ReportData("lab", "instructions_per_op", [], lab_table=table)
    page.write_text(html_report.render(data, tmp_path, [section_lab_instructions]))
    seen = browser.render(page, tmp_path / "shot.png")
    assert "Where Redis spends its instructions: bbbbbbbbbb" in seen.dom
    assert "against aaaaaaaaaa" in seen.dom
    assert "<code>zzlNext</code>" in seen.dom and "-2.05 pp" in seen.dom
    assert seen.console == []
