"""A lab's worth of history in a real datasink for the site's tests: six commits of
``unstable`` on two platforms, each run six times through the project's writer (the last
three commits 20 % slower on one platform), the watch's alert on the slow commit and a host
change, and ``rbs site`` started as its own process on a free port."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import urllib.error
import urllib.request
from pathlib import Path

import redis

from redis_benchmarks_spec.common.process import free_port, wait_for
from redis_benchmarks_spec.datasink import lab_profile, watch_store
from redis_benchmarks_spec.datasink.writer import push_results
from redis_benchmarks_spec.events.names import StreamNames
from redis_benchmarks_spec.pullrequest import state as pr_state
from redis_benchmarks_spec.pullrequest.state import PrInfo
from tests.cli import WarmProcess, rbs_daemon
from tests.datasink_fixtures import METRICS, TEST_NAME, make_result

#: a running ``rbs site``
Site = WarmProcess | subprocess.Popen[bytes]

SHAS = [f"{i:x}" * 40 for i in range(1, 7)]
PLATFORMS = ("icelake-2s", "lab-b")
REPS = 6
SLOW_FROM = 3  # commits SHAS[3:] are 20 % slower on icelake-2s
OTHER_TEST = "memtier_benchmark-1Mkeys-hash-hget"
ALERT_MS = 1_700_000_000_000 + 40 * 86_400_000  # 2023-12-24: 2023-Q4
ALERT_ISSUE = 7  # the GitHub issue that told the alert


def _value(commit: int, rep: int, platform: str, test: str) -> float:
    base = 100_000.0 if test == TEST_NAME else 50_000.0
    slow = 0.8 if platform == PLATFORMS[0] and commit >= SLOW_FROM and test == TEST_NAME else 1
    return base * slow * (1 + (rep % 3 - 1) * 0.002)


COMMENT = PrInfo(org="redis", repo="redis", number=11552, head_sha=SHAS[SLOW_FROM],
                 head_ref="feature", base_ref="unstable", base_sha=SHAS[SLOW_FROM - 1],
                 title="geo: <script>alert(1)</script> faster", html_url="javascript:alert(1)")
COMMENT_BODY = (f"{COMMENT.marker}\n### Benchmark results\n\n| test | verdict |\n| --- | --- |\n"
                f"| `{TEST_NAME}` | REGRESSION -20.0 % |\n\n<img src=x onerror=alert(1)>\n")


def fill(client: redis.Redis) -> None:
    """Push the runs and write the watch's log (module doc)."""
    docs, run = [], 0
    for commit, sha in enumerate(SHAS):
        for platform in PLATFORMS:
            for test in (TEST_NAME, OTHER_TEST):
                for rep in range(REPS):
                    doc = make_result(run, test_name=test, hash=sha, platform=platform)
                    groups = ["string"] if test == TEST_NAME else ["hash"]
                    docs.append(dataclasses.replace(
                        doc, tested_groups=groups, tested_commands=[groups[0][:3] + "get"],
                        metrics={METRICS[0]: _value(commit, rep, platform, test)}))
                    run += 1
    report = push_results(client, docs)
    assert not report.failed, report.failed
    where = watch_store.Branch("redis", "redis", "unstable")
    watch_store.add_log(client, where, "alert", SHAS[SLOW_FROM],
                        f"Ops/sec -20.0 % on icelake-2s at {SHAS[SLOW_FROM][:10]}")
    watch_store.record_alert(client, where, SHAS[SLOW_FROM], {
        "sha": SHAS[SLOW_FROM], "platforms": ["icelake-2s"], "metric": METRICS[0],
        "change_pct": -20.0, "at_ms": ALERT_MS, "issue": ALERT_ISSUE})
    watch_store.add_log(client, where, "host-changed", SHAS[1],
                        "host changed on icelake-2s (kernel 6.1 -> 6.2)")
    # the lab-wide instruction table: two profiled commits of the branch
    for sha, share in ((SHAS[SLOW_FROM - 1], 10.0), (SHAS[SLOW_FROM], 30.0)):
        lab_profile.record(client, ("redis", "redis", "unstable"), sha, TEST_NAME,
                           (100.0, [("lookupKey", "db.c", share), ("<script>", "x.c", 1.0)]),
                           ("string",))
    # the datasink's server stands for the broker too: the comment the lab posted
    pr_state.save_body(client, StreamNames(), COMMENT, COMMENT_BODY, 1_700_000_000_000)


def start_site(url: str, log: Path, *more: str) -> tuple[Site, str]:
    """``rbs site --port P --datasink URL`` as its own process, once it answers."""
    return start_site_on(["--datasink", url, *more], log)


def start_site_on(args: list[str], log: Path) -> tuple[Site, str]:
    """``rbs site --port P *args`` as its own process (forked from the tests' warm ``rbs``,
    which has paid matplotlib's first figure), once it answers."""
    port = free_port()
    log.write_bytes(b"")
    proc = rbs_daemon(["site", "--port", str(port), *args], log, os.environ)
    base = f"http://127.0.0.1:{port}"
    if not wait_for(lambda: _answers(base) or proc.poll() is not None, timeout=60,
                    interval=0.2) or proc.poll() is not None:
        proc.kill()
        raise AssertionError(f"rbs site did not start: {log.read_text()[-2000:]}")
    return proc, base


def _answers(base: str) -> bool:
    try:
        with urllib.request.urlopen(base + "/", timeout=5):
            return True
    except (OSError, urllib.error.URLError):
        return False


def get(base: str, path: str) -> tuple[int, str]:
    """(status, body) of GET ``path``."""
    try:
        with urllib.request.urlopen(base + path, timeout=60) as resp:
            return resp.status, resp.read().decode()
    except urllib.error.HTTPError as exc:
        return exc.code, exc.read().decode()


def stop(proc: Site) -> None:
    """Stop the site by its pid."""
    proc.terminate()
    try:
        proc.wait(timeout=10)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=10)
