"""The comment's first line leads with what every platform decided the same way (issue 62,
item 3). Shaped like the held-out hot-path pull request run through the lab on `lab-a` and
`lab-b`: LRANGE, SMEMBERS, HGETALL and ZRANGE improved on both; an io-threads test was
decided on `lab-a` alone; `redis-benchmark-string-incr` was a "regression" on `lab-b`
(+1.9 % [+0.5, +3.3]) while `lab-a` read -1.7 % [-6.7, +3.5]. The line once led with that
INCR row as a **Regression** and named the consistent effect after the io-threads row.
Where each test stands comes from ``analysis.platform_agreement``; the comment renders it."""

from __future__ import annotations

from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    Comparison,
    ComparisonReport,
)
from redis_benchmarks_spec.analysis.platform_agreement import (
    DISAGREE,
    EVERY,
    NO_EFFECT,
    ONE_PLATFORM,
    agreement,
    standing,
)
from redis_benchmarks_spec.notify.pr_body import results_body
from redis_benchmarks_spec.notify.pr_summary import headline
from redis_benchmarks_spec.pullrequest.state import PrInfo, Section

METRIC = "instructions_per_op"
INCR = "redis-benchmark-string-incr"
IO = "memtier_benchmark-1Mkeys-string-get-10B @ oss-standalone-02-io-threads"
LRANGE = "memtier_benchmark-1key-list-100-elements-lrange-all-elements"
SMEMBERS = "memtier_benchmark-1key-set-100-elements-smembers"
HGETALL = "memtier_benchmark-1key-hash-50-fields-hgetall"
ZRANGE = "memtier_benchmark-1key-zset-100-elements-zrange-all-elements"
INFO = PrInfo(org="redis", repo="redis", number=13000, head_sha="a" * 40, head_ref="reply",
              base_ref="unstable", base_sha="b" * 40)


def _row(test: str, verdict: str, change: float, low: float | None = None,
         high: float | None = None) -> Comparison:
    return Comparison(test=test, metric=METRIC, n_baseline=3, n_comparison=3,
                      change_pct=change, ci_low_pct=change - 0.2 if low is None else low,
                      ci_high_pct=change + 0.2 if high is None else high, verdict=verdict,
                      paired=True)


def _section(platform: str, rows: list[Comparison]) -> Section:
    report = ComparisonReport(rows=tuple(rows), options=CompareOptions(metric=METRIC))
    return Section(platform=platform, build_variant="gcc:12.2.0-amd64-debian-bookworm-default",
                   state="completed", report=report.to_dict())


def _consistent(shift: float) -> list[Comparison]:
    return [_row(LRANGE, IMPROVEMENT, -2.0 + shift), _row(SMEMBERS, IMPROVEMENT, -1.85),
            _row(HGETALL, IMPROVEMENT, -1.5), _row(ZRANGE, IMPROVEMENT, -1.45 - shift)]


def _replay() -> list[Section]:
    lab_a = [_row(INCR, UNKNOWN, -1.7, -6.7, 3.5), _row(IO, IMPROVEMENT, -6.0, -9.0, -3.0),
             *_consistent(0.0)]
    lab_b = [_row(INCR, REGRESSION, 1.9, 0.5, 3.3), _row(IO, UNKNOWN, -2.0, -8.0, 4.0),
             *_consistent(0.05)]
    return [_section("lab-a", lab_a), _section("lab-b", lab_b)]


def test_the_first_line_leads_with_what_every_platform_decided() -> None:
    first = results_body(INFO, _replay(), []).splitlines()[1]
    assert first.startswith(
        "**Improvement** on every platform in 4 of 6 tests: "
        f"`{LRANGE}` instructions per operation -2.0 % [-2.2 %, -1.8 %] on `lab-a` (-1.9 % on "
        f"`lab-b`); then `{SMEMBERS}` -1.9 %, `{HGETALL}` -1.5 %, `{ZRANGE}` -1.5 %; "), first
    # then what one platform alone says, with the other platform's reading
    assert (f"; **improvement** on one platform only in 1 of 6 tests: `{IO}` instructions per "
            "operation -6.0 % [-9.0 %, -3.0 %] on `lab-a` (-2.0 % on `lab-b`, not decided)"
            ) in first
    # the consistent effect is named before the io-threads row, and that before INCR
    assert first.index(f"`{HGETALL}`") < first.index(f"`{IO}`") < first.index(f"`{INCR}`")


def test_a_verdict_the_other_platform_contradicts_is_never_a_plain_regression() -> None:
    first = headline(_replay(), [])
    assert "**Regression**" not in first and "**regression**" not in first, first
    assert first.endswith(
        f"; **platforms disagree** on 1 test (platform-specific): `{INCR}` instructions per "
        "operation +1.9 % [+0.5 %, +3.3 %] on `lab-b` (a regression there) against -1.7 % "
        "[-6.7 %, +3.5 %] on `lab-a` (not decided)."), first
    # alone, it still leads as a disagreement, both numbers shown, never as a Regression
    alone = headline([_section("lab-a", [_row(INCR, UNKNOWN, -1.7, -6.7, 3.5)]),
                      _section("lab-b", [_row(INCR, REGRESSION, 1.9, 0.5, 3.3)])], [])
    assert alone.startswith(f"**Platforms disagree** on 1 test (platform-specific): `{INCR}` "
                            "instructions per operation +1.9 % [+0.5 %, +3.3 %] on `lab-b`"), alone
    assert "-1.7 % [-6.7 %, +3.5 %] on `lab-a`" in alone and "Regression" not in alone


def test_a_large_one_platform_regression_comes_after_the_shared_improvement() -> None:
    """A larger effect on one platform (the other undecided, same sign) no longer leads."""
    lab_a = [*_consistent(0.0), _row(IO, REGRESSION, 7.0)]
    lab_b = [*_consistent(0.0), _row(IO, UNKNOWN, 2.0, -3.0, 7.0)]
    first = headline([_section("lab-a", lab_a), _section("lab-b", lab_b)], [])
    assert first.startswith("**Improvement** on every platform in 4 of 5 tests"), first
    assert (f"; **regression** on one platform only in 1 of 5 tests: `{IO}` instructions per "
            "operation +7.0 % [+6.8 %, +7.2 %] on `lab-a` (+2.0 % on `lab-b`, not decided)."
            ) in first


def test_one_platform_reads_as_before() -> None:
    """With one platform there is no other to agree with: its decided rows lead as ever."""
    lab_b = [_row(INCR, REGRESSION, 1.9, 0.5, 3.3), *_consistent(0.0)]
    first = headline([_section("lab-b", lab_b)], [])
    assert first.startswith(f"**Regression** in 1 of 5 tests: `{INCR}` instructions per "
                            "operation +1.9 % [+0.5 %, +3.3 %] on `lab-b`; **improvement** in "
                            f"4 of 5 tests: `{LRANGE}`"), first


def test_where_each_test_stands() -> None:
    a, b = "lab-a", "lab-b"
    assert standing([(a, _row(LRANGE, IMPROVEMENT, -2.0)),
                     (b, _row(LRANGE, IMPROVEMENT, -1.9))], 2) == (EVERY, IMPROVEMENT)
    # the other platform undecided (or no change) with the same sign: one platform's word
    assert standing([(a, _row(IO, IMPROVEMENT, -6.0)),
                     (b, _row(IO, NO_CHANGE, -0.1))], 2) == (ONE_PLATFORM, IMPROVEMENT)
    # only one platform compared the test while two reported
    assert standing([(a, _row(IO, IMPROVEMENT, -6.0))], 2) == (ONE_PLATFORM, IMPROVEMENT)
    assert standing([(a, _row(IO, IMPROVEMENT, -6.0))], 1) == (EVERY, IMPROVEMENT)
    # an estimate of the opposite sign, decided or not, is a disagreement
    assert standing([(a, _row(INCR, UNKNOWN, -1.7)),
                     (b, _row(INCR, REGRESSION, 1.9))], 2) == (DISAGREE, None)
    assert standing([(a, _row(INCR, IMPROVEMENT, -1.7)),
                     (b, _row(INCR, REGRESSION, 1.9))], 2) == (DISAGREE, None)
    assert standing([(a, _row(INCR, UNKNOWN, -1.7)),
                     (b, _row(INCR, UNKNOWN, 1.9))], 2) == (NO_EFFECT, None)


def test_tests_are_matched_across_platforms_and_ordered_by_standing() -> None:
    # lab-b labels the suite by its bare name (it compared it in one topology), lab-a by
    # `name @ topology` (its other topology's row is missing): the same test
    rows = [("lab-a", _row(f"{SMEMBERS} @ oss-standalone", IMPROVEMENT, -1.8)),
            ("lab-b", _row(SMEMBERS, IMPROVEMENT, -1.9)),
            ("lab-a", _row(INCR, UNKNOWN, -1.7)), ("lab-b", _row(INCR, REGRESSION, 1.9)),
            ("lab-a", _row(HGETALL, NO_CHANGE, 0.1)),
            ("lab-a", _row(IO, IMPROVEMENT, -6.0))]
    found = [(t.test, t.standing, [p for p, _ in t.rows]) for t in agreement(rows)]
    assert found == [(f"{SMEMBERS} @ oss-standalone", EVERY, ["lab-a", "lab-b"]),
                     (IO, ONE_PLATFORM, ["lab-a"]),
                     (INCR, DISAGREE, ["lab-a", "lab-b"]),
                     (HGETALL, NO_EFFECT, ["lab-a"])]
    # two topologies the bare name could be: which one is unknown, so it stays apart
    rows.append(("lab-a", _row(f"{SMEMBERS} @ oss-standalone-02-io-threads", UNKNOWN, -1.0)))
    apart = {t.test: t.standing for t in agreement(rows)}
    assert apart[SMEMBERS] == ONE_PLATFORM
    assert apart[f"{SMEMBERS} @ oss-standalone"] == ONE_PLATFORM
