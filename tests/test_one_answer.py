"""One fixed set of samples through every surface that judges two builds (issue 62, item 4):
``rbs compare`` of folders and of the datasink, the pull-request comment's datasink route,
the site's compare page (its data and the page a real ``rbs site`` serves) and, for the runs
of an interleaved A/B, the engine's judgment of those runs as the lab's A/B hands it to the
comment. Each must say the same verdict with the same interval.

Two sets, each through a real redis-stack-server (RedisTimeSeries) filled by the project's
writer:

* independent runs of two commits, ops/sec 3 % lower with runs that agree: inside the
  catalogue's 5 % floor of throughput (NO CHANGE), beyond the 2 % the comment's datasink
  route used to judge with (REGRESSION there);
* the runs of one interleaved A/B session (each labelled with its side and pair, filed
  under its own commit, as the lab's A/B of a pull request files them), instruction counts
  3 % lower: judged as pairs by the A/B, and, before the datasink surfaces paired them, as
  two samples of points (another interval) by ``rbs compare`` of the datasink, the comment's
  datasink route and the site.
"""

from __future__ import annotations

import dataclasses
import json
import re
from collections.abc import Iterator
from pathlib import Path

import pytest
import redis

from redis_benchmarks_spec.analysis.engine import Judging, catalogue_options, judge
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.common.metrics import INSTRUCTIONS_METRIC, THROUGHPUT_METRIC
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent
from redis_benchmarks_spec.notify import pr_compare
from redis_benchmarks_spec.pullrequest.state import PrInfo
from redis_benchmarks_spec.results.document import RunResult
from redis_benchmarks_spec.web.compare_page import CompareRequest, compare
from redis_benchmarks_spec.web.rows import pct
from tests.cli import rbs
from tests.datasink_fixtures import BUILD_VARIANT, TEST_NAME, make_result, start_datasink
from tests.site_fixtures import get, start_site, stop

PLATFORM = "icelake-2s"
#: the fixed samples: a baseline that repeats to ~0.5 %, a comparison 3 % lower
BASE = [1000.0, 1005.0, 997.0, 1003.0, 1001.0, 999.0]
HEAD = [970.0, 976.0, 968.0, 972.0, 973.0, 969.0]
SAMPLES_A, SAMPLES_B = "1" * 40, "2" * 40  # independent runs of two commits
SESSION_A, SESSION_B = "3" * 40, "4" * 40  # one interleaved A/B of two commits
START = 1_700_000_000_000

Answer = tuple[str, float | None, float | None, float | None]  # verdict, change, interval


def _run(sha: str, metric: str, value: float, n: int, **ctx: object) -> RunResult:
    doc = make_result(n, hash=sha, branch=None, version=None)
    return dataclasses.replace(
        doc, run_id=f"{TEST_NAME}:{sha[:4]}:{n}", start_ms=START + n * 60_000,
        end_ms=START + n * 60_000 + 5, metrics={metric: value},
        context=dataclasses.replace(doc.context, **ctx))  # type: ignore[arg-type]


def _independent() -> tuple[list[RunResult], list[RunResult]]:
    base = [_run(SAMPLES_A, THROUGHPUT_METRIC, 100 * v, i) for i, v in enumerate(BASE)]
    head = [_run(SAMPLES_B, THROUGHPUT_METRIC, 100 * v, 20 + i) for i, v in enumerate(HEAD)]
    return base, head


def _session() -> list[ABRun]:
    """Pairs in the A/B's order (A B, B A, ...), each run labelled with its side and pair."""
    runs = []
    for rep, (b, c) in enumerate(zip(BASE, HEAD)):
        order = [(BASELINE, SESSION_A, b), (COMPARISON, SESSION_B, c)]
        for k, (side, sha, value) in enumerate(order if rep % 2 == 0 else order[::-1]):
            doc = _run(sha, INSTRUCTIONS_METRIC, 4.46 * value, 40 + 2 * rep + k,
                       ab_side=side, repetition=rep)
            runs.append(ABRun(side, rep, doc))
    return runs


def _write(folder: Path, docs: list[RunResult]) -> None:
    for doc in docs:
        rep = doc.context.repetition
        where = folder / (f"rep-{rep:02d}" if rep is not None else doc.run_id.replace(":", "_"))
        where.mkdir(parents=True)
        doc.write(where / "result.json")


@pytest.fixture(scope="module", name="lab")
def lab_fixture(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, str, Path]]:
    """(datasink URL, site base URL, folder of the result folders) of both sets."""
    folder = tmp_path_factory.mktemp("one-answer")
    base, head = _independent()
    session = _session()
    _write(folder / "independent" / "base-runs", base)
    _write(folder / "independent" / "head-runs", head)
    for side in (BASELINE, COMPARISON):
        _write(folder / "session" / side, [r.result for r in session if r.side == side])
    sink: EmbeddedDatasink = start_datasink(folder / "datasink")
    try:
        with sink.client() as client:
            pushed = push_results(client, [*base, *head, *(r.result for r in session)])
            assert len(pushed.pushed) == 24, pushed.failed
        proc, site = start_site(sink.url, folder / "site.log")
        try:
            yield sink.url, site, folder
        finally:
            stop(proc)
    finally:
        sink.down()


def _json_answer(out: Path) -> Answer:
    rows = json.loads(out.read_text())["rows"]
    assert [r["test"] for r in rows] == [TEST_NAME], rows
    r = rows[0]
    return r["verdict"], r["change_pct"], r["ci_low_pct"], r["ci_high_pct"]


def _cli(tmp_path: Path, name: str, *args: str) -> Answer:
    out = tmp_path / f"{name}.json"
    done = rbs("compare", *args, "--format", "json", "--output", str(out), timeout=120)
    assert done.returncode == 0, done.stderr
    return _json_answer(out)


def _row_answer(rows: tuple) -> Answer:  # type: ignore[type-arg]
    (row,) = [r for r in rows if r.test == TEST_NAME]
    return row.verdict, row.change_pct, row.ci_low_pct, row.ci_high_pct


def _comment_datasink_route(client: redis.Redis, a: str, b: str, metric: str) -> Answer:
    """The comment's section of a platform the lab ran no A/B on: the head commit's points
    against the base commit's (``notify.pr_compare``)."""
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis",
                       branch="feature", sha=b, commit_time_ms=0,
                       build_variant=BUILD_VARIANT, built_at_ms=0,
                       artifact=ArtifactRef("redis", "rbs:artifact:x", "0" * 64, 1),
                       redis_version="7.0.15")
    info = PrInfo("redis", "redis", 1, b, "feature", "unstable", a)
    found = pr_compare.compare_platform(client, event, PLATFORM, info,
                                        pr_compare.PrCompareOptions(metric=metric))
    assert found.baseline_label == f"hash {a}"  # the base commit's own points
    return _row_answer(found.report.rows)


def _site(site: str, client: redis.Redis, a: str, b: str, metric: str) -> Answer:
    """The compare page: its data exactly, and the row the served page shows."""
    (platform,) = compare(client, CompareRequest(a, b, metric, PLATFORM))
    answer = _row_answer(platform.report.rows)
    status, html = get(site, f"/compare?a={a}&b={b}&platform={PLATFORM}&metric={metric}")
    assert status == 200
    shown = re.findall(r'<tr data-test="([^"]+)"><td>[^<]*</td><td class="[^"]*" '
                       r'data-verdict="([^"]+)">[^<]*</td><td>([^<]*)</td><td>([^<]*)</td>',
                       html)
    verdict, change, low, high = answer
    assert shown == [(TEST_NAME, verdict, pct(change), f"[{pct(low)}, {pct(high)}]")], shown
    return answer


def _same(answers: dict[str, Answer]) -> Answer:
    """Every surface's answer, asserted equal (intervals to 1e-9 %)."""
    first = next(iter(answers.values()))
    for surface, answer in answers.items():
        assert answer[0] == first[0], answers
        for got, want in zip(answer[1:], first[1:]):
            assert got is not None and want is not None, (surface, answers)
            assert got == pytest.approx(want, abs=1e-9), (surface, answers)
    return first


def test_independent_runs_get_one_answer_with_the_catalogue_floor(
        lab: tuple[str, str, Path], tmp_path: Path) -> None:
    url, site, folder = lab
    a, b, metric = SAMPLES_A, SAMPLES_B, THROUGHPUT_METRIC
    with redis.Redis.from_url(url) as client:
        answers = {
            "rbs compare of folders": _cli(
                tmp_path, "folders", "--baseline-dir", str(folder / "independent" / "base-runs"),
                "--comparison-dir", str(folder / "independent" / "head-runs"),
                "--metric", metric),
            "rbs compare of the datasink": _cli(
                tmp_path, "datasink", "--baseline-hash", a, "--comparison-hash", b,
                "--platform", PLATFORM, "--datasink", url, "--metric", metric),
            "the comment's datasink route": _comment_datasink_route(client, a, b, metric),
            "the site's compare page": _site(site, client, a, b, metric),
        }
    verdict, change, low, high = _same(answers)
    # -3 % with runs that agree: inside throughput's 5 % floor (common.metrics), so no
    # surface may call it a regression, whatever floor it would like
    assert verdict == "NO CHANGE", answers
    assert change is not None and -3.5 < change < -2.5
    assert low is not None and high is not None and -5 < low < high < 0


def test_the_runs_of_an_interleaved_ab_are_judged_as_its_pairs_everywhere(
        lab: tuple[str, str, Path], tmp_path: Path) -> None:
    url, site, folder = lab
    a, b, metric = SESSION_A, SESSION_B, INSTRUCTIONS_METRIC
    # what the lab's A/B hands the comment: the engine's judgment of its runs, paired
    lab_ab = judge(_session(), Judging(catalogue_options(metric), paired=True))
    with redis.Redis.from_url(url) as client:
        answers = {
            "the lab's A/B (the comment's A/B route)": _row_answer(lab_ab.rows),
            "rbs compare of the session's folders": _cli(
                tmp_path, "folders", "--baseline-dir", str(folder / "session" / BASELINE),
                "--comparison-dir", str(folder / "session" / COMPARISON), "--metric", metric),
            "rbs compare of the datasink": _cli(
                tmp_path, "datasink", "--baseline-hash", a, "--comparison-hash", b,
                "--platform", PLATFORM, "--datasink", url, "--metric", metric),
            "the comment's datasink route": _comment_datasink_route(client, a, b, metric),
            "the site's compare page": _site(site, client, a, b, metric),
        }
    verdict, change, _low, high = _same(answers)
    assert verdict == "IMPROVEMENT", answers  # fewer instructions per op
    assert change is not None and -3.5 < change < -2.5 and high is not None and high < 0
    assert lab_ab.rows[0].paired and lab_ab.rows[0].n_baseline == len(BASE)
