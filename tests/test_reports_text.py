"""The Markdown and terminal reports: a header saying what was compared, one definition of
the change column with the ratio of medians beside it, a "why" that does not repeat numbers."""

from __future__ import annotations

from pathlib import Path

from tests.cli import rbs_in_process
from tests.report_fixtures import BASE_SHA, COMP_SHA, two_sides


def _compare(tmp_path: Path, fmt: str) -> str:
    base, comp = two_sides(tmp_path)
    out = tmp_path / f"report.{fmt}"
    code = rbs_in_process(["compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
                           "--format", fmt, "--output", str(out)])
    assert code == 0
    return out.read_text()


def test_markdown_header_names_commits_versions_runs_and_platform(tmp_path: Path) -> None:
    text = _compare(tmp_path, "markdown")
    header = text.split("regression(s)")[0]
    assert f"`{BASE_SHA[:10]}`" in header and f"`{COMP_SHA[:10]}`" in header
    assert "7.2.4" in header and "7.2.5" in header
    assert "| Runs | 10 | 10 |" in header  # 2 tests x 5 runs per side
    assert "platform icelake-2s" in header and "topology oss-standalone" in header


def test_markdown_change_column_is_named_and_ratio_of_medians_beside_it(tmp_path: Path) -> None:
    text = _compare(tmp_path, "markdown")
    assert "| Median ratio | Change (HL) | 95% CI |" in text
    assert "Hodges-Lehmann" in text  # the footnote names the estimator
    row = next(line for line in text.splitlines() if "string-get" in line and "REGRESSION" in line)
    cells = [c.strip() for c in row.strip("|").split("|")]
    ratio, change = float(cells[4].rstrip("%")), float(cells[5].rstrip("%"))
    assert -11 < ratio < -9 and -11 < change < -9
    why = cells[-1]
    assert "CI [" not in why and "runs per side" not in why and "%," not in why


def test_terminal_table_has_header_and_runs_needed_column(tmp_path: Path) -> None:
    text = _compare(tmp_path, "table")
    assert f"commit {BASE_SHA[:10]}" in text and f"commit {COMP_SHA[:10]}" in text
    assert "runs needed" in text and "change (HL)" in text and "median ratio" in text


def test_paired_rows_name_their_estimator() -> None:
    import numpy as np

    from redis_benchmarks_spec.analysis.compare import compare_paired
    from redis_benchmarks_spec.analysis.report import to_markdown
    rng = np.random.default_rng(3)
    base = rng.normal(100_000, 1_000, 12)
    pairs = [(float(b), float(b) * 0.9 * float(rng.normal(1, 0.005))) for b in base]
    report = compare_paired({"t": pairs})
    text = to_markdown(report)
    assert report.rows[0].method.startswith("mean")  # 12 normal pairs: the Student t method
    assert "Change (HL, or t where marked)" in text and "% (t) |" in text
    assert "HL = Hodges-Lehmann; t = mean of per-pair log ratios" in text
