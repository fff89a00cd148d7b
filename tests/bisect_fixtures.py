"""Small git histories of Debian's redis 7.0.15 source with one injected slow commit, and
the built redis-server of each commit (kept in .cache/bisect-test by sha: the histories are
deterministic, so later runs of the tests only benchmark)."""

from __future__ import annotations

import os
import subprocess
import tarfile
from pathlib import Path

from benchmarks.redis_history import cache_root
from tests.cli import write_suite

REPO = Path(__file__).resolve().parents[1]
WORK = cache_root() / "bisect-test"
VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
SUITE = """
name: bisect-get
tested-commands: [get]
build-variants: [gcc:12.2.0-amd64-debian-bookworm-default]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 5000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""
#: a sleep: costs time, adds (almost) no instructions
SLEEP = "    usleep(200); /* injected */\n"
#: a busy loop: real instructions (~1,500 per GET), a few % of throughput at most
BUSY_LOOP = ("    for (volatile int rbs_spin = 0; rbs_spin < 300; rbs_spin++) {} "
             "/* injected busy loop */\n")


def git(repo: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(repo), *args], check=True, capture_output=True,
                          text=True, timeout=120, env={**os.environ, **GIT_ENV}).stdout.strip()


def _commit(repo: Path, path: str, old: str, new: str, message: str) -> str:
    file = repo / path
    text = file.read_text()
    assert old in text, f"{path}: {old!r} not found"
    file.write_text(text.replace(old, new, 1))
    git(repo, "commit", "-q", "-am", message)
    return git(repo, "rev-parse", "HEAD")


def make_history(root: Path, slow_line: str) -> tuple[Path, list[str]]:
    """7.0.15, a harmless commit, ``slow_line`` at the top of GET, a harmless commit."""
    out = subprocess.run([str(REPO / "scripts" / "fetch-redis-source.sh")], check=True,
                         capture_output=True, text=True, timeout=600).stdout.strip()
    with tarfile.open(Path(out.splitlines()[-1])) as tar:
        tar.extractall(root, filter="data")
    repo = next(p for p in root.iterdir() if p.is_dir())
    git(repo, "init", "-q", "-b", "unstable")
    git(repo, "add", "-A", "--force")
    git(repo, "commit", "-q", "-m", "7.0.15")
    shas = [git(repo, "rev-parse", "HEAD")]
    shas.append(_commit(repo, "src/t_list.c", "#include \"server.h\"",
                        "#include \"server.h\"\n/* list: harmless comment */", "list comment"))
    shas.append(_commit(repo, "src/t_string.c", "void getCommand(client *c) {\n",
                        "void getCommand(client *c) {\n" + slow_line, "slow GET"))
    shas.append(_commit(repo, "src/t_set.c", "#include \"server.h\"",
                        "#include \"server.h\"\n/* set: harmless comment */", "set comment"))
    return repo, shas


def bisect_suites(folder: Path) -> Path:
    """The folder ``--suites-dir`` names: bisect's one suite in it."""
    write_suite(folder, "s", SUITE)
    return folder
