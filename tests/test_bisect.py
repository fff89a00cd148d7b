"""`rbs bisect --local` over a small git history of Debian's redis 7.0.15 source with one
injected slow commit (usleep in GET): it builds ~4 times in one work tree and finds it.
Built servers are kept in .cache/bisect-test by sha (the history is deterministic), so a
second run of this test only benchmarks."""

from __future__ import annotations

import json
import os
import subprocess
import tarfile
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
RBS = str(REPO / ".venv" / "bin" / "rbs")
GIT_ENV = {"GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@example.com",
           "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@example.com",
           "GIT_AUTHOR_DATE": "2024-01-01T00:00:00Z", "GIT_COMMITTER_DATE": "2024-01-01T00:00:00Z"}
SUITE = """
name: bisect-get
tested-commands: [get]
clientconfig:
  tool: redis-benchmark
  arguments: -c 10 -n 5000 -t get
exporter:
  redistimeseries:
    metrics: ['$."ALL STATS".Totals."Ops/sec"']
"""


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


@pytest.fixture(scope="module")
def history(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, list[str]]:
    out = subprocess.run([str(REPO / "scripts" / "fetch-redis-source.sh")], check=True,
                         capture_output=True, text=True, timeout=600).stdout.strip()
    root = tmp_path_factory.mktemp("bisect-src")
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
                        "void getCommand(client *c) {\n    usleep(200); /* injected */\n",
                        "slow GET"))
    shas.append(_commit(repo, "src/t_set.c", "#include \"server.h\"",
                        "#include \"server.h\"\n/* set: harmless comment */", "set comment"))
    return repo, shas


@pytest.mark.slow
@pytest.mark.timeout(3600)  # a first full build takes ~10 min on a loaded 2-core VM
def test_bisect_finds_the_injected_slow_commit(history: tuple[Path, list[str]],
                                               tmp_path: Path) -> None:
    repo, shas = history
    suites = tmp_path / "suites"
    suites.mkdir()
    (suites / "s.yml").write_text(SUITE)
    work = REPO / ".cache" / "bisect-test"
    proc = subprocess.run(
        [RBS, "bisect", "--local", "--repo", str(repo),
         "--good", shas[0], "--bad", shas[-1], "--test", "bisect-get",
         "--suites-dir", str(suites), "--work-dir", str(work), "--repetitions", "3",
         "--format", "json"],
        capture_output=True, text=True, timeout=3000, check=False)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    data = json.loads(proc.stdout)
    assert data["first_bad"] == shas[2], data
    assert data["commits"] == shas[1:]
    assert data["builds"] <= 4  # good, bad, two midpoints; 0 when cached by an earlier run
    probes = {p["sha"]: p for p in data["probes"]}
    assert probes[shas[3]]["verdict"] == "REGRESSION"
    assert probes[shas[2]]["bad"] and not probes[shas[1]]["bad"]
    assert (work / "bin").is_dir() and len(list((work / "bin").iterdir())) >= 4


def test_bisect_usage_errors(tmp_path: Path) -> None:
    proc = subprocess.run([RBS, "bisect", "--good", "a", "--bad", "b", "--test", "x"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "--local" in proc.stderr
    proc = subprocess.run([RBS, "bisect", "--local", "--repo", str(tmp_path / "nope"),
                           "--good", "a", "--bad", "b", "--test", "x"],
                          capture_output=True, text=True, timeout=60, check=False)
    assert proc.returncode == 2 and "--repo" in proc.stderr
