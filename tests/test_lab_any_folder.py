"""README.md's lab commands exactly as written, with the default lab folder (the relative
``.cache/lab``), from a fresh clone's root and from another folder.

The reported failure: from the clone's root every build of ``rbs lab replay`` failed with
``git -C …/src fetch failed: fatal: '.cache/lab/mirrors/….git' does not appear to be a git
repository``: the builder handed the relative mirror folder to git inside a tree. The
tests' own labs all gave absolute ``--dir``s, so none ran the command as written.

Cheap: the "Redis" built is a two-commit git repository whose Makefile copies the installed
redis binaries (a second per build, in the real sandbox), the agents run one short
redis-benchmark suite, and the pull request's change reaches no suite (its comment says so).
``--source``, ``--prs`` and ``--out`` are relative too, as a user types them.
"""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import psutil
import pytest

from tests.cli import REPO, rbs, write_suite
from tests.pipeline_fixtures import commit_all, git

# a "Redis" whose build is the installed binaries: real builds, in the builder's sandbox
COPY_MAKEFILE = "all:\n\t$(MAKE) -C src\n"
COPY_SRC_MAKEFILE = ("all:\n\tcp {server} {cli} {bench} .\n\tchmod u+w redis-server "
                     "redis-cli redis-benchmark\n")
SUITE = """
name: ping-any-folder
tested-commands: [ping]
redis-topologies: [oss-standalone]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
clientconfig:
  tool: redis-benchmark
  arguments: -c 4 -n 2000 -t ping_mbulk
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
# cost cuts only: the lab folder stays the README's default
LAB_FLAGS = ("--platforms", "lab-a", "--max-pairs", "2",
             "--agent-args", "--noise-seconds 0 --test-time 1")


def _copying_repo(root: Path) -> tuple[str, str]:
    """A git repository of two commits (base, head) whose build copies the installed
    redis-server, redis-cli and redis-benchmark into ``src/``."""
    (root / "src").mkdir(parents=True)
    (root / "Makefile").write_text(COPY_MAKEFILE)
    binaries = {k: shutil.which(f"redis-{n}") for k, n in
                (("server", "server"), ("cli", "cli"), ("bench", "benchmark"))}
    assert all(binaries.values()), binaries
    (root / "src" / "Makefile").write_text(COPY_SRC_MAKEFILE.format(**binaries))
    (root / "src" / "notes.c").write_text("/* base */\n")
    git(root, "init", "-q", "-b", "unstable")
    base = commit_all(root, "base")
    (root / "src" / "notes.c").write_text("/* head: a comment only, no command changes */\n")
    return base, commit_all(root, "head")


def _readme_lab_lines() -> list[str]:
    """The ``rbs lab`` lines of README.md's lab example, as written."""
    text = (REPO / "README.md").read_text()
    block = text.split("**The lab on one machine**", 1)[1].split("```", 2)[1]
    return [line.split("#", 1)[0].strip() for line in block.splitlines()
            if line.startswith("rbs lab ")]


def _lab_pids(lab: Path) -> list[int]:
    return [s["pid"] for s in json.loads((lab / "lab.json").read_text())["services"]]


@pytest.fixture
def fresh_clone(tmp_path: Path) -> Path:
    """A fresh clone of this repository (its committed tree; the code under test is
    imported from the checkout through PYTHONPATH, as ``tests.cli.rbs`` runs it)."""
    clone = tmp_path / "clone"
    subprocess.run(["git", "clone", "-q", "--depth", "1", f"file://{REPO}", str(clone)],
                   check=True, capture_output=True, timeout=120)
    return clone


@pytest.mark.parametrize("where", ["clone root", "another folder"])
def test_readme_lab_commands_as_written(fresh_clone: Path, where: str) -> None:
    lines = _readme_lab_lines()
    assert lines[0] == "rbs lab up --source GIT_DIR" and lines[-1] == "rbs lab down"
    assert "rbs lab replay --prs FILE --out DIR" in lines
    cwd = fresh_clone if where == "clone root" else fresh_clone / "docs" / "elsewhere"
    cwd.mkdir(parents=True, exist_ok=True)
    base, head = _copying_repo(cwd / "redis-src")
    write_suite(cwd / "suites", "ping-any-folder", SUITE)
    (cwd / "prs.txt").write_text(f"{base} {head} pr7\n")
    lab = cwd / ".cache" / "lab"  # the default --dir, relative to where rbs runs
    up = rbs("lab", "up", "--source", "redis-src", "--suites-dir", "suites", *LAB_FLAGS,
             cwd=cwd, timeout=180)
    try:
        assert up.returncode == 0, up.stdout + up.stderr
        assert (lab / "lab.json").is_file()
        status = rbs("lab", "status", cwd=cwd)
        assert status.returncode == 0, status.stdout + status.stderr
        replay = rbs("lab", "replay", "--prs", "prs.txt", "--out", "out", cwd=cwd, timeout=600)
        logs = {p.name: p.read_text()[-2000:] for p in (lab / "logs").glob("*.log")}
        assert "does not appear to be a git repository" not in str(logs), logs
        assert replay.returncode == 0, (replay.stdout, replay.stderr, logs)
        (pr,) = json.loads((cwd / "out" / "summary.json").read_text())["prs"]
        assert (pr["base"], pr["head"]) == (base, head)
        final = (cwd / "out" / "comments" / "pr7.md").read_text()
        assert "build failed" not in final.lower(), final
        pids = _lab_pids(lab)
    finally:
        down = rbs("lab", "down", cwd=cwd, timeout=300)
    assert down.returncode == 0, down.stdout + down.stderr
    assert not (lab / "lab.json").exists()
    assert not any(psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
                   for p in pids)
