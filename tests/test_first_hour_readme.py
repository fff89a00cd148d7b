"""Issue 45, item 4: README's local commands, as written, from a fresh clone.

The "Main uses" blocks up to "Bisect" are read from the clone's README (so a changed line is
tested as changed), joined where they continue with ``\\``, and run from the clone's root with
its code first on the import path. The paths they name exist as a new user's would:
``~/redis/src/redis-server``, ``./old`` and ``./new`` hold a real redis-server, ``~/src/redis`` is
the vendored Redis history, ``results/A`` and ``results/B`` two results folders. ``rbs run``
lines get ``--dry-run`` (every input check, the commits resolved, the runs counted, nothing
benchmarked: tests/test_run_commits.py builds and runs two commits for real); the others run
exactly as written. A line naming a placeholder (``<sha>``) or the datasink is left out.
"""

from __future__ import annotations

import os
import re
import shlex
import shutil
import subprocess
from pathlib import Path

import pytest

from benchmarks import redis_history as history
from tests.cli import RBS, REPO
from tests.report_fixtures import BASE_SHA, COMP_SHA, write_side

SECTION = re.compile(r"## Main uses.*?\*\*Bisect\*\*", re.DOTALL)
BLOCK = re.compile(r"```\n(.*?)```", re.DOTALL)


def readme_commands(readme: Path) -> list[str]:
    """Every ``rbs`` command of the local "Main uses" blocks, continuation lines joined and
    comments dropped."""
    section = SECTION.search(readme.read_text())
    assert section is not None, "README has no 'Main uses' section up to Bisect"
    commands = []
    for block in BLOCK.findall(section.group(0)):
        joined = block.replace("\\\n", " ")
        for line in joined.splitlines():
            line = line.split("  #", 1)[0].strip()
            if line.startswith("rbs ") and "<" not in line:
                commands.append(re.sub(r"\s+", " ", line))
    return commands


@pytest.fixture(name="clone")
def clone_fixture(tmp_path: Path) -> tuple[Path, dict[str, str]]:
    """A fresh clone of this checkout's HEAD, and a new user's home and paths."""
    server = shutil.which("redis-server")
    if server is None:
        pytest.skip("redis-server not installed")
    try:
        bare = history.bare_repo()
    except history.HistoryError as exc:
        pytest.skip(str(exc))
    clone = tmp_path / "redis-benchmarks-spec"
    subprocess.run(["git", "clone", "-q", str(REPO), str(clone)], check=True, timeout=120)
    home = tmp_path / "home"
    for link, target in ((home / "redis" / "src" / "redis-server", Path(server)),
                         (clone / "old" / "redis-server", Path(server)),
                         (clone / "new" / "redis-server", Path(server)),
                         (home / "src" / "redis", bare)):
        link.parent.mkdir(parents=True, exist_ok=True)
        link.symlink_to(target)
    write_side(clone / "results" / "A", BASE_SHA, "7.2.4", 1.0, runs=3)
    write_side(clone / "results" / "B", COMP_SHA, "7.2.5", 0.9, runs=3)
    env = {**os.environ, "HOME": str(home), "PYTHONPATH": str(clone), "COLUMNS": "200"}
    return clone, env


@pytest.mark.slow
def test_the_readme_local_commands_run_as_written_from_a_fresh_clone(
        clone: tuple[Path, dict[str, str]]) -> None:
    root, env = clone
    commands = readme_commands(root / "README.md")
    assert any("--comparison-commit" in c for c in commands), commands  # item 1 is there
    assert len(commands) >= 6, commands
    for command in commands:
        argv = [os.path.join(env["HOME"], a[2:]) if a.startswith("~/") else a
                for a in shlex.split(command)[1:]]
        if argv[0] == "run":
            argv.append("--dry-run")
        done = subprocess.run([RBS, *argv], cwd=root, env=env, capture_output=True,
                              text=True, timeout=300, check=False)
        assert done.returncode == 0, f"{command}\n{done.stdout[-1500:]}\n{done.stderr[-1500:]}"
        assert not re.search(r"^rbs \w+: (error|internal)", done.stderr, re.MULTILINE), \
            f"{command}\n{done.stderr[-1500:]}"
        if argv[0] == "run" and "--baseline-commit" in argv:
            assert "x 2 sides (A/B)" in done.stdout and "Speedup GEODIST" in done.stderr
        if argv[0] == "compare":
            assert "REGRESSION" in done.stdout, done.stdout[-1500:]
