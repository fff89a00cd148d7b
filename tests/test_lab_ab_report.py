"""The same pull request, one answer (issue 62, item 4): the lab's instruction-count A/B of a
pull request pairs the head's runs with the base's runs counted once at its push (a stored
base), which the datasink's points do not say. Read back as points, the base is two
samples of 2 points: BITCOUNT's speed-up was IMPROVEMENT -57.7 % [-59.7, -55.7] in the
comment and UNKNOWN "too few points for a 95 % interval (n=2)" on the site.

Here the A/B is judged by the real engine (``runner.ab_stored.counts_only`` stands the base's
push runs in, as the agent's session does), its runs are pushed through the project's writer
into a real redis-stack-server datasink as the agent files them, and the engine's report is
kept by the agent's writer (``agent.ab_event.lab_entries``, ``datasink.lab_ab.store``). The
site's compare page (its data and the page a real ``rbs site`` serves), ``rbs compare`` of
the datasink and the comment's datasink route must then say the engine's verdict and
interval, with a note naming the lab's A/B and its pairs; without the entry, or with one that
is not the agent's (too big, not JSON, another version, a field of the wrong type), they
judge the points as before and say why, and never fail.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis
from markupsafe import escape

from redis_benchmarks_spec.agent.ab_event import lab_entries
from redis_benchmarks_spec.agent.base_counts import reuse_line
from redis_benchmarks_spec.analysis.compare import IMPROVEMENT, UNKNOWN, ComparisonReport
from redis_benchmarks_spec.analysis.engine import Judging, catalogue_options, judge
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC
from redis_benchmarks_spec.datasink import lab_ab
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.pullrequest.ab_record import ABRecord
from redis_benchmarks_spec.pullrequest.ab_record import TestProgress as Progress
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.runner.ab_stored import StoredBaseline, counts_only
from redis_benchmarks_spec.web.compare_page import CompareRequest, compare
from redis_benchmarks_spec.web.rows import pct
from tests.cli import rbs
from tests.datasink_fixtures import BUILD_VARIANT, TEST_NAME, make_result, start_datasink
from tests.site_fixtures import get, start_site, stop

PLATFORM = "lab-a"
BASE_SHA, HEAD_SHA = "5" * 40, "6" * 40
METRIC = INSTRUCTIONS_METRIC
#: the base counted twice at its push (two hash seeds), the head three times in the A/B
PUSH = [10000.0, 10012.0]
HEADS = [4232.0, 4226.0, 4237.0]  # BITCOUNT's speed-up: -57.7 %
START = 1_700_000_000_000
MARK = "the lab's A/B of these commits"

Answer = tuple[str, float | None, float | None, float | None]  # verdict, change, interval


def _doc(sha: str, n: int, value: float, **ctx: object) -> RunResult:
    doc = make_result(n, hash=sha, branch=None, version=None, platform=PLATFORM)
    return dataclasses.replace(
        doc, run_id=f"{TEST_NAME}:{sha[:4]}:{n}", start_ms=START + n * 60_000,
        end_ms=START + n * 60_000 + 5, metrics={METRIC: value},
        context=dataclasses.replace(doc.context, **ctx))  # type: ignore[arg-type]


def _push_runs() -> list[RunResult]:
    """The base landing on the tracked branch: counted twice (rep-00, rep-01)."""
    return [_doc(BASE_SHA, i, v, repetition=i) for i, v in enumerate(PUSH)]


def _ab_runs(push: list[RunResult]) -> list[ABRun]:
    """The pull request's A/B as the agent's session makes it with a stored base: each head
    run paired with a push run's counts, in turn (``runner.ab_stored.pair_with_stored``)."""
    runs = []
    for rep, value in enumerate(HEADS):
        head = _doc(HEAD_SHA, 10 + rep, value, ab_side=COMPARISON, repetition=rep)
        runs += [ABRun(COMPARISON, rep, head),
                 ABRun(BASELINE, rep, counts_only(push[rep % len(push)], rep))]
    return runs


def _event() -> BuildEvent:
    return BuildEvent(id="ev-bitcount", request_id="rq-1", org="redis", repo="redis",
                      branch="feature", sha=HEAD_SHA, commit_time_ms=0,
                      build_variant=BUILD_VARIANT, built_at_ms=0,
                      artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                      redis_version="7.0.15", pr=1)


def _engine_record(runs: list[ABRun]) -> ABRecord:
    """What the agent's ``record_of`` hands the comment: the engine's report of the runs,
    per test the pairs and why it stopped, the stored base's reuse line."""
    report = judge(runs, Judging(catalogue_options(METRIC), paired=True))
    stored = StoredBaseline(runs={TEST_NAME: [r.result for r in runs if r.side == BASELINE]})
    return ABRecord(base_sha=BASE_SHA, report=report.to_dict(),
                    progress={TEST_NAME: Progress(len(HEADS), [len(HEADS)], "decided")},
                    note=reuse_line(stored, 1))


@dataclasses.dataclass
class Lab:
    url: str
    site: str
    record: ABRecord
    entry: lab_ab.LabAB
    key: lab_ab.LabABKey


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Lab]:
    folder = tmp_path_factory.mktemp("lab-ab")
    push = _push_runs()
    runs = _ab_runs(push)
    record = _engine_record(runs)
    ((key, entry),) = lab_entries(_event(), PLATFORM, record, runs)
    sink: EmbeddedDatasink = start_datasink(folder / "datasink")
    try:
        with sink.client() as client:
            heads = [r.result for r in runs if r.side == COMPARISON]
            pushed = push_results(client, [*push, *heads])  # the stored base: not pushed again
            assert len(pushed.pushed) == 5, pushed.failed
        proc, site = start_site(sink.url, folder / "site.log")
        try:
            yield Lab(sink.url, site, record, entry, key)
        finally:
            stop(proc)
    finally:
        sink.down()


def _row(rows: tuple) -> Answer:  # type: ignore[type-arg]
    (row,) = [r for r in rows if r.test == TEST_NAME]
    return row.verdict, row.change_pct, row.ci_low_pct, row.ci_high_pct


def _site(lab: Lab, client: redis.Redis) -> tuple[Answer, list[str]]:
    """The compare page: its data exactly, and what the served page shows (row and notes)."""
    (platform,) = compare(client, CompareRequest(BASE_SHA, HEAD_SHA, METRIC, PLATFORM))
    answer = _row(platform.report.rows)
    status, html = get(lab.site, f"/compare?a={BASE_SHA}&b={HEAD_SHA}&platform={PLATFORM}"
                                 f"&metric={METRIC}")
    assert status == 200, html[-2000:]
    shown = re.findall(r'<tr data-test="([^"]+)"><td>[^<]*</td><td class="[^"]*" '
                       r'data-verdict="([^"]+)">[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>',
                       html)
    verdict, change, low, high = answer
    assert shown == [(TEST_NAME, verdict, pct(change), f"[{pct(low)}, {pct(high)}]")], shown
    for note in platform.report.problems:  # every note is on the served page
        assert f'<p class="note">{escape(note)}</p>' in html, (note, html[-3000:])
    return answer, list(platform.report.problems)


def _cli(lab: Lab, tmp_path: Path) -> tuple[Answer, list[str]]:
    out = tmp_path / "datasink.json"
    done = rbs("compare", "--baseline-hash", BASE_SHA, "--comparison-hash", HEAD_SHA,
               "--platform", PLATFORM, "--datasink", lab.url, "--metric", METRIC,
               "--format", "json", "--output", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    report = ComparisonReport.from_dict(json.loads(out.read_text()))
    return _row(report.rows), list(report.problems)


def _comment(client: redis.Redis) -> tuple[Answer, list[str]]:
    """The comment's datasink route (a platform's section rendered from the datasink)."""
    info = PrInfo("redis", "redis", 1, HEAD_SHA, "feature", "unstable", BASE_SHA)
    found = pr_compare.compare_platform(client, _event(), PLATFORM, info,
                                        pr_compare.PrCompareOptions(metric=METRIC))
    assert found.baseline_label == f"hash {BASE_SHA}"
    return _row(found.report.rows), list(found.report.problems)


def _surfaces(lab: Lab, tmp_path: Path) -> dict[str, tuple[Answer, list[str]]]:
    with redis.Redis.from_url(lab.url) as client:
        return {"the site's compare page": _site(lab, client),
                "rbs compare of the datasink": _cli(lab, tmp_path),
                "the comment's datasink route": _comment(client)}


def _put(lab: Lab, raw: bytes | str | None) -> None:
    with redis.Redis.from_url(lab.url) as client:
        if raw is None:
            client.delete(lab.key.key)
        else:
            client.hset(lab.key.key, lab.key.metric, raw)


def test_every_surface_shows_the_engines_report_of_the_labs_ab(lab: Lab,
                                                               tmp_path: Path) -> None:
    engine = ComparisonReport.from_dict(lab.record.report or {})
    want = _row(engine.rows)
    # the engine decided the A/B at 3 pairs, the base's own spread counted
    assert want[0] == IMPROVEMENT and want[1] is not None and -58 < want[1] < -57.4, engine
    assert want[2] is not None and want[3] is not None and want[2] < want[1] < want[3] < -57
    assert "the base counted at its push (2 run(s))" in engine.rows[0].spread_from
    # without the stored report the points are two samples, 2 against 3: not decided (the
    # bug); nothing says it is the lab's A/B
    _put(lab, None)
    for surface, (answer, notes) in _surfaces(lab, tmp_path).items():
        assert answer[0] == UNKNOWN and answer != want, (surface, answer)
        assert not any(MARK in n for n in notes), (surface, notes)
    # the agent's writer keeps the engine's report: every surface renders it
    with redis.Redis.from_url(lab.url) as client:
        lab_ab.store(client, lab.key, lab.entry)
    for surface, (answer, notes) in _surfaces(lab, tmp_path).items():
        assert answer[0] == want[0], (surface, answer, want)
        for got, expected in zip(answer[1:], want[1:]):
            assert got == pytest.approx(expected, abs=1e-9), (surface, answer, want)
        (said,) = [n for n in notes if MARK in n]
        assert f"{TEST_NAME} 3 pairs (decided)" in said, (surface, said)
        assert f"base {BASE_SHA[:10]}, head {HEAD_SHA[:10]}" in said and "event ev-bitcount" \
            in said, said
        assert "Base measured once: 1 of 1 test(s)" in said, said  # the stored base


def _hostile() -> dict[str, bytes]:
    good = _good_json()
    data = json.loads(good)
    row = data["report"]["rows"][0]
    return {
        "oversized": good.replace(b'"note": "', b'"note": "' + b"x" * lab_ab.MAX_ENTRY_BYTES),
        "not JSON": good[: len(good) // 2],
        "too deep": b"[" * 200_000,
        "another version": json.dumps({**data, "version": 99}).encode(),
        "a change that is text": json.dumps({**data, "report": {**data["report"], "rows": [
            {**row, "change_pct": "-57.7"}]}}).encode(),
        "a verdict the engine never gives": json.dumps({**data, "report": {
            **data["report"], "rows": [{**row, "verdict": "<b>IMPROVEMENT</b>"}]}}).encode(),
        "another metric": json.dumps({**data, "report": {**data["report"], "options": {
            **data["report"]["options"], "metric": "ALL_STATS.Totals.Ops/sec"}}}).encode(),
    }


def _good_json() -> bytes:
    push = _push_runs()
    runs = _ab_runs(push)
    ((_, entry),) = lab_entries(_event(), PLATFORM, _engine_record(runs), runs)
    return entry.to_json().encode()


@pytest.mark.parametrize("kind", list(_hostile()))
def test_a_hostile_stored_entry_is_left_out_with_a_note(lab: Lab, tmp_path: Path,
                                                        kind: str) -> None:
    _put(lab, _hostile()[kind])
    try:
        for surface, (answer, notes) in _surfaces(lab, tmp_path).items():
            # judged from the points as before (2 against 3: not decided), and said why
            assert answer[0] == UNKNOWN, (kind, surface, answer)
            assert any("a stored lab A/B of these commits was left out" in n
                       for n in notes), (kind, surface, notes)
            assert not any(MARK in n for n in notes), (kind, surface, notes)
    finally:
        _put(lab, None)


def test_the_key_and_the_entry_refuse_what_they_do_not_write() -> None:
    with pytest.raises(lab_ab.LabABError):
        lab_ab.LabABKey("redis", "redis", "5" * 39, HEAD_SHA, PLATFORM, METRIC)
    with pytest.raises(lab_ab.LabABError):
        lab_ab.LabABKey("redis", "../x", BASE_SHA, HEAD_SHA, PLATFORM, METRIC)
    with pytest.raises(lab_ab.LabABError):
        lab_ab.LabABKey("redis", "redis", BASE_SHA, HEAD_SHA, "lab a", METRIC)
