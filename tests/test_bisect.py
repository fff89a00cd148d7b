"""`rbs bisect --local` over small git histories of Debian's redis 7.0.15 source with one
injected slow commit: a usleep in GET (found on throughput; instruction counts do not see a
sleep, so ``--metric auto`` falls back), and a busy loop in GET (found on instructions per
op under callgrind). Each builds at most 4 times in one work tree (fewer when cached)."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest

from tests.bisect_fixtures import BUSY_LOOP, SLEEP, WORK, bisect_suites, make_history
from tests.cli import rbs


def _bisect(repo: Path, shas: list[str], suites: Path, *extra: str, pairs: int = 3
            ) -> subprocess.CompletedProcess[str]:
    return rbs("bisect", "--local", "--repo", str(repo),
               "--good", shas[0], "--bad", shas[-1], "--test", "bisect-get",
               "--suites-dir", str(suites), "--work-dir", str(WORK), "--repetitions",
               str(pairs), "--format", "json", *extra, timeout=3000)


@pytest.mark.slow
@pytest.mark.timeout(3600)  # a first full build takes ~10 min on a loaded 2-core VM
def test_bisect_finds_the_injected_slow_commit(tmp_path: Path) -> None:
    repo, shas = make_history(tmp_path / "src", SLEEP)
    proc = _bisect(repo, shas, bisect_suites(tmp_path / "suites"), "--metric", "throughput")
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["first_bad"] == shas[2], data
    assert data["metric"] == "ALL_STATS.Totals.Ops/sec"
    assert data["commits"] == shas[1:]
    assert data["builds"] == 4  # good, bad, two midpoints (built now or cached)
    assert data["compiles"] <= 4
    probes = {p["sha"]: p for p in data["probes"]}
    assert probes[shas[3]]["verdict"] == "REGRESSION"
    assert probes[shas[2]]["bad"] and not probes[shas[1]]["bad"]
    assert (WORK / "bin").is_dir() and len(list((WORK / "bin").iterdir())) >= 4


@pytest.mark.slow
@pytest.mark.timeout(3600)
def test_bisect_on_instruction_counts_finds_a_busy_loop(tmp_path: Path) -> None:
    repo, shas = make_history(tmp_path / "src", BUSY_LOOP)
    # midpoints on 2 pairs: instruction counts place a midpoint by its change
    proc = _bisect(repo, shas, bisect_suites(tmp_path / "suites"), "--metric", "auto",
                   "--profile-requests", "1000", pairs=2)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["first_bad"] == shas[2], data
    assert data["metric"] == "instructions_per_op", data  # callgrind is installed here
    probes = {p["sha"]: p for p in data["probes"]}
    bad_end = probes[shas[3]]
    assert bad_end["verdict"] == "REGRESSION" and bad_end["metric"] == "instructions_per_op"
    assert bad_end["change_pct"] > 10  # ~1,500 more instructions per GET
    assert probes[shas[2]]["bad"] and not probes[shas[1]]["bad"]
    assert probes[shas[1]]["change_pct"] < 2  # a comment changes no instruction count


def test_bisect_usage_errors(tmp_path: Path) -> None:
    cases = [
        (["--repo", str(tmp_path / "nope"), "--local"], "--repo"),
        (["--broker", "redis://127.0.0.1:1", "--repo", str(tmp_path)], "--broker"),
        (["--local", "--repo", str(tmp_path), "--time-budget", "soon"], "--time-budget"),
        (["--broker", "redis://127.0.0.1:1", "--repo", str(tmp_path), "--platform", "a b"],
         "--platform"),
    ]
    for extra, flag in cases:
        proc = rbs("bisect", "--good", "a", "--bad", "b", "--test", "x",
                   *extra, timeout=60)
        assert proc.returncode == 2, (extra, proc.stderr)
        assert flag in proc.stderr and "Traceback" not in proc.stderr, (extra, proc.stderr)
        assert len(proc.stderr.strip().splitlines()) <= 2, proc.stderr
