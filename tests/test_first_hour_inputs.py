"""Issue 45, item 2: the mistakes of a first hour are caught before anything runs, and
said in one line naming the folder, file or flag at fault.

* ``rbs compare`` of an empty folder, of a folder with no result document, of two folders
  with no test in common: exit 2, the folder named, never a table of UNKNOWN rows;
* a test one side has no run of is UNKNOWN with a reason naming that side, even when the
  other side's runs were disturbed (it said BUSY and named the wrong side);
* ``--dry-run`` of an A/B counts both sides' runs;
* a ``--redis-server`` that is a text file is "not an ELF binary", not a permission problem;
* a ``--tests-regexp`` that matches nothing is echoed;
* a lab replay never reports a comment of an earlier replay (a negative duration).
"""

from __future__ import annotations

import dataclasses
import json
import shutil
import time
from pathlib import Path

import pytest

from redis_benchmarks_spec.analysis.compare import BUSY, UNKNOWN, CompareOptions
from redis_benchmarks_spec.analysis.engine import Judging, judge
from redis_benchmarks_spec.analysis.session_runs import BASELINE, COMPARISON, ABRun
from redis_benchmarks_spec.lab import deliveries
from redis_benchmarks_spec.lab.github_local import CommentStore
from redis_benchmarks_spec.lab.replay import Tracked, copy_comments
from redis_benchmarks_spec.lab.state import LabState
from redis_benchmarks_spec.results.document import DISTURBED
from tests.cli import rbs
from tests.datasink_fixtures import make_result
from tests.report_fixtures import BASE_SHA, write_side

OPS = "ALL_STATS.Totals.Ops/sec"
SHIPPED = "redis-benchmark-1Kkeys-string-get-100B"


def _one_error_line(done: object, *words: str) -> str:
    assert done.returncode == 2, (done.stdout, done.stderr)  # type: ignore[attr-defined]
    lines = done.stderr.strip().splitlines()  # type: ignore[attr-defined]
    assert len(lines) == 1, lines
    assert not done.stdout.strip(), done.stdout  # type: ignore[attr-defined]
    for word in words:
        assert word in lines[0], lines[0]
    return lines[0]


def test_compare_of_an_empty_folder_names_it(tmp_path: Path) -> None:
    base = write_side(tmp_path / "base", BASE_SHA, "7.2.4", 1.0, runs=2)
    (tmp_path / "empty").mkdir()
    done = rbs("compare", "--baseline-dir", str(base), "--comparison-dir",
               str(tmp_path / "empty"), timeout=60)
    _one_error_line(done, f"--comparison-dir {tmp_path / 'empty'}", "empty folder")


def test_compare_of_a_folder_that_is_not_a_sessions_names_it(tmp_path: Path) -> None:
    other = tmp_path / "notes"
    (other / "sub").mkdir(parents=True)
    (other / "sub" / "readme.txt").write_text("not a result\n")
    comp = write_side(tmp_path / "comp", BASE_SHA, "7.2.4", 1.0, runs=2)
    done = rbs("compare", "--baseline-dir", str(other), "--comparison-dir", str(comp),
               timeout=60)
    _one_error_line(done, f"--baseline-dir {other}", "no result.json")


def test_compare_of_folders_with_no_test_in_common_names_both(tmp_path: Path,
                                                               monkeypatch: pytest.MonkeyPatch
                                                               ) -> None:
    base = write_side(tmp_path / "base", BASE_SHA, "7.2.4", 1.0, runs=2)
    monkeypatch.setattr("tests.report_fixtures.TESTS", ("memtier_benchmark-other-test",))
    comp = write_side(tmp_path / "comp", BASE_SHA, "7.2.4", 1.0, runs=2)
    done = rbs("compare", "--baseline-dir", str(base), "--comparison-dir", str(comp),
               timeout=60)
    _one_error_line(done, str(base), str(comp), "no test in common",
                    "memtier_benchmark-other-test")


def test_a_test_missing_on_one_side_names_that_side_even_when_the_other_is_disturbed(
        ) -> None:
    """Baseline: test A (runs disturbed) and B; comparison: B only. A's row is UNKNOWN
    because the comparison has no run of it, whatever became of the baseline's runs."""
    def run(side: str, i: int, test: str, flags: list[str]) -> ABRun:
        doc = dataclasses.replace(make_result(i, test_name=test), flags=flags)
        return ABRun(side, None, doc)
    runs = [*(run(BASELINE, i, "only-in-baseline", [DISTURBED]) for i in range(4)),
            *(run(side, i, "in-both", []) for side in (BASELINE, COMPARISON)
              for i in range(4))]
    report = judge(runs, Judging(CompareOptions(metric=OPS), paired=False))
    row = next(r for r in report.rows if r.test.startswith("only-in-baseline"))
    assert row.verdict == UNKNOWN and row.verdict != BUSY
    assert "comparison side" in row.reason and "baseline side" not in row.reason, row.reason


@pytest.fixture(name="server_binary")
def server_binary_fixture() -> str:
    found = shutil.which("redis-server")
    if not found:
        pytest.skip("redis-server not installed")
    return found


def test_dry_run_of_an_ab_counts_both_sides(server_binary: str) -> None:
    done = rbs("run", "--test", SHIPPED, "--dry-run", "--baseline-server", server_binary,
               "--comparison-server", server_binary, "--repetitions", "10", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "x 10 repetitions x 2 sides (A/B) = 20 run(s)" in done.stdout, done.stdout
    doc = rbs("run", "--test", SHIPPED, "--dry-run", "--baseline-server", server_binary,
              "--comparison-server", server_binary, "--format", "json", timeout=60)
    plan = json.loads(doc.stdout)
    assert plan["runs"] == 20 and plan["sides"] == 2 and plan["max_runs"] == 40


def test_a_text_file_as_redis_server_is_not_an_elf_binary(tmp_path: Path) -> None:
    text = tmp_path / "redis-server.txt"
    text.write_text("this is not a program\n")
    line = _one_error_line(rbs("run", "--test", SHIPPED, "--redis-server", str(text),
                               "--dry-run", timeout=60), "--redis-server", "not an ELF binary")
    assert "chmod" not in line
    text.chmod(0o755)  # executable or not, a text file is no program
    _one_error_line(rbs("run", "--test", SHIPPED, "--redis-server", str(text), "--dry-run",
                        timeout=60), "not an ELF binary")


def test_a_regexp_that_matches_nothing_is_echoed() -> None:
    _one_error_line(rbs("run", "--tests-regexp", "no-such-suite-zq", "--dry-run",
                        timeout=60), "--tests-regexp 'no-such-suite-zq'", "no valid suite")


def test_replay_ignores_the_comments_of_an_earlier_replay(tmp_path: Path,
                                                         monkeypatch: pytest.MonkeyPatch
                                                         ) -> None:
    """The same PR replayed twice in one lab, the second failing before its comment: the
    first replay's final body is older than the second label and is not the second's
    (it printed "label to final comment -0.82 min")."""
    monkeypatch.setattr("redis_benchmarks_spec.lab.replay.FINAL_WAIT_S", 0.3)
    state = LabState(root=str(tmp_path), broker_url="", datasink_url="", api_url="",
                     github_url="", source="", prefix="t", platforms={}, suites_dir="")
    store = CommentStore(tmp_path / "github", "http://127.0.0.1")
    issue = (deliveries.ORG, deliveries.REPO, 7)
    store.create(issue, "earlier replay's final body")
    time.sleep(0.05)
    pr = deliveries.PullRequest(base="a" * 40, head="b" * 40, name="pr7", number=7)
    tracked = Tracked(pr, labelled_at=time.time())
    assert copy_comments(state, tracked, tmp_path / "out") == ("", None)
    store.create(issue, "this replay's final body")
    body, seconds = copy_comments(state, tracked, tmp_path / "out")
    assert body == "this replay's final body"
    assert seconds is not None and seconds >= 0
