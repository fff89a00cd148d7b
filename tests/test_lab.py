"""`rbs lab up` / `status` / `down` and `rbs lab replay` as a user runs them.

Up/down: every service starts as its own process (pid in lab.json), the two agents each
pinned to their own CPU, the webhook answers, the GitHub stand-in refuses a wrong token, and
`down` stops exactly those pids. Replay: a real merged Redis pull request (#11552, GEODIST:
its parent and its squash commit from the vendored history) goes through the lab as a
labelled delivery: real builds of both commits (kept trees in .cache/lab-builds, so a second
run reuses them), the suite selection from the base commit's callgrind profiles picks the
GEODIST suite and not the GET one, the instruction verdict is an improvement, the movers
name code the PR changed, and the comment was posted at label time and edited after."""

from __future__ import annotations

import json
import shutil
import signal
import socket
import subprocess
import urllib.error
import urllib.request
from collections.abc import Callable
from pathlib import Path
from typing import Any

import psutil
import pytest

from benchmarks import redis_history as history
from redis_benchmarks_spec.common.process import wait_for
from tests.cli import RBS, rbs
from tests.pipeline_fixtures import commit_all, tiny_redis_repo

ROOT = Path(__file__).resolve().parents[1]
GEO, GET = "redis-benchmark-1Kkeys-geo-geodist", "redis-benchmark-1Kkeys-string-get-100B"
BASE, HEAD = "155acef51ac7826ed294a4b61d891f1c7a9a40ac", "61c85a2b2081dffaf45eb8c6b7754b8d9a80c60d"
BEFORE = "79fe450ebcdde3cfb69025eb845315189ba7ec7c"  # BASE's parent
EXPIRE = "redis-benchmark-1Kkeys-generic-expire"


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def test_lab_up_status_down_by_pid(tmp_path: Path) -> None:
    repo = tiny_redis_repo(tmp_path / "redis")
    lab = tmp_path / "lab"
    up = rbs("lab", "up", "--dir", str(lab), "--source", str(repo), "--platforms", "p1,p2",
             "--agent-args", "--noise-seconds 0")
    try:
        assert up.returncode == 0, up.stderr + up.stdout
        state = json.loads((lab / "lab.json").read_text())
        names = [s["name"] for s in state["services"]]
        assert names == ["github", "api", "builder", "agent-p1", "agent-p2", "site", "confirmer",
                         "keeper"]
        pids = [s["pid"] for s in state["services"]]
        assert all(_alive(pid) for pid in pids)
        cpus = state["platforms"]
        assert set(cpus) == {"p1", "p2"} and not set(cpus["p1"]) & set(cpus["p2"])
        for s in state["services"][3:5]:  # each agent runs with its own --cpus
            argv = psutil.Process(s["pid"]).cmdline()
            platform = s["name"].removeprefix("agent-")
            assert argv[argv.index("--cpus") + 1] == ",".join(map(str, cpus[platform]))
        with urllib.request.urlopen(state["api_url"] + "/healthz", timeout=10) as resp:
            assert resp.status == 200
        # rbs lab up prints the site's address; the site answers there (issue 43)
        assert f"site {state['site_url']}/" in up.stdout
        assert wait_for(lambda: _answers(state["site_url"] + "/"), timeout=30, interval=0.3)
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(state["github_url"] + "/repos/redis/redis/issues/1/comments",
                                   timeout=10)
        assert refused.value.code == 401
        status = rbs("lab", "status", "--dir", str(lab))
        assert status.returncode == 0 and status.stdout.count(": running") == 8
    finally:
        down = rbs("lab", "down", "--dir", str(lab))
    assert down.returncode == 0, down.stderr
    assert "agent-p1: stopped" in down.stdout and "broker: stopped" in down.stdout
    assert "confirmer: stopped" in down.stdout and "keeper: stopped" in down.stdout
    assert not any(_alive(pid) for pid in pids)
    assert not (lab / "lab.json").exists()
    again = rbs("lab", "status", "--dir", str(lab))
    assert again.returncode == 2 and "no lab was started" in again.stderr


def _sigterm_when(argv: list[str], lab: Path, ready: Callable[[dict[str, Any]], bool],
                  last_line: str) -> dict[str, Any]:
    """Start ``rbs argv``, SIGTERM it once lab.json satisfies ``ready``, and check it ended
    as interrupted (exit 130, ``last_line`` last on stderr) with every service of the
    state it was stopped at gone, the lab's broker and datasink (redis-stack-server)
    included, and no lab.json left. Whatever fails, nothing of the lab outlives the test."""
    proc = subprocess.Popen([RBS, *argv], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            text=True)
    seen: dict[str, Any] = {}
    try:
        def reached() -> bool:
            try:
                state = json.loads((lab / "lab.json").read_text())
            except (OSError, ValueError):
                return False
            seen.clear()
            seen.update(state)
            return ready(state)
        assert wait_for(reached, timeout=120, interval=0.05), proc.poll()
        proc.send_signal(signal.SIGTERM)
        out, err = proc.communicate(timeout=300)
        assert proc.returncode == 130, (out[-1500:], err[-1500:])
        assert err.strip().splitlines()[-1] == last_line, err[-1500:]
        assert not any(_alive(s["pid"]) for s in seen["services"])
        for url in (seen["broker_url"], seen["datasink_url"]):
            with pytest.raises(OSError):
                socket.create_connection(("127.0.0.1", int(url.rsplit(":", 1)[1])),
                                         timeout=5).close()
        assert not (lab / "lab.json").exists()
        return seen
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.communicate(timeout=30)
        if (lab / "lab.json").exists():
            rbs("lab", "down", "--dir", str(lab))


def test_a_sigterm_to_a_replay_stops_the_lab_it_started(tmp_path: Path) -> None:
    """A CI job's timeout sends SIGTERM: the replay ends as on Ctrl-C (exit 130, one line)
    and stops every service of the lab it started, instead of leaving its agents running
    (they went on benchmarking before: Python's default SIGTERM skips ``finally``)."""
    repo = tiny_redis_repo(tmp_path / "redis")
    base = commit_all(repo, "base")
    (repo / "src" / "tool.c").write_text((repo / "src" / "tool.c").read_text() + "\n")
    head = commit_all(repo, "head")
    prs = tmp_path / "prs.txt"
    prs.write_text(f"{base} {head} pr1\n")
    lab = tmp_path / "lab"
    seen = _sigterm_when(
        ["lab", "replay", "--dir", str(lab), "--source", str(repo), "--prs", str(prs),
         "--out", str(tmp_path / "out"), "--suites-dir", str(_suites(tmp_path / "s")),
         "--agent-args", "--noise-seconds 0"], lab,
        # every service, the keeper last (lab/services.py up): the replay is past `up`
        lambda state: any(s["name"] == "keeper" for s in state["services"]),
        "rbs lab replay: error: interrupted")
    assert len(seen["services"]) == 8


def test_a_sigterm_while_the_lab_starts_stops_what_started(tmp_path: Path) -> None:
    """SIGTERM after every service is spawned and before ``up`` has seen the API answer
    (lab.json then lists the services but no keeper yet; the API's import and bind, ~1 s
    and more, is the window): ``rbs lab up`` exits 130 and stops what it had started."""
    repo = tiny_redis_repo(tmp_path / "redis")
    lab = tmp_path / "lab"
    seen = _sigterm_when(["lab", "up", "--dir", str(lab), "--source", str(repo),
                          "--agent-args", "--noise-seconds 0"], lab,
                         lambda state: bool(state["services"]), "rbs lab up: error: interrupted")
    assert all(s["name"] != "keeper" for s in seen["services"]), "up was already done"


def _answers(url: str) -> bool:
    try:
        with urllib.request.urlopen(url, timeout=5) as resp:
            return bool(resp.status == 200)
    except OSError:
        return False


def _suites(folder: Path) -> Path:
    folder.mkdir()
    for name in (GEO, GET, "defaults"):
        shutil.copy(ROOT / "test-suites" / f"{name}.yml", folder)
    return folder


@pytest.mark.slow
def test_replay_of_a_real_pull_request(tmp_path: Path) -> None:
    source = history.bare_repo()
    prs = tmp_path / "prs.txt"
    prs.write_text(f"{BASE} {HEAD} pr11552\n")
    out = tmp_path / "out"
    # the agents only know these two suites; pull requests run what executes their change
    done = rbs("lab", "replay", "--dir", str(tmp_path / "lab"), "--source", str(source),
               "--prs", str(prs), "--out", str(out), "--suites-dir", str(_suites(tmp_path / "s")),
               # the replay's selection, verdict and comment are the point here; a base counted
               # twice at its push is test_base_once's (89 s -> 123 s of this test with two)
               "--base-runs", "1",
               "--build-cache", str(history.cache_root() / "lab-builds"), "--max-pairs", "5",
               "--agent-args", "--profilers instructions --profile-requests 1000 "
                               "--test-time 2 --noise-seconds 0", timeout=3000)
    logs = {p.name: p.read_text()[-1500:] for p in (tmp_path / "lab" / "logs").glob("*.log")}
    if out.is_dir():  # the last replay's comments and summary, to read after the test
        shutil.copytree(out, ROOT / ".cache" / "lab-last-replay", dirs_exist_ok=True)
    assert done.returncode == 0, (done.stdout, done.stderr, logs)
    (pr,) = json.loads((out / "summary.json").read_text())["prs"]
    assert pr["name"] == "pr11552" and pr["selected"] == [GEO]
    assert "geo.c" in pr["selection_reason"] and "of 2 suites" in pr["selection_reason"]
    instr = [t for t in pr["tests"] if t["metric"] == "instructions_per_op"]
    assert {t["platform"] for t in instr} == {"lab-a", "lab-b"}
    for row in instr:  # the PR made GEODIST's replies cheaper (it claims ~35 % more ops/s)
        assert row["verdict"] == "IMPROVEMENT" and row["change_pct"] < -3, row
        assert row["high_pct"] < 0 and row["pairs"] >= 2
    moved = {(m["file"] or "").rsplit("/", 1)[-1] for m in pr["movers"]}
    assert moved & {"geo.c", "util.c"}, pr["movers"]
    assert isinstance(pr["minutes"], float) and pr["minutes"] > 0
    bodies = sorted((out / "comments").glob("pr11552.*.md"))
    assert len(bodies) >= 3  # queued at label time, then one edit per platform
    assert "**Queued**" in bodies[0].read_text()
    final = (out / "comments" / "pr11552.md").read_text()
    assert final == bodies[-1].read_text()
    assert final.splitlines()[1].startswith("**Improvement**")
    assert "in geo.c that this PR changes" in final and "| Function | File |" in final


@pytest.mark.slow
def test_a_push_of_unstable_runs_what_it_changes_and_the_sentinels(tmp_path: Path) -> None:
    """Two real pushes (builds cached): the first finds no profile map of the commit
    before it and runs every suite; the second (#11552) runs the suite that executes its
    changed geo.c and the sentinel, not EXPIRE, and says why."""
    suites = _suites(tmp_path / "s")
    shutil.copy(ROOT / "test-suites" / f"{EXPIRE}.yml", suites)
    out = tmp_path / "out"
    done = rbs("lab", "replay", "--dir", str(tmp_path / "lab"), "--source",
               str(history.bare_repo()), "--range", f"{BEFORE}..{HEAD}", "--out", str(out),
               "--suites-dir", str(suites), "--sentinels", GET,
               # what a push selects is the point here, not its stored base (test_base_once)
               "--base-runs", "1",
               "--build-cache", str(history.cache_root() / "lab-builds"),
               "--agent-args", "--profilers instructions --profile-requests 1000 "
                               "--test-time 2 --noise-seconds 0", timeout=3000)
    logs = {p.name: p.read_text()[-1500:] for p in (tmp_path / "lab" / "logs").glob("*.log")}
    assert done.returncode == 0, (done.stdout, done.stderr, logs)
    first, second = json.loads((out / "summary.json").read_text())["commits"]
    assert (first["sha"], second["sha"]) == (BASE, HEAD)
    assert first["suites_run"] == 3 and set(first["selection"]) == {"lab-a", "lab-b"}
    for chosen in first["selection"].values():
        assert chosen["reason"] == f"all 3 suites run: no profile map of {BEFORE[:10]}, " \
                                   "the commit pushed before"
    assert second["suites_run"] == 2
    for chosen in second["selection"].values():
        assert chosen["suites"] == [GEO, GET]
        assert chosen["reason"].startswith("1 of 3 suites execute ")
        assert "in geo.c that this push changes" in chosen["reason"]
        assert chosen["reason"].endswith("; plus 1 sentinel suite(s)")
    assert f"{HEAD[:10]} on lab-a: suites: 1 of 3 suites execute" in done.stdout + done.stderr
