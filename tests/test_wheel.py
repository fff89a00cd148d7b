"""A wheel that works: built from the repository, installed into a fresh venv outside it,
it lists the shipped suites and runs one against a real redis-server."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
PIP = [str(REPO / ".venv" / "bin" / "python"), "-m", "pip"]
SUITE = "redis-benchmark-1Kkeys-string-get-100B"


def _run(argv: list[str], cwd: Path, timeout: float = 600) -> subprocess.CompletedProcess[str]:
    # no PYTHONPATH or repo venv leaking into the fresh one
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "VIRTUAL_ENV")}
    return subprocess.run(argv, cwd=cwd, env=env, capture_output=True, text=True,
                          timeout=timeout, check=False)


CLUTTER = {".venv", ".cache", ".git", "results", "build", "tests", "redis_benchmarks_spec.egg-info"}


def _top_level_clutter(directory: str, names: list[str]) -> set[str]:
    """What not to copy: only at the repository root (the package has a results/ too)."""
    return CLUTTER & set(names) if Path(directory) == REPO else set()


@pytest.mark.slow
def test_installed_wheel_runs_a_suite(tmp_path: Path) -> None:
    # build from a copy: an in-tree build would leave build/ and egg-info in the checkout
    source = tmp_path / "source"
    shutil.copytree(REPO, source, ignore=_top_level_clutter)
    wheels = tmp_path / "wheels"
    built = _run([*PIP, "wheel", "--no-deps", "--no-build-isolation", "-q", "-w", str(wheels),
                  str(source)], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    (wheel,) = wheels.glob("redis_benchmarks_spec-*.whl")
    venv = tmp_path / "fresh"
    assert _run([sys.executable, "-m", "venv", str(venv)], cwd=tmp_path).returncode == 0
    installed = _run([str(venv / "bin" / "pip"), "install", "-q", "--no-compile", str(wheel)],
                     cwd=tmp_path, timeout=900)
    assert installed.returncode == 0, installed.stderr
    rbs = str(venv / "bin" / "rbs")
    listed = _run([rbs, "suites", "list"], cwd=tmp_path)
    assert listed.returncode == 0, listed.stderr
    assert SUITE in listed.stdout and " 0 suites" not in listed.stdout
    assert str(REPO) not in listed.stdout  # read from the installed package, not the checkout
    ran = _run([rbs, "run", "--test", SUITE, "--topology", "oss-standalone", "--test-time", "1",
                "--no-datasink",
                "--results-dir", str(tmp_path / "results")], cwd=tmp_path)
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 test run(s): 1 ok" in ran.stdout
    assert list((tmp_path / "results").rglob("result.json"))
