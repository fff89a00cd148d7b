"""Verdicts, directory loading and rendering of redis_benchmarks_spec.analysis."""

from __future__ import annotations

import dataclasses
import json
import math
import re
from pathlib import Path

import numpy as np
import pytest
import redis

from redis_benchmarks_spec.analysis import compare as cmp
from redis_benchmarks_spec.analysis import stats, verdict
from redis_benchmarks_spec.analysis.compare import (
    IMPROVEMENT,
    NO_CHANGE,
    REGRESSION,
    UNKNOWN,
    CompareOptions,
    ComparisonReport,
    compare_paired,
    compare_samples,
    metric_direction,
)
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.session_runs import SampleSet, sample_runs
from redis_benchmarks_spec.common.name_filter import NameFilter
from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.inputs.session_folder import load_folders
from redis_benchmarks_spec.results.document import RunResult
from tests.cli import rbs_in_process
from tests.datasink_fixtures import (  # noqa: F401  (fixtures register by import)
    client_fixture,
    datasink_fixture,
    make_result,
)

OPS = "ALL_STATS.Totals.Ops/sec"
P50 = "ALL_STATS.Totals.Percentile_Latencies.p50.00"


def _num(value: float | None) -> float:
    assert value is not None
    return value


def _width(row: cmp.Comparison) -> float:
    return _num(row.ci_high_pct) - _num(row.ci_low_pct)


def _lognormal(rng: np.random.Generator, center: float, cv: float, n: int) -> list[float]:
    return list(rng.lognormal(math.log(center), cv, n))


def test_metric_direction() -> None:
    assert metric_direction(OPS) == 1
    assert metric_direction("rps") == 1
    assert metric_direction(P50) == -1
    assert metric_direction("ALL_STATS.Totals.Latency") == -1
    assert metric_direction("p99_latency_ms") == -1
    assert metric_direction("overallQuantiles.all_queries.q50") == 1


def test_clear_ten_percent_regression_is_flagged() -> None:
    rng = np.random.default_rng(10)
    base = _lognormal(rng, 100_000, 0.03, 10)
    comp = _lognormal(rng, 90_000, 0.03, 10)
    row = compare_samples({"t": (base, comp)}).rows[0]
    assert row.verdict == REGRESSION
    assert row.change_pct == pytest.approx(-10, abs=3)
    assert _num(row.ci_high_pct) < -2
    assert row.n_baseline == row.n_comparison == 10


def test_latency_increase_is_regression_and_decrease_improvement() -> None:
    rng = np.random.default_rng(11)
    base = _lognormal(rng, 1.0, 0.03, 10)
    slower = _lognormal(rng, 1.2, 0.03, 10)
    faster = _lognormal(rng, 0.8, 0.03, 10)
    opts = CompareOptions(metric=P50)
    rep = compare_samples({"up": (base, slower), "down": (base, faster)}, opts)
    verdicts = {r.test: r.verdict for r in rep.rows}
    assert verdicts == {"up": REGRESSION, "down": IMPROVEMENT}
    # the same numbers as throughput mean the opposite
    rep = compare_samples({"up": (base, slower)}, CompareOptions(metric=OPS))
    assert rep.rows[0].verdict == IMPROVEMENT


def test_tight_equal_samples_are_no_change() -> None:
    rng = np.random.default_rng(12)
    base = _lognormal(rng, 100_000, 0.01, 12)
    comp = _lognormal(rng, 100_000, 0.01, 12)
    row = compare_samples({"t": (base, comp)}).rows[0]
    assert row.verdict == NO_CHANGE
    assert row.runs_needed is None


def test_noisy_small_change_is_unknown_with_runs_needed() -> None:
    rng = np.random.default_rng(13)
    base = _lognormal(rng, 100_000, 0.08, 5)
    comp = _lognormal(rng, 96_000, 0.08, 5)
    row = compare_samples({"t": (base, comp)}).rows[0]
    assert row.verdict == UNKNOWN
    assert row.runs_needed is not None and 5 < row.runs_needed <= 200
    # the runs needed have their own column: the reason says why, once
    assert "runs per side" not in row.reason and "CI [" not in row.reason
    assert "interval includes 0" in row.reason


def test_change_inside_floor_not_flagged_even_if_significant() -> None:
    base = [100.0 + 0.01 * i for i in range(20)]
    comp = [v * 0.99 for v in base]  # -1 %, perfectly resolved
    row = compare_samples({"t": (base, comp)}).rows[0]
    assert row.verdict != REGRESSION


def test_one_point_inside_spread_is_unknown() -> None:
    base = [100.0, 104.0, 96.0, 101.0, 99.0, 103.0, 97.0]
    row = compare_samples({"t": (base, [94.0])}).rows[0]
    assert row.verdict == UNKNOWN
    assert "1 point on comparison side" in row.reason


def test_one_point_far_outside_spread_is_flagged() -> None:
    base = [100.0, 101.0, 99.0, 100.5, 99.5, 100.2, 99.8]
    row = compare_samples({"t": (base, [80.0])}).rows[0]
    assert row.verdict == REGRESSION
    assert "1 point on comparison side" in row.reason
    row = compare_samples({"t": ([120.0], base)}).rows[0]  # single baseline point high
    assert row.verdict == REGRESSION
    assert "1 point on baseline side" in row.reason


def test_one_point_beyond_floor_but_within_three_robust_sds_is_unknown() -> None:
    base = [100.0, 110.0, 90.0, 105.0, 95.0, 108.0, 92.0]  # robust SD ~ 11
    row = compare_samples({"t": (base, [85.0])}).rows[0]   # 5.6 % below min, < 3 SDs
    assert row.verdict == UNKNOWN


def test_one_point_each_side_is_unknown() -> None:
    row = compare_samples({"t": ([100.0], [50.0])}).rows[0]
    assert row.verdict == UNKNOWN
    assert "1 point on each side" in row.reason


def test_empty_side_is_unknown() -> None:
    row = compare_samples({"t": ([100.0, 101.0], [])}).rows[0]
    assert row.verdict == UNKNOWN
    assert row.n_comparison == 0 and row.change_pct is None


def test_a_a_simulation_flags_nothing() -> None:
    rng = np.random.default_rng(2024)
    samples = {f"test-{i:02d}": (_lognormal(rng, 100_000, 0.12, 10),
                                 _lognormal(rng, 100_000, 0.12, 10)) for i in range(50)}
    rep = compare_samples(samples)
    assert rep.summary[REGRESSION] == 0 and rep.summary[IMPROVEMENT] == 0
    assert sum(rep.summary.values()) == 50


def test_bh_is_applied_across_tests() -> None:
    rng = np.random.default_rng(14)
    samples = {f"t{i}": (_lognormal(rng, 100, 0.03, 10), _lognormal(rng, 100, 0.03, 10))
               for i in range(20)}
    rep = compare_samples(samples)
    raw = [_num(r.p_value) for r in rep.rows]
    adj = [_num(r.p_adjusted) for r in rep.rows]
    assert adj == pytest.approx(stats.bh_adjust(raw))  # one family of all 20 tests
    assert all(a >= p for a, p in zip(adj, raw, strict=True))
    assert any(a > p for a, p in zip(adj, raw, strict=True))


def test_paired_resolves_drop_hidden_by_shared_drift() -> None:
    rng = np.random.default_rng(15)
    drift = rng.lognormal(0, 0.10, 16)
    pairs = [(1e5 * d * rng.lognormal(0, 0.01), 1e5 * 0.95 * d * rng.lognormal(0, 0.01))
             for d in drift]
    paired = compare_paired({"t": pairs}).rows[0]
    unpaired = compare_samples({"t": ([b for b, _ in pairs], [c for _, c in pairs])}).rows[0]
    assert paired.verdict == REGRESSION and paired.paired
    assert unpaired.verdict == UNKNOWN
    assert _width(paired) < _width(unpaired)


def test_paired_single_pair_is_unknown() -> None:
    row = compare_paired({"t": [(100.0, 50.0)]}).rows[0]
    assert row.verdict == UNKNOWN


def test_json_round_trip() -> None:
    rng = np.random.default_rng(16)
    rep = compare_samples({"a": (_lognormal(rng, 100, 0.03, 8), _lognormal(rng, 90, 0.03, 8)),
                           "b": ([100.0], [99.0])}, problems=["x: broken"])
    text = json.dumps(rep.to_dict())
    back = ComparisonReport.from_dict(json.loads(text))
    assert back == rep


# --- directories ---------------------------------------------------------------------------


def _write_run(directory: Path, test: str, value: float, status: str = "ok") -> None:
    directory.mkdir(parents=True, exist_ok=True)
    doc = RunResult(test_name=test, run_id=directory.name, status=status,
                        metrics={OPS: value} if status == "ok" else {})
    doc.write(directory / "result.json")


def _folders(base: Path, comp: Path, name: str = ".*") -> tuple[dict[str, SampleSet], list[str]]:
    found = load_folders(base, comp, NameFilter(name))
    return sample_runs(found.runs, OPS), found.problems


def test_folders_report_a_corrupt_file_and_failed_runs(tmp_path: Path) -> None:
    base, comp = tmp_path / "base", tmp_path / "comp"
    for i, v in enumerate([100.0, 101.0, 99.0]):
        _write_run(base / f"rep-{i}" / "get", "get", v)
        _write_run(comp / f"rep-{i}" / "get", "get", v * 0.8)
    _write_run(comp / "rep-9" / "get", "get", 0.0, status="failed")
    _write_run(comp / "rep-0" / "set", "set", 5.0)
    (comp / "rep-3" / "get").mkdir(parents=True)
    (comp / "rep-3" / "get" / "result.json").write_text("{not json")
    (comp / "summary.json").write_text("[]")
    (comp / "rep-0" / "memtier.json").write_text('{"ALL STATS": {}}')
    samples, problems = _folders(base, comp)
    assert samples["get"].baseline == [100.0, 101.0, 99.0]
    assert sorted(samples["get"].comparison) == pytest.approx([79.2, 80.0, 80.8])
    assert (samples["set"].baseline, samples["set"].comparison) == ([], [5.0])
    assert any("rep-3" in p and "result.json" in p for p in problems)
    assert any("failed" in p for p in problems)
    assert not any("summary.json" in p or "memtier.json" in p for p in problems)
    report = judge(load_folders(base, comp).runs, Judging(CompareOptions(metric=OPS),
                                                          paired=False))
    row = next(r for r in report.rows if r.test == "set")
    assert row.verdict == UNKNOWN and "baseline" in row.reason
    samples, _ = _folders(base, comp, "^set$")
    assert list(samples) == ["set"]


def test_dir_round_to_report(tmp_path: Path) -> None:
    base, comp = tmp_path / "b", tmp_path / "c"
    for i in range(6):
        _write_run(base / str(i), "get", 100.0 + i * 0.1)
        _write_run(comp / str(i), "get", 70.0 + i * 0.1)
    found = load_folders(base, comp)
    assert not found.paired
    rep = judge(found.runs, Judging(CompareOptions(metric=OPS), paired=False))
    assert rep.rows[0].verdict == REGRESSION
    assert rep.has_regression
    assert cmp.VERDICTS == (REGRESSION, IMPROVEMENT, cmp.SUSPECT, UNKNOWN, cmp.BUSY, NO_CHANGE)


# --- rendering -----------------------------------------------------------------------------


def _mixed_report() -> ComparisonReport:
    rng = np.random.default_rng(17)
    samples = {
        "reg": (_lognormal(rng, 1e5, 0.03, 10), _lognormal(rng, 0.9e5, 0.03, 10)),
        "imp": (_lognormal(rng, 1e5, 0.03, 10), _lognormal(rng, 1.1e5, 0.03, 10)),
        "same": (_lognormal(rng, 1e5, 0.004, 10), _lognormal(rng, 1e5, 0.004, 10)),
        "noisy|pipe": (_lognormal(rng, 1e5, 0.1, 5), _lognormal(rng, 1e5, 0.1, 5)),
        "one": (_lognormal(rng, 1e5, 0.01, 7), [1e5]),
    }
    return compare_samples(samples, problems=["x/result.json: not valid"])


def _cells(line: str) -> list[str]:
    """Split a GFM table row on unescaped pipes."""
    inner = line.strip()
    assert inner.startswith("|") and inner.endswith("|"), line
    return re.split(r"(?<!\\)\|", inner[1:-1])


def _tables(markdown: str) -> list[list[str]]:
    tables, current = [], []
    for line in markdown.splitlines():
        if line.startswith("|"):
            current.append(line)
        elif current:
            tables.append(current)
            current = []
    if current:
        tables.append(current)
    return tables


def test_markdown_tables_are_valid_gfm_and_state_n() -> None:
    from redis_benchmarks_spec.analysis.report import to_markdown
    rep = _mixed_report()
    md = to_markdown(rep)
    tables = _tables(md)
    assert len(tables) == 4  # regressions, improvements, unknown, no change
    data_rows = 0
    for table in tables:
        header, sep, *rows = table
        width = len(_cells(header))
        assert all(re.fullmatch(r"\s*:?-{3,}:?\s*", c) for c in _cells(sep))
        assert len(_cells(sep)) == width
        assert "n b / c" in header and "95% CI" in header
        for row in rows:
            assert len(_cells(row)) == width, row
            assert re.fullmatch(r"\s*\d+ / \d+\s*", _cells(row)[1])
            data_rows += 1
    assert data_rows == len(rep.rows)
    s = rep.summary
    assert f"{s[REGRESSION]} regression(s), {s[IMPROVEMENT]} improvement(s)" in md
    assert md.index("Regressions") < md.index("Improvements") < md.index("Unknown")
    assert "<details><summary>No change (1)</summary>" in md
    assert "Benjamini-Hochberg" in md and "noise" in md and "alpha=0.05" in md
    assert "10 / 10" in md and "7 / 1" in md
    assert "x/result.json: not valid" in md


def test_rich_table_and_json_render() -> None:
    from rich.console import Console

    from redis_benchmarks_spec.analysis.report import render, to_json
    rep = _mixed_report()
    console = Console(width=250, record=True)
    console.print(render(rep, "table"))
    text = console.export_text()
    for row in rep.rows:
        assert row.test in text and row.verdict in text
    assert ComparisonReport.from_dict(json.loads(to_json(rep))) == rep
    with pytest.raises(ValueError):
        render(rep, "csv")


# --- CLI -----------------------------------------------------------------------------------


def _dirs_with_regression(tmp_path: Path) -> tuple[Path, Path]:
    base, comp = tmp_path / "b", tmp_path / "c"
    for i in range(8):
        _write_run(base / str(i) / "get", "get", 100.0 + i * 0.2)
        _write_run(comp / str(i) / "get", "get", 100.0 + i * 0.2)
        _write_run(base / str(i) / "set", "set", 100.0 + i * 0.2)
        _write_run(comp / str(i) / "set", "set", 80.0 + i * 0.2)
    return base, comp


def test_cli_markdown_and_fail_on_regression(tmp_path: Path) -> None:
    base, comp = _dirs_with_regression(tmp_path)
    out = tmp_path / "report.md"
    argv = ["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
            "--format", "markdown", "--output", str(out)]
    assert rbs_in_process(argv) == 0
    assert rbs_in_process([*argv, "--fail-on-regression"]) == 1
    assert "1 regression(s)" in out.read_text()
    # only the unchanged test selected: nothing to fail on
    assert rbs_in_process([*argv, "--fail-on-regression", "--tests-regexp", "^get$"]) == 0
    out_json = tmp_path / "r.json"
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--format", "json", "--output", str(out_json)]) == 0
    rep = ComparisonReport.from_dict(json.loads(out_json.read_text()))
    assert {r.test: r.verdict for r in rep.rows}["set"] == REGRESSION


def test_cli_table_output(tmp_path: Path) -> None:
    base, comp = _dirs_with_regression(tmp_path)
    out = tmp_path / "t.txt"
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--output", str(out)]) == 0
    assert "REGRESSION" in out.read_text() and "set" in out.read_text()


def test_cli_without_sources_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    # 2, not 1: CI must not mistake "could not compare" for "regression"
    assert rbs_in_process(["compare", "--fail-on-regression"]) == 2
    assert "--baseline-dir" in capsys.readouterr().err


def test_cli_datasink_selectors_follow_the_flags() -> None:
    """The flags become each side's selector (the CLI parses; inputs.comparison_series
    reads): platform, last N and the dates, the end date to the end of its day."""
    from redis_benchmarks_spec.cli.compare import _query
    from redis_benchmarks_spec.cli.main import build_parser
    args = build_parser().parse_args([
        "compare", "--baseline-branch", "unstable", "--comparison-hash", "abc",
        "--platform", "x86", "--last-n", "8", "--from-date", "2024-01-01",
        "--to-date", "2024-01-31", "--groups-regexp", "^write$"])
    query, platforms = _query(args)
    assert platforms == {"baseline": "x86", "comparison": "x86"}
    for sel in (query.baseline, query.comparison):
        assert sel.platform == "x86" and sel.last_n == 8
        assert sel.from_ms == 1704067200000 and sel.to_ms == 1706745599999
    assert (query.baseline.side.kind, query.comparison.side.kind) == ("branch", "hash")
    assert not query.change_point_window  # --last-n given
    assert query.keep is not None and query.keep.matches("t", ["write"], [])
    assert not query.keep.matches("t", ["read"], [])


def test_cli_usage_errors_exit_2(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    base, comp = _dirs_with_regression(tmp_path)
    assert rbs_in_process(["compare", "--baseline-dir", str(base)]) == 2
    assert "both --baseline-dir and --comparison-dir" in capsys.readouterr().err
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--tests-regexp", "(", "--fail-on-regression"]) == 2
    assert "--tests-regexp" in capsys.readouterr().err
    assert rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--tests-regexp", "^nothing$"]) == 2
    assert "--tests-regexp '^nothing$'" in capsys.readouterr().err  # echoed (issue 45)
    assert rbs_in_process(["compare", "--baseline-branch", "a", "--comparison-branch", "b",
                           "--from-date", "yesterday"]) == 2
    assert "not an ISO date" in capsys.readouterr().err


def test_cli_compare_against_a_real_datasink(datasink: EmbeddedDatasink, client: redis.Redis,
                                             tmp_path: Path) -> None:
    """Branch vs branch through redis-stack-server: the writer's series, the reader's query."""
    from redis_benchmarks_spec.datasink.writer import push_results

    rng = np.random.default_rng(30)
    results = []
    for side, branch, scale in (("b", "unstable", 1.0), ("c", "pr-7", 0.8)):
        for run in range(8):
            offset = 0 if side == "b" else 100
            for test, factor in (("get", 1.0), ("set", scale)):
                doc = make_result(run + offset, test_name=test, branch=branch,
                                  hash=f"{side}{run:03d}", version=f"9.{run}.{offset}")
                doc = dataclasses.replace(
                    doc, tested_groups=["string"] if test == "get" else ["string", "write"],
                    metrics={OPS: float(1e5 * factor * rng.lognormal(0, 0.01))})
                results.append(doc)
    new = dataclasses.replace(make_result(150, test_name="new", branch="pr-7", hash="c150"),
                              metrics={OPS: 5.0})
    push_results(client, [*results, new])
    out = tmp_path / "r.json"
    argv = ["compare", "--datasink", datasink.url, "--baseline-branch", "unstable",
            "--comparison-branch", "pr-7", "--platform", "icelake-2s", "--format", "json",
            "--output", str(out), "--fail-on-regression"]
    assert rbs_in_process(argv) == 1
    rep = ComparisonReport.from_dict(json.loads(out.read_text()))
    assert {r.test: (r.verdict, r.n_baseline, r.n_comparison) for r in rep.rows} == {
        "get": (NO_CHANGE, 8, 8), "set": (REGRESSION, 8, 8), "new": (UNKNOWN, 0, 1)}
    assert any("new" in p and "baseline" in p for p in rep.problems)
    assert rbs_in_process([*argv, "--groups-regexp", "^write$"]) == 1
    assert [r.test for r in ComparisonReport.from_dict(json.loads(out.read_text())).rows] \
        == ["set"]
    assert rbs_in_process([*argv, "--tests-regexp", "^get$", "--last-n", "3"]) == 0
    (row,) = ComparisonReport.from_dict(json.loads(out.read_text())).rows
    assert (row.test, row.n_baseline, row.n_comparison) == ("get", 3, 3)
    assert rbs_in_process([*argv, "--platform", "cascadelake"]) == 2  # nothing stored there
    # the runs are of 2023-11-14 and 15 (UTC): those days keep them, an earlier day none
    assert rbs_in_process([*argv, "--from-date", "2023-11-14", "--to-date", "2023-11-15"]) == 1
    assert rbs_in_process([*argv, "--to-date", "2023-11-13"]) == 0
    rows = ComparisonReport.from_dict(json.loads(out.read_text())).rows
    assert rows and all((r.verdict, r.n_baseline, r.n_comparison) == (UNKNOWN, 0, 0)
                        for r in rows)


# --- verdict rules, directly -----------------------------------------------------------------


def _evidence(**kw: object) -> verdict.Evidence:
    base: dict[str, object] = {"metric": OPS, "n": 10, "change_pct": -5.0, "ci_low_pct": -8.0,
                               "ci_high_pct": -3.0, "p_adjusted": 0.001}
    base.update(kw)
    return verdict.Evidence(**base)  # type: ignore[arg-type]


def test_decide_each_condition_is_required() -> None:
    opts = CompareOptions(noise_floor_pct=2.0)
    assert verdict.decide(_evidence(), opts).verdict == REGRESSION
    assert verdict.decide(_evidence(metric=P50), opts).verdict == IMPROVEMENT
    # interval touches 0, change within the floor, adjusted p too large: each alone -> UNKNOWN
    for kw in ({"ci_high_pct": 0.5}, {"change_pct": -1.5, "ci_low_pct": -2.5,
                                      "ci_high_pct": -0.5}, {"p_adjusted": 0.2}):
        decision = verdict.decide(_evidence(**kw), opts)
        assert decision.verdict == UNKNOWN, kw
        assert decision.runs_needed is not None and decision.runs_needed > 10
    inside = verdict.decide(_evidence(change_pct=0.2, ci_low_pct=-1.0, ci_high_pct=1.5), opts)
    assert inside.verdict == NO_CHANGE and inside.runs_needed is None
    # a wider floor turns the 5 % regression into UNKNOWN
    assert verdict.decide(_evidence(), CompareOptions(noise_floor_pct=6)).verdict == UNKNOWN


def test_runs_needed_from_interval_and_from_sd() -> None:
    opts = CompareOptions(noise_floor_pct=2.0)
    # half-width 4 % must shrink below |change| 3 %: 10 * (4/3)^2 = 17.8 -> 18
    ev = _evidence(change_pct=3.0, ci_low_pct=-1.0, ci_high_pct=7.0, p_adjusted=0.3)
    assert verdict.runs_needed(ev, opts) == 18
    # unbounded: 2 * (100 * 1.96 * 0.12 / 10)^2 = 11.06 -> 12
    ev = _evidence(n=1, change_pct=-10.0, ci_low_pct=None, ci_high_pct=None, log_sd=0.12)
    assert verdict.runs_needed(ev, opts) == 12


def test_prediction_p_matches_t_distribution() -> None:
    from scipy import stats as sps
    others = [100.0, 110.0, 90.0, 105.0, 95.0]
    logs = np.log(others)
    t = (math.log(70.0) - logs.mean()) / (logs.std(ddof=1) * math.sqrt(1 + 1 / 5))
    assert verdict.prediction_p(70.0, others) == pytest.approx(2 * sps.t.sf(abs(t), 4))
    assert verdict.prediction_p(100.0, [100.0, 100.0, 100.0]) == 1.0
    assert verdict.prediction_p(90.0, [100.0, 100.0, 100.0]) == 0.0


def test_single_point_a_a_rarely_flags() -> None:
    """7 baseline runs vs 1 comparison run at 12 % CV, 20 x 50 tests. min/max + 3 MAD alone
    flags ~1.6 % (16 expected here); with the prediction p in BH it is ~0.1 %."""
    flagged = 0
    for sim in range(20):
        rng = np.random.default_rng(500 + sim)
        rep = compare_samples({f"t{i}": (_lognormal(rng, 1e5, 0.12, 7),
                                         _lognormal(rng, 1e5, 0.12, 1)) for i in range(50)})
        flagged += rep.summary[REGRESSION] + rep.summary[IMPROVEMENT]
        assert all("1 point on comparison side" in r.reason for r in rep.rows)
    assert flagged <= 5


def test_a_a_many_comparisons_unpaired_and_paired() -> None:
    flagged = 0
    for sim in range(10):
        rng = np.random.default_rng(700 + sim)
        rep = compare_samples({f"t{i}": (_lognormal(rng, 1e5, 0.12, 10),
                                         _lognormal(rng, 1e5, 0.12, 10)) for i in range(50)})
        flagged += rep.summary[REGRESSION] + rep.summary[IMPROVEMENT]
        pairs = {f"t{i}": list(zip(_lognormal(rng, 1e5, 0.12, 10),
                                   _lognormal(rng, 1e5, 0.12, 10), strict=True))
                 for i in range(50)}
        rep = compare_paired(pairs)
        flagged += rep.summary[REGRESSION] + rep.summary[IMPROVEMENT]
    assert flagged <= 1  # of 1000 null tests


def _doc(folder: Path, topology: str, run: int, value: float | None) -> None:
    from redis_benchmarks_spec.results.document import STATUS_FAILED, STATUS_OK, RunContext
    doc = RunResult("t", f"t-{topology}-{run}", STATUS_OK if value is not None else STATUS_FAILED,
                    context=RunContext(topology=topology),
                    metrics={} if value is None else {"ALL_STATS.Totals.Ops/sec": value})
    path = folder / f"{topology}-{run}" / "result.json"
    path.parent.mkdir(parents=True)
    doc.write(path)


def test_folders_label_a_suites_topologies_as_the_page_does(
        tmp_path: Path) -> None:
    """A topology whose runs all failed still makes the other's label ``t @ topology``, as
    the HTML report of the same folders labels it (two topologies that ran are two rows:
    test_adaptive_run.py)."""
    from redis_benchmarks_spec.inputs.reports import from_two_folders
    for side, values in (("a", (100.0, 101.0, 99.0)), ("b", (80.0, 81.0, 79.0))):
        for i, v in enumerate(values):
            _doc(tmp_path / side, "oss-standalone", i, v)
            _doc(tmp_path / side, "oss-standalone-04-io-threads", i, None)
    found = load_folders(tmp_path / "a", tmp_path / "b")
    samples = sample_runs(found.runs, "ALL_STATS.Totals.Ops/sec")
    assert {t: (s.baseline, s.comparison) for t, s in samples.items()} == {
        "t @ oss-standalone": ([100.0, 101.0, 99.0], [80.0, 81.0, 79.0])}
    page = from_two_folders(tmp_path / "a", tmp_path / "b", CompareOptions())
    assert set(page.sides[0].runs) == set(samples)


# --- the report is a value -------------------------------------------------------------------


def test_the_report_is_a_value_its_summary_counted_from_its_rows() -> None:
    """Built once by the engine; a step that adds to it builds a new one (issue 32)."""
    import dataclasses
    rep = cmp.compare_samples({"a": ([100.0] * 5, [80.0, 81, 79, 80, 80]),
                               "b": ([100.0, 101, 99, 100, 100], [100.0, 99, 101, 100, 100])},
                              CompareOptions(noise_floor_pct=2.0))
    assert isinstance(rep.rows, tuple) and isinstance(rep.problems, tuple)
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.rows[0].verdict = NO_CHANGE  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        rep.context = None  # type: ignore[misc]
    assert rep.summary[REGRESSION] == 1 and sum(rep.summary.values()) == 2
    flipped = dataclasses.replace(rep, rows=tuple(dataclasses.replace(r, verdict=UNKNOWN)
                                                  for r in rep.rows))
    assert flipped.summary[UNKNOWN] == 2 and rep.summary[REGRESSION] == 1  # rep unchanged
    # written with its summary for readers of the file; read back, counted again, and a row
    # with a field a newer version added still reads
    raw = json.loads(json.dumps(rep.to_dict()))
    assert raw["summary"] == rep.summary
    raw["summary"] = {REGRESSION: 7}
    raw["rows"][0]["added_later"] = 1
    again = ComparisonReport.from_dict(raw)
    assert again.summary == rep.summary and again.rows == rep.rows
