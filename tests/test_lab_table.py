"""The lab-wide instruction table (analysis/lab_table.py, datasink/lab_profile.py): self
counts recorded per suite (with its groups) by the agent's watch, folded per commit and per
suite group, stored as the derived keys the Grafana panel reads, drawn in the HTML report
and read in headless Chromium."""

from __future__ import annotations

import dataclasses
import json
from pathlib import Path
from typing import Any

import redis

from redis_benchmarks_spec.agent.watch import BranchWatch, WatchConfig, publish_lab_table
from redis_benchmarks_spec.analysis import html_report
from redis_benchmarks_spec.analysis.lab_table import lab_table
from redis_benchmarks_spec.analysis.lab_table_report import section_lab_instructions
from redis_benchmarks_spec.analysis.report_data import ReportData
from redis_benchmarks_spec.datasink import lab_profile
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.inputs.reports import read_lab_table
from tests import browser
from tests.cli import rbs
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


def _result(n: int, sha: str, test: str, counts: dict[str, float], folder: Path,  # type: ignore[no-untyped-def]
            groups: tuple[str, ...] = ("string",)):
    path = folder / f"{test}-{n}.json"
    path.write_text(json.dumps([{"function": f, "file": "t.c", "self_per_op": c}
                                for f, c in counts.items()]))
    r = make_result(n, test_name=test, platform="lab-a", hash=sha)
    return dataclasses.replace(r, run_id=f"{r.run_id}:{test}", tested_groups=list(groups),
                               metrics={"instructions_per_op": sum(counts.values())},
                               paths={"instructions_functions": str(path)})


WHERE = ("redis", "redis", "unstable")
A, B = "a" * 40, "b" * 40


def _old_entry(client: redis.Redis, sha: str, test: str, counts: dict[str, float]) -> None:
    """A suite's profile as an agent older than the groups wrote it (no "groups")."""
    client.hset(f"{lab_profile.PREFIX}/redis/redis/commit/{sha}", test, json.dumps(
        {"total": sum(counts.values()), "functions": [[f, "t.c", c] for f, c in counts.items()]}))


def test_groups_fold_two_group_suites_in_both_and_old_entries_as_unknown(
        client: redis.Redis) -> None:
    both = {"lookupKey": 1000.0, "zzlNext": 1000.0}  # a suite of groups string and sorted-set
    for sha, get in ((A, GET), (B, {**GET, "lookupKey": 200.0})):
        for test, counts, groups in (("get", get, ("string",)), ("zset", ZSET, ("sorted-set",)),
                                     ("both", both, ("string", "sorted-set"))):
            lab_profile.record(client, WHERE, sha, test, (sum(counts.values()),
                                                          [(f, "t.c", c) for f, c in
                                                           counts.items()]), groups)
        _old_entry(client, sha, "old", {"other": 700.0})
    table = read_lab_table(client, WHERE)
    assert table is not None and table.suites == 4
    assert sorted(table.groups) == ["sorted-set", "string", "unknown"]
    string, zsets, unknown = (table.groups[g] for g in ("string", "sorted-set", "unknown"))
    assert (string.suites, zsets.suites, unknown.suites) == (2, 2, 1)
    # string: get (900 after) and both (2000): lookupKey 200 + 1000 of 2900
    rows = {r.function: r for r in string.rows}
    assert abs(rows["lookupKey"].share_pct - 100 * 1200 / 2900) < 1e-9
    assert abs(rows["lookupKey"].change_pp - (100 * 1200 / 2900 - 100 * 1300 / 3000)) < 1e-9
    assert "zzlNext" in rows and rows["zzlNext"].suites == 1  # 50 % of "both" only
    assert zsets.rows[0].function == "zzlNext"  # 3500 of 5300 instructions of its suites
    assert abs(zsets.rows[0].share_pct - 100 * 3500 / 5300) < 1e-9
    assert zsets.rows[0].change_pp == 0.0  # no suite of the group moved
    assert [(r.function, r.share_pct) for r in unknown.rows] == [("other", 100.0)]
    assert all(len(g.rows) <= 5 for g in table.groups.values())


def test_the_derived_keys_hold_the_folded_table(client: redis.Redis) -> None:
    for sha, get in ((A, GET), (B, {**GET, "lookupKey": 200.0})):
        for test, counts in (("get", get), ("zset", ZSET)):
            lab_profile.record(client, WHERE, sha, test, (sum(counts.values()),
                                                          [(f, "t.c", c) for f, c in
                                                           counts.items()]), ("string",))
    table = publish_lab_table(client, WHERE)
    assert table is not None
    share = lab_profile.top_key("redis", "redis", "unstable", "share")
    change = lab_profile.top_key("redis", "redis", "unstable", "change")
    top = client.zrange(share, -3, -1, withscores=True)  # what the panel asks for, top last
    # after: zzlNext 2500, call 1000, lookupKey 500 of 4200
    assert [m.decode() for m, _ in top] == ["lookupKey", "call", "zzlNext"]
    assert abs(top[-1][1] - round(table.rows[0].share_pct, 4)) < 1e-9
    moved = {m.decode(): v for m, v in client.zrange(change, 0, -1, withscores=True)}
    assert moved["lookupKey"] < 0 < moved["zzlNext"]
    assert client.hgetall(lab_profile.top_key("redis", "redis", "unstable", "info")) == \
        {b"commit": B.encode(), b"previous": A.encode(), b"suites": b"2"}


def test_the_report_shows_the_table_of_two_commits(client: redis.Redis, tmp_path: Path) -> None:
    watch = BranchWatch(client, WatchConfig(host_id="h", change_at=""))
    for n, (sha, get) in enumerate((("a" * 40, GET), ("b" * 40, {**GET, "lookupKey": 200.0}))):
        for test, counts, groups in (("get", get, ("string",)), ("zset", ZSET, ("sorted-set",))):
            r = _result(n, sha, test, counts, tmp_path, groups)
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
    # by suite group: string holds only "get", whose lookupKey fell from 30 % to 22.22 %
    assert table.groups["string"].suites == 1
    groups = seen.dom.split("By suite group", 1)[1]
    assert "<b>sorted-set</b>" in groups and "<b>string</b>" in groups
    assert "22.22 %" in groups and "-7.78 pp" in groups
    # the agent's watch stored the table the Grafana panel reads
    assert client.zscore(lab_profile.top_key(*WHERE, "share"), "zzlNext") is not None
    assert seen.console == []


def test_rbs_lab_table_shows_any_commit_against_another(client: redis.Redis,
                                                         datasink: Any, tmp_path: Path) -> None:
    """Three profiled commits: the default is the last against the one before; --commit
    picks the middle one (against the first), --against another; the page reads in a
    headless browser; a bad flag is one line."""
    where = ("redis", "redis", "unstable")
    for n, sha in enumerate(("a" * 40, "b" * 40, "c" * 40)):
        lab_profile.record(client, where, sha, "get",
                           (1000.0, [("lookupKey", "db.c", 100.0 + 50 * n)]), ("string",))
    url = datasink.url
    last = rbs("lab", "table", "--datasink", url)
    assert last.returncode == 0, last.stderr
    assert "unstable at cccccccccc, 1 suite(s), against bbbbbbbbbb" in last.stdout
    assert "lookupKey" in last.stdout and "+5.00pp" in last.stdout
    page = tmp_path / "t.html"
    middle = rbs("lab", "table", "--datasink", url, "--commit", "b" * 40, "--html", str(page))
    assert middle.returncode == 0, middle.stderr
    assert "against aaaaaaaaaa" in middle.stdout and "15.00%" in middle.stdout
    seen = browser.render(page, tmp_path / "shot.png")
    assert "Where Redis spends its instructions: bbbbbbbbbb" in seen.dom
    assert "against aaaaaaaaaa" in seen.dom and "<b>string</b>" in seen.dom
    assert seen.console == []
    chosen = rbs("lab", "table", "--datasink", url, "--commit", "c" * 40, "--against", "a" * 40)
    assert "against aaaaaaaaaa" in chosen.stdout and "+10.00pp" in chosen.stdout
    for bad, words in ((["--commit", "abc"], "--commit abc"),
                       (["--commit", "d" * 40], "profiled no suite of dddd")):
        refused = rbs("lab", "table", "--datasink", url, *bad)
        assert refused.returncode == 2 and words in refused.stderr, refused.stderr
        assert "Traceback" not in refused.stderr
