"""The pull-request comment GitHub accepts and a maintainer reads (issue 40, item 5): at most
65,536 characters whatever the number of tests and platforms, the full tables left to the
linked report, and a first line that leads with the largest decided effect of each sign and
the tests that run the changed functions, small effects counted rather than headlined.

The generated sections are shaped like the ZRANGE BYRANK replay (#10337): hundreds of tests
on two platforms, one large instruction improvement, a few +0.7 % regressions, many
undecided rows, movers, sequential records and flags for every test."""

from __future__ import annotations

from dataclasses import replace

import pytest

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.common.comment_size import (
    GITHUB_MAX_BODY_CHARS,
    body_chars,
    fit,
    fits,
)
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section

ZRANGE = "memtier_benchmark-1key-zset-100-elements-zrange-all-elements"
SCARD, APPEND = "memtier_benchmark-1key-set-10-elements-scard", "memtier_benchmark-append-1"
INFO = PrInfo(org="redis", repo="redis", number=10337, head_sha="6" * 40, head_ref="zrange",
              base_ref="unstable", base_sha="1" * 40)


def _row(test: str, metric: str, verdict: str, change: float, reason: str = "") -> Comparison:
    return Comparison(test=test, metric=metric, n_baseline=5, n_comparison=5,
                      baseline_median=1000.0, comparison_median=1000.0 * (1 + change / 100),
                      change_pct=change, ci_low_pct=change - 0.03, ci_high_pct=change + 0.03,
                      p_value=0.001, p_adjusted=0.002, verdict=verdict, reason=reason,
                      paired=True, runs_needed=12 if verdict == UNKNOWN else None)


def _tests(n: int) -> list[str]:
    return [ZRANGE, SCARD, APPEND] + [f"memtier_benchmark-generated-{i:04d}-some-long-suite-name"
                                      f" @ oss-standalone-02-io-threads" for i in range(n - 3)]


def _instructions(tests: list[str]) -> ComparisonReport:
    rows = [_row(ZRANGE, "instructions_per_op", IMPROVEMENT, -16.5),
            _row(SCARD, "instructions_per_op", REGRESSION, 0.7),
            _row(APPEND, "instructions_per_op", REGRESSION, 0.68)]
    rows += [_row(t, "instructions_per_op", UNKNOWN, 0.4,
                  "time budget spent; counts not deterministic in this topology")
             if i % 2 else _row(t, "instructions_per_op", NO_CHANGE, 0.01)
             for i, t in enumerate(tests[3:])]
    return ComparisonReport(rows=tuple(rows), options=CompareOptions(metric="instructions_per_op",
                                                                     noise_floor_pct=0.5))


def _section(platform: str, n: int) -> Section:
    tests = _tests(n)
    timed = ComparisonReport(rows=tuple(_row(t, "ALL_STATS.Totals.Ops/sec", UNKNOWN, 3.0,
                                             "interval wider than the noise floor")
                                        for t in tests), options=CompareOptions())
    memory = ComparisonReport(rows=tuple(_row(t, "used_memory", NO_CHANGE, 0.0) for t in tests),
                              options=CompareOptions(metric="used_memory"))
    report = replace(timed, instructions=_instructions(tests), memory=memory)
    move = {"function": "addReplyLongLongWithPrefix", "file": "/b/src/networking.c",
            "baseline_per_op": 120.0, "comparison_per_op": 121.0, "delta_per_op": 1.0,
            "share_of_total_pct": 0.7}
    return Section(
        platform=platform, build_variant="gcc:12.2.0-amd64-debian-bookworm-default",
        state="completed", report=report.to_dict(),
        sequential={t: {"pairs": 5, "looks": [3, 5], "stopped": "time budget spent"}
                    for t in tests},
        notes=["Suites: 49 of 56 suites execute code in networking.c, t_zset.c that this PR "
               "changes " + "(scores ...) " * 60],
        movers={t: [move] * 8 for t in tests}, changed_files=["src/networking.c", "src/t_zset.c"],
        flags={t: ["client-bound"] for t in tests[::4]},
        links={"HTML report": f"https://ci.example/rbs/ev-{platform}.html"},
        changed_scores={ZRANGE: 9000.0, "memtier_benchmark-1key-zset-zrangestore": 8000.0,
                        SCARD: 120.0, APPEND: 110.0})


@pytest.mark.parametrize("tests", [300, 900])
def test_hundreds_of_tests_on_two_platforms_fit_and_link_the_full_tables(tests: int) -> None:
    sections = [_section("lab-a", tests), _section("lab-b", tests)]
    every_table = results_body(INFO, sections, [], limit=10**9)
    assert body_chars(every_table) > 4 * GITHUB_MAX_BODY_CHARS  # what GitHub would refuse
    body = results_body(INFO, sections, [])
    assert fits(body), body_chars(body)
    assert body.splitlines()[0] == INFO.marker  # the next edit finds the comment
    for platform in ("lab-a", "lab-b"):
        assert f"[HTML report](https://ci.example/rbs/ev-{platform}.html)" in body
        assert f"every table of `{platform}` is in the [HTML report]" in body
    # the large effect is in a table of each platform, the undecided are counted with why
    assert body.count(f"| `{ZRANGE}` | IMPROVEMENT | -16.50 % |") == 2
    assert f"Not decided: {(tests - 3) // 2} test(s): time budget spent" in body
    assert "Why `" + ZRANGE + "` moved" in body


def test_the_first_line_leads_with_the_largest_effect_of_each_sign() -> None:
    sections = [_section("lab-a", 300), _section("lab-b", 300)]
    first = results_body(INFO, sections, []).splitlines()[1]
    assert first.startswith(f"**Improvement** on every platform in 1 of 300 tests: `{ZRANGE}` "
                            "instructions per operation -16.5 % [-16.5 %, -16.5 %] on `lab-a` "
                            "(-16.5 % on `lab-b`); small regressions on every platform in 2 "
                            f"tests, each under 1 % (largest `{SCARD}` +0.7 % on `lab-a`)."), first
    # the tests that run the changed code most, and what each showed
    assert first.endswith(f"Tests that run the changed functions most: `{ZRANGE}` -16.5 %, "
                          "`memtier_benchmark-1key-zset-zrangestore` not run, "
                          f"`{SCARD}` +0.7 % (and 1 more)."), first
    assert len(first) < 1000


def test_a_large_regression_leads_even_beside_a_larger_improvement() -> None:
    section = _section("lab-a", 10)
    report = ComparisonReport.from_dict(section.report or {})
    assert report.instructions is not None
    rows = [replace(r, change_pct=4.0) if r.test == SCARD else r
            for r in report.instructions.rows]
    section.report = replace(report, instructions=replace(report.instructions,
                                                          rows=tuple(rows))).to_dict()
    first = results_body(INFO, [section], []).splitlines()[1]
    assert first.startswith(f"**Regression** in 2 of 10 tests: `{SCARD}` instructions per "
                            "operation +4.0 %"), first
    assert f"; **improvement** in 1 of 10 tests: `{ZRANGE}`" in first


@pytest.mark.parametrize("platforms", [24, 80])
def test_many_platforms_still_fit(platforms: int) -> None:
    """24: every section in its compact form; 80: even those do not fit, and the body is
    cut at a line with a note saying so (the marker and first line kept)."""
    sections = [_section(f"lab-{i:02d}", 40) for i in range(platforms)]
    body = results_body(INFO, sections, ["lab-99"])
    assert fits(body) and body.splitlines()[0] == INFO.marker
    assert body.splitlines()[1].startswith("**Partial: Improvement**")
    assert ("cut to stay within" in body) == (platforms == 80)


def test_a_small_comment_keeps_every_table() -> None:
    section = _section("lab-a", 6)
    body = results_body(INFO, [section], [])
    assert body == results_body(INFO, [section], [], limit=10**9)
    assert "Summary only" not in body and "No change (" in body


def test_fit_counts_what_github_counts_and_cuts_at_a_line() -> None:
    wide = "\n".join(["<!-- marker -->"] + ["\U0001F680" * 100] * 1000)  # 2 units each
    assert len(wide) < 2 * GITHUB_MAX_BODY_CHARS < body_chars(wide)
    cut = fit(wide)
    assert fits(cut) and cut.startswith("<!-- marker -->\n") and "cut to stay within" in cut
    assert all(line in ("", "\U0001F680" * 100) for line in cut.splitlines()[1:-2])
    assert fit("short") == "short"


def test_github_refuses_a_long_body_and_upsert_sends_one_it_accepts() -> None:
    """The stand-ins answer 422 as GitHub does; upsert_comment, the last guard, cuts a body
    a writer let grow past the limit instead of losing the comment."""
    import requests

    from redis_benchmarks_spec.notify.github_comments import (
        GitHubConfig,
        PullRequestRef,
        upsert_comment,
    )
    from tests.github_standin import GitHubStandIn

    long_body = "<!-- m -->\n" + ("x" * 99 + "\n") * 1000  # 100,011 characters
    with GitHubStandIn("tok") as gh:
        refused = requests.post(f"{gh.url}/repos/o/r/issues/3/comments", timeout=10,
                                json={"body": long_body}, headers={"Authorization": "token tok"})
        done = upsert_comment(GitHubConfig(api_url=gh.url, token="tok"),
                              PullRequestRef("o", "r", 3), "<!-- m -->", long_body)
    assert refused.status_code == 422 and "body is too long" in refused.text
    sent = gh.comments[done.comment_id]["body"]
    assert done.created and fits(sent) and sent.startswith("<!-- m -->\nxxx")
    assert sent.endswith("the linked report holds every table.")


def test_the_notifier_names_the_tests_the_selection_scored(redis_server) -> None:  # type: ignore[no-untyped-def]
    """The agent's selection record (which suites run the changed code, and how much) reaches
    the stored section and the first line; a real broker, the GitHub stand-in."""
    from redis_benchmarks_spec.events.messages import ArtifactRef, BuildEvent, new_id
    from redis_benchmarks_spec.events.names import StreamNames
    from redis_benchmarks_spec.notify.github_comments import GitHubConfig
    from redis_benchmarks_spec.notify.notifier import PrNotifier
    from redis_benchmarks_spec.pullrequest import selection_record
    from redis_benchmarks_spec.pullrequest import state as pr_state
    from redis_benchmarks_spec.pullrequest.ab_record import ABRecord
    from tests.github_standin import GitHubStandIn

    broker, names = redis_server.client(), StreamNames.with_prefix(f"t{new_id()[:6]}")
    event = BuildEvent(id="ev-1", request_id="rq-1", org="redis", repo="redis", branch="zrange",
                       sha=INFO.head_sha, commit_time_ms=1, build_variant="v",
                       artifact=ArtifactRef("redis", "k", "0" * 64, 1), pr=INFO.number, redis_version="",
                       platforms=["lab-a"])
    pr_state.save_info(broker, names, "rq-1", INFO)
    selection_record.save(broker, names, "ev-1", "lab-a", selection_record.SelectionRecord(
        [ZRANGE, SCARD], "profile", "2 of 3 suites run t_zset.c", {ZRANGE: 900.0, SCARD: 9.0}))
    report = ComparisonReport.from_dict(_section("lab-a", 5).report or {})
    with GitHubStandIn("tok") as gh:
        notifier = PrNotifier(broker, names, GitHubConfig(api_url=gh.url, token="tok"))
        done = notifier.platform_done(event, "lab-a", ABRecord(base_sha=INFO.base_sha,
                                                               report=report.to_dict()))
    assert done is not None
    first = gh.comments[done.comment_id]["body"].splitlines()[1]
    assert first.endswith(f"Tests that run the changed functions most: `{ZRANGE}` -16.5 %, "
                          f"`{SCARD}` +0.7 %."), first
    stored = pr_state.load_sections(broker, names, INFO)
    assert stored[0].changed_scores == {ZRANGE: 900.0, SCARD: 9.0}


def test_the_eta_sums_each_suites_measured_cost_over_the_plan(redis_server) -> None:  # type: ignore[no-untyped-def]
    """Per suite, this platform's cost of one run (moving average, in the broker); the ETA
    is the plan's first round of pairs of every test at those costs, at most the budget."""
    from redis_benchmarks_spec.agent import suite_cost
    from redis_benchmarks_spec.agent.suite_cost import EtaPlan, RunMeter, eta_text
    from redis_benchmarks_spec.events.messages import new_id
    from redis_benchmarks_spec.events.names import StreamNames

    broker, names = redis_server.client(), StreamNames.with_prefix(f"t{new_id()[:6]}")
    suite_cost.record(broker, names, "lab-a", {"slow": [120.0], "fast": [4.0, 6.0]})
    suite_cost.record(broker, names, "lab-a", {"slow": [60.0]})
    broker.hset(suite_cost.key(names, "lab-a"), "forged", "nan")
    costs = suite_cost.load(broker, names, "lab-a", ["slow", "fast", "never", "forged"])
    assert costs == {"slow": 90.0, "fast": 5.0}  # 0.5 x new + 0.5 x old; a NaN is no cost
    assert suite_cost.load(broker, names, "lab-b", ["slow"]) == {}
    # io-threads and standalone: the suite runs twice per pair and side
    runs = ["slow", "slow", "fast", "never"]
    text = eta_text(runs, costs, EtaPlan(first_pairs=3, max_pairs=40, time_budget_s=1800))
    # (90 + 90 + 5 + median 90) x 2 runs x 3 pairs = 1650 s; at most 1800 s + one pair
    assert text.startswith("ETA about 28 min (4 suite(s) x 3 pairs x 2 runs at this "
                           "platform's measured cost per suite, 5-90 s a run; 1 never run "
                           "here, counted at the median), at most 33 min (time budget)"), text
    assert eta_text(["never"], costs, EtaPlan(3, 40)) == ""
    meter, now = RunMeter(clock=lambda: now[0]), [0.0]
    for spent in (30.0, 50.0):
        meter.started()
        now[0] += spent
        meter.ended("slow")
    meter.add("fast", 10.0, results=2)
    assert meter.per_suite == {"slow": [30.0, 50.0], "fast": [5.0, 5.0]}
    assert meter.machine_s == 90.0


def test_the_final_comment_says_the_machine_minutes_per_platform() -> None:
    a, b = _section("lab-a", 6), _section("lab-b", 6)
    a.machine_s, b.machine_s = 754.0, 690.0
    body = results_body(INFO, [a, b], [])
    assert "Machine time: `lab-a` 12.6 min, `lab-b` 11.5 min (wall time of every run" in body
    assert "Machine time" not in results_body(INFO, [_section("lab-a", 6)], [])
