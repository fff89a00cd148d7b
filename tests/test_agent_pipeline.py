"""The whole pipeline as processes on one machine: `rbs trigger --wait` of 3 commits, one
`rbs builder`, two `rbs agent`s of platform p1 and one of p2, a real datasink.

The source tree's make "builds" by copying the installed Redis binaries (a real compile is
the e2e test's job), so the agents run real benchmarks with what the builder packaged."""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import uuid
from pathlib import Path

import redis

from redis_benchmarks_spec.datasink.embedded import EmbeddedDatasink
from redis_benchmarks_spec.events.names import StreamNames
from tests.cli import WarmProcess, rbs, rbs_daemon, write_suite
from tests.datasink_fixtures import (  # noqa: F401  (registers the fixture)
    datasink_fixture,
    series_of_test,
)
from tests.pipeline_fixtures import SUITE, commit_all, git, tiny_variant_yaml

VARIANT = "gcc:12.2.0-amd64-debian-bookworm-default"


def copying_redis_repo(root: Path) -> Path:
    """A git repository whose make puts the installed redis binaries in src/."""
    root.mkdir()
    lines = ["all:", "\tmkdir -p src"]
    for name in ("redis-server", "redis-cli", "redis-benchmark"):
        path = shutil.which(name)
        assert path, f"{name} is not installed"
        lines.append(f"\tcp {path} src/{name}")
    (root / "Makefile").write_text("\n".join(lines) + "\n")
    git(root, "init", "-q", "-b", "unstable")
    for i in range(3):
        (root / "VERSION").write_text(f"{i}\n")
        commit_all(root, f"commit {i}")
    return root


def daemon(tmp: Path, name: str, *args: str) -> subprocess.Popen[bytes] | WarmProcess:
    return rbs_daemon(list(args), tmp / f"{name}.log", os.environ)


def test_three_commits_two_platforms_each_build_run_once(redis_server, tmp_path: Path,  # type: ignore[no-untyped-def]
                                                         datasink: EmbeddedDatasink) -> None:
    prefix = f"p{uuid.uuid4().hex[:6]}"
    test = f"pipeline-set-{prefix}"
    repo = copying_redis_repo(tmp_path / "redis")
    shas = git(repo, "log", "--format=%H", "-3").split()
    variants = tmp_path / "variants"
    variants.mkdir()
    (variants / "default.yml").write_text(tiny_variant_yaml(VARIANT, ""))
    suites = tmp_path / "suites"
    write_suite(suites, "s", SUITE.format(name=test, n=2000))
    common = ["--broker", redis_server.url, "--stream-prefix", prefix, "--block-ms", "300"]
    procs = [daemon(tmp_path, "builder", "builder", *common, "--consumer", "b1",
                    "--build-variants-dir", str(variants), "--work-dir", str(tmp_path / "b"))]
    for platform, consumer in (("p1", "p1-a"), ("p1", "p1-b"), ("p2", "p2-a")):
        procs.append(daemon(tmp_path, consumer, "agent", *common, "--platform", platform,
                            "--consumer", consumer, "--suites-dir", str(suites),
                            "--datasink", datasink.url, "--work-dir", str(tmp_path / consumer),
                            "--results-dir", str(tmp_path / f"results-{consumer}")))
    try:
        trigger = rbs("trigger", "--repo", str(repo), "--branch", "unstable", "--last", "3",
                      "--org", "redis", "--repo-name", "redis", "--platforms", "p1,p2",
                      "--build-variants", VARIANT, "--wait", "--timeout", "240", *common[:4])
        logs = {p: (tmp_path / f"{p}.log").read_text()[-1500:] for p in ("builder", "p1-a")}
        assert trigger.returncode == 0, (trigger.stdout[-2000:], trigger.stderr[-2000:], logs)
        # --wait ends with the numbers and where the results are
        out = " ".join(trigger.stdout.split())
        for sha in shas:
            for platform in ("p1", "p2"):
                assert f"{sha[:12]} {VARIANT} on {platform}: 1 test(s) completed, 0 failed" \
                    in out, out[-2000:]
        assert "result documents in each agent's --results-dir under" in out
        assert any(f"--comparison-hash {sha}`" in out for sha in shas), out[-2000:]
        for proc in procs:
            proc.send_signal(signal.SIGTERM)
        assert [proc.wait(timeout=60) for proc in procs] == [0, 0, 0, 0]
    finally:
        for proc in procs:
            if proc.poll() is None:
                proc.kill()
                proc.wait(timeout=10)
    sink = datasink.client()
    for platform in ("p1", "p2"):
        for sha in shas:
            keys = series_of_test(sink, test, f"platform={platform}", f"hash={sha}")
            assert keys, (platform, sha)
            for key in keys:  # one point per series: each build ran once on each platform
                assert len(sink.execute_command("TS.RANGE", key, "-", "+")) == 1, key
        branch = sink.execute_command("TS.QUERYINDEX", f"test_name={test}",
                                      f"platform={platform}", "branch=unstable")
        assert branch and all(len(sink.execute_command("TS.RANGE", k, "-", "+")) == 3
                              for k in branch)
    broker = redis.Redis.from_url(redis_server.url)
    names = StreamNames.with_prefix(prefix)
    for group in ("platform:p1", "platform:p2"):
        assert broker.xpending(names.builds, group)["pending"] == 0
    assert broker.xlen(names.build_failures) == 0
