"""The comment's first line and its "why" table, from sections as the notifier stores them:
the instruction verdict decides the headline when it was measured (a throughput row that
says UNKNOWN under valgrind does not), the largest effects are named with their interval,
pending platforms make it partial, and the movers table says which functions lie in the
files the pull request changes."""

from __future__ import annotations

from dataclasses import replace

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.notify.pr_summary import headline, movers_lines
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section

GEO = "redis-benchmark-1Kkeys-geo-geodist"


def _report(metric: str, rows: list[tuple[str, str, float]]) -> ComparisonReport:
    made = [Comparison(test=t, metric=metric, n_baseline=3, n_comparison=3, change_pct=c,
                       ci_low_pct=c - 0.2, ci_high_pct=c + 0.2, verdict=v, paired=True)
            for t, v, c in rows]
    return ComparisonReport(rows=tuple(made), options=CompareOptions(metric=metric))


def _section(platform: str, instr: list[tuple[str, str, float]]) -> Section:
    report = replace(_report("Ops/sec", [(t, UNKNOWN, 3.0) for t, _, _ in instr]),
                     instructions=_report("instructions_per_op", instr))
    return Section(platform=platform, build_variant="v", state="completed",
                   report=report.to_dict(), sequential={GEO: {"pairs": 3, "looks": [3]}})


def test_the_instruction_verdict_makes_the_first_line() -> None:
    sections = [_section("lab-a", [(GEO, IMPROVEMENT, -23.5), ("t2", NO_CHANGE, 0.01)]),
                _section("lab-b", [(GEO, IMPROVEMENT, -23.4), ("t2", NO_CHANGE, 0.0)])]
    line = headline(sections, [])
    assert line == ("**Improvement** on every platform in 1 of 2 tests: "
                    "`redis-benchmark-1Kkeys-geo-geodist` "
                    "instructions per operation -23.5 % [-23.7 %, -23.3 %] on `lab-a` (-23.4 % "
                    "on `lab-b`).")
    assert headline(sections[:1], ["lab-b"]).startswith("**Partial: Improvement**")
    worse = [_section("lab-a", [(GEO, REGRESSION, 4.0), ("t2", IMPROVEMENT, -9.0)])]
    assert headline(worse, []).startswith("**Regression** in 1 of 2 tests")
    assert "; **improvement** in 1 of 2 tests: `t2`" in headline(worse, [])
    same = [_section("lab-a", [(GEO, NO_CHANGE, 0.02)])]
    assert headline(same, []) == ("**No change** in any of the 1 tests (each interval lies "
                                  "within the noise floor).")
    open_ = [_section("lab-a", [(GEO, UNKNOWN, 0.5)])]
    assert headline(open_, []).startswith("**Not decided**: 1 of 1 tests need more pairs")


def test_movers_table_says_whether_they_lie_in_the_changed_files() -> None:
    movers = {GEO: [
        {"function": "fixedpoint_d2string", "file": "/b/src/util.c", "baseline_per_op": 0.0,
         "comparison_per_op": 154.0, "delta_per_op": 154.0, "share_of_total_pct": 1.5},
        {"function": "__printf_fp_l", "file": None, "baseline_per_op": 2100.0,
         "comparison_per_op": 0.0, "delta_per_op": -2100.0, "share_of_total_pct": -20.7}]}
    lines = movers_lines(movers, ["src/geo.c", "src/util.c"])
    text = "\n".join(lines)
    assert "1 of the top 2 lie in the files this pull request changes" in text
    assert "| `fixedpoint_d2string` | `util.c` | 0.0 | 154.0 | +154.0 (+1.50 % of all) | yes |" \
        in text
    assert "| `__printf_fp_l` | `?` | 2,100.0 | 0.0 | -2,100.0 (-20.70 % of all) | unknown |" \
        in text


def test_the_body_opens_with_the_headline_and_states_the_false_alarm_control() -> None:
    info = PrInfo(org="redis", repo="redis", number=11552, head_sha="6" * 40,
                  head_ref="pr", base_ref="unstable", base_sha="1" * 40)
    section = _section("lab-a", [(GEO, IMPROVEMENT, -23.5)])
    section.notes = ["Suites: 1 of 2 suites execute code in geo.c that this PR changes."]
    body = results_body(info, [section], [])
    lines = body.splitlines()
    assert lines[0] == info.marker and lines[1].startswith("**Improvement** in 1 of 1 tests")
    assert "Suites: 1 of 2 suites execute code in geo.c" in body
    assert "one Benjamini-Hochberg family" in body


def test_a_platform_that_chose_its_suites_shows_them_and_its_eta() -> None:
    from redis_benchmarks_spec.agent.code_selection import queued_line
    from redis_benchmarks_spec.analysis.suite_selection import BY_PROFILE, Selection
    chosen = Selection([GEO], BY_PROFILE, "1 of 2 suites execute code in geo.c that this PR "
                                          "changes")
    from redis_benchmarks_spec.agent.suite_cost import EtaPlan
    plan = EtaPlan(first_pairs=3, max_pairs=40, time_budget_s=1800)
    line = queued_line(chosen, [GEO], {GEO: 25.0, "other": 4.0}, plan)
    assert line == ("Queued: 1 suite (1 of 2 suites execute code in geo.c that this PR "
                    "changes); ETA about 2 min (1 suite(s) x 3 pairs x 2 runs at this "
                    "platform's measured cost per suite, 25 s a run), at most 31 min "
                    "(time budget).")
    assert queued_line(chosen, [GEO], {GEO: 25.0}, EtaPlan(3, 4, 1800)).endswith(
        "at most 3 min (4 pairs each).")
    # no run of the chosen suites measured here yet: no estimate
    assert queued_line(chosen, [GEO], {"other": 4.0}, plan).endswith("this PR changes).")
    info = PrInfo(org="redis", repo="redis", number=1, head_sha="6" * 40, base_sha="1" * 40)
    # chose its suites at 12:03 UTC
    running = Section(platform="lab-b", build_variant="v", state="running", notes=[line],
                      started_ms=1_700_000_000_000 - 1_700_000_000_000 % 86_400_000
                      + (12 * 60 + 3) * 60_000)
    body = results_body(info, [_section("lab-a", [(GEO, IMPROVEMENT, -23.5)]), running],
                        ["lab-b", "lab-c"])
    first = body.splitlines()[1]
    assert first.startswith("**Partial: Improvement**")
    assert first.endswith(" Still running on `lab-b`, `lab-c`."), first
    assert line in body and ":hourglass: Running." in body
    # which platform runs, since when, where its ETA is; one no agent took is named too
    assert (":hourglass: Still running on `lab-b` (running since 12:03 UTC; what it runs "
            "and when it should be done are in its section), `lab-c` (no agent has taken "
            "the build yet): their tests are added to this comment when they finish.") in body


def test_runs_a_platform_could_not_judge_are_named_in_every_form() -> None:
    """A failed run or a test without baseline points is in the report's problems: the
    comment names them above the sections, so the compact form (which keeps no problems
    table) does not drop them silently."""
    from redis_benchmarks_spec.common.comment_size import GITHUB_MAX_BODY_CHARS
    info = PrInfo(org="redis", repo="redis", number=1, head_sha="6" * 40, base_sha="1" * 40)
    section = _section("lab-a", [(GEO, IMPROVEMENT, -23.5)])
    report = ComparisonReport.from_dict(section.report or {})
    cluster = ("redis-benchmark-string-incr @ oss-cluster-3-primaries (comparison): cluster "
               "did not form in 60 s")
    problems = (cluster, "memtier_benchmark-append-1: no baseline points on unstable",
                "t3: failed", "t4: failed")
    section.report = replace(report, problems=problems).to_dict()
    section.links = {"HTML report": "https://ci.example/r.html"}
    full = results_body(info, [section], [])
    compact = results_body(info, [section], [], limit=len(full) - 100)
    assert "Summary only" in compact and "Problems (4)" not in compact  # the compact form
    for body in (full, compact):
        assert (":warning: Not judged on `lab-a` · `v`: redis-benchmark-string-incr @ "
                "oss-cluster-3-primaries (comparison): cluster did not form in 60 s; "
                "memtier_benchmark-append-1: no baseline points on unstable; t3: failed; "
                "and 1 more. This run does not answer them: a new label, or `/rbs benchmark "
                "suites=<name>`, runs them again.") in body, body
    assert GITHUB_MAX_BODY_CHARS > len(full)
